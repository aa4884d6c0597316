"""TensorFlow's exception classes (tf.errors), raised for the engine's Statuses.

Each class carries the code TensorFlow gives it; `node_name` is the node the engine's
message names, where it names one.
"""

import re

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16

# How the engine's messages name a node: "[[node name (Op) on DEVICE]]", "'name' (Op)", "node 'name'",
# "tensor 'name:0'".
_NODE_IN_MESSAGE = re.compile(r"(?:\[\[node (\S+) \(|'([^']+)' \((?:op: ')?\w+'?\)|"
                              r"(?:node|tensor|placeholder) '([^']+?)(?::\d+)?')")


class OpError(Exception):
    """A failed op or step, as tf.errors.OpError."""

    def __init__(self, node_def, op, message, error_code=UNKNOWN):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = error_code
        found = _NODE_IN_MESSAGE.search(message or "")
        self.node_name = next((g for g in found.groups() if g), None) if found else None

    @property
    def message(self):
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def error_code(self):
        return self._error_code

    def __str__(self):
        return self._message


def _error_class(name, code):
    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)

    return type(name, (OpError,), {"__init__": __init__, "__doc__": f"tf.errors.{name} (code {code})."})


CancelledError = _error_class("CancelledError", CANCELLED)
UnknownError = _error_class("UnknownError", UNKNOWN)
InvalidArgumentError = _error_class("InvalidArgumentError", INVALID_ARGUMENT)
DeadlineExceededError = _error_class("DeadlineExceededError", DEADLINE_EXCEEDED)
NotFoundError = _error_class("NotFoundError", NOT_FOUND)
AlreadyExistsError = _error_class("AlreadyExistsError", ALREADY_EXISTS)
PermissionDeniedError = _error_class("PermissionDeniedError", PERMISSION_DENIED)
ResourceExhaustedError = _error_class("ResourceExhaustedError", RESOURCE_EXHAUSTED)
FailedPreconditionError = _error_class("FailedPreconditionError", FAILED_PRECONDITION)
AbortedError = _error_class("AbortedError", ABORTED)
OutOfRangeError = _error_class("OutOfRangeError", OUT_OF_RANGE)
UnimplementedError = _error_class("UnimplementedError", UNIMPLEMENTED)
InternalError = _error_class("InternalError", INTERNAL)
UnavailableError = _error_class("UnavailableError", UNAVAILABLE)
DataLossError = _error_class("DataLossError", DATA_LOSS)
UnauthenticatedError = _error_class("UnauthenticatedError", UNAUTHENTICATED)

_CLASS_BY_CODE = {
    CANCELLED: CancelledError,
    UNKNOWN: UnknownError,
    INVALID_ARGUMENT: InvalidArgumentError,
    DEADLINE_EXCEEDED: DeadlineExceededError,
    NOT_FOUND: NotFoundError,
    ALREADY_EXISTS: AlreadyExistsError,
    PERMISSION_DENIED: PermissionDeniedError,
    RESOURCE_EXHAUSTED: ResourceExhaustedError,
    FAILED_PRECONDITION: FailedPreconditionError,
    ABORTED: AbortedError,
    OUT_OF_RANGE: OutOfRangeError,
    UNIMPLEMENTED: UnimplementedError,
    INTERNAL: InternalError,
    UNAVAILABLE: UnavailableError,
    DATA_LOSS: DataLossError,
    UNAUTHENTICATED: UnauthenticatedError,
}


def exception_type_from_error_code(error_code):
    return _CLASS_BY_CODE.get(error_code, UnknownError)


def error_code_from_exception_type(cls):
    for code, c in _CLASS_BY_CODE.items():
        if c is cls:
            return code
    return UNKNOWN
