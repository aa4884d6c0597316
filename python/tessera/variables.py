"""Variables as TensorFlow 1.x makes them (tf.compat.v1.Variable, reference variables): a
VariableV2 node, an Assign of the initial value ("name/Assign", the initializer) and an
Identity that reads it ("name/read", what the variable is as a tensor).
"""

from tessera import gen_ops
from tessera.framework import (TensorShape, convert_to_tensor, get_default_graph,
                               register_tensor_conversion_function)


class GraphKeys:
    GLOBAL_VARIABLES = "variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    LOCAL_VARIABLES = "local_variables"
    MODEL_VARIABLES = "model_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    GLOBAL_STEP = "global_step"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TRAIN_OP = "train_op"
    INIT_OP = "init_op"
    SAVERS = "savers"


class Variable:
    """tf.compat.v1.Variable: a mutable tensor that keeps its value across steps."""

    def __init__(self, initial_value=None, trainable=True, collections=None, validate_shape=True, name=None,
                 dtype=None, expected_shape=None, shape=None, use_resource=None, **unsupported):
        if unsupported:
            raise NotImplementedError(f"tf.compat.v1.Variable({', '.join(unsupported)}) is not supported by Tessera")
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if use_resource:
            raise NotImplementedError("tf.compat.v1.Variable(use_resource=True) is not supported by Tessera yet")
        graph = get_default_graph()
        # As TensorFlow's init_scope: a variable made under control_dependencies (batch
        # norm's moving averages under the UPDATE_OPS dependency) does not wait on them.
        with graph.control_dependencies(None), graph.name_scope(name or "Variable") as scope:
            if callable(initial_value):
                initial_value = initial_value()
            value = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
            var_shape = TensorShape(shape) if shape is not None else value.shape
            if validate_shape and not var_shape.is_fully_defined():
                raise ValueError(f"initial_value must have a shape specified: {value!r}")
            self._variable = graph.create_op(
                "VariableV2", [], {"shape": var_shape, "dtype": value.dtype}, name=scope).outputs[0]
            self._initializer_op = gen_ops.assign(self._variable, value, validate_shape=validate_shape,
                                                  name="Assign").op
            with graph.colocate_with(self._variable.op):
                self._snapshot = gen_ops.identity(self._variable, name="read")
        self._initial_value = value
        self._trainable = trainable
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections = list(collections) + [GraphKeys.TRAINABLE_VARIABLES]
        graph.add_to_collections(collections, self)

    @classmethod
    def _from_nodes(cls, graph, variable_name, initializer_name, snapshot_name, initial_value_name, trainable,
                    prefix=""):
        """The variable of nodes already in `graph` (an imported meta graph's), named as a
        VariableDef names them, under `prefix`."""
        v = cls.__new__(cls)
        v._variable = graph.get_tensor_by_name(prefix + variable_name)
        v._initializer_op = graph.get_operation_by_name(prefix + initializer_name)
        v._snapshot = graph.get_tensor_by_name(prefix + snapshot_name)
        v._initial_value = graph.get_tensor_by_name(prefix + initial_value_name) if initial_value_name else None
        v._trainable = trainable
        return v

    def _node_names(self):
        """The variable as a VariableDef names it (a meta graph's collections): variable,
        initializer, snapshot, initial value, trainable."""
        return (self._variable.name, self._initializer_op.name, self._snapshot.name,
                self._initial_value.name if self._initial_value is not None else "", self._trainable)

    # What the variable is where a tensor is wanted: its read value; where a reference is
    # (an Assign's first input, a feed, a fetch), the VariableV2's output. Under
    # control_dependencies the value is read there, after them (TensorFlow's read of a
    # reference variable sees an update it waited on, its buffer being the variable's).
    def _as_input_tensor(self):
        if self._variable.graph._has_control_dependencies():
            return gen_ops.identity(self._variable, name="read")
        return self._snapshot

    def _ref(self):
        return self._variable

    def _as_fetch(self):
        return self._snapshot

    def _as_feed(self):
        return self._variable

    def _as_graph_element(self):
        return self._snapshot

    name = property(lambda self: self._variable.name)
    op = property(lambda self: self._variable.op)
    graph = property(lambda self: self._variable.graph)
    dtype = property(lambda self: self._variable.dtype)
    shape = property(lambda self: self._variable.shape)
    device = property(lambda self: self._variable.device)
    initializer = property(lambda self: self._initializer_op)
    initial_value = property(lambda self: self._initial_value)
    trainable = property(lambda self: self._trainable)

    def get_shape(self):
        return self.shape

    def value(self):
        return self._snapshot

    def read_value(self):
        return gen_ops.identity(self._variable, name="read")

    def initialized_value(self):
        """The value once initialized: the variable's where it is, its initial value where not
        (a variable initialized from another's, in whatever order initializers run)."""
        from tessera.control_flow import cond
        with get_default_graph().control_dependencies(None):
            return cond(is_variable_initialized(self), self.read_value, lambda: self._initial_value)

    def eval(self, session=None):
        return self._snapshot.eval(session=session)

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return gen_ops.assign(self._variable, value, use_locking=use_locking, name=name or "Assign")

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return gen_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name or "AssignAdd")

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return gen_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name or "AssignSub")

    def load(self, value, session=None):
        from tessera.session import default_session_for
        default_session_for(self.graph, session).run(self._initializer_op, {self._initializer_op.inputs[1]: value})

    def __repr__(self):
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"


register_tensor_conversion_function(Variable, lambda v, dtype, name: convert_to_tensor(v._as_input_tensor(), dtype))


def _op_on_value(op_name):
    def method(self, *args):
        return getattr(self._as_input_tensor(), op_name)(*args)
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
              "__neg__", "__matmul__", "__rmatmul__", "__getitem__", "__lt__", "__le__", "__gt__", "__ge__",
              "__pow__", "__abs__"):
    setattr(Variable, _name, _op_on_value(_name))


def global_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def local_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def trainable_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    with get_default_graph().control_dependencies([v.initializer for v in var_list]):
        return gen_ops.no_op(name=name)


def global_variables_initializer():
    return variables_initializer(global_variables(), name="init")


def local_variables_initializer():
    return variables_initializer(local_variables(), name="init")


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    ref = getattr(ref, "_ref", lambda: ref)()
    return gen_ops.assign(ref, value, validate_shape=validate_shape, use_locking=use_locking, name=name or "Assign")


def assign_add(ref, value, use_locking=None, name=None):
    ref = getattr(ref, "_ref", lambda: ref)()
    return gen_ops.assign_add(ref, value, use_locking=use_locking, name=name or "AssignAdd")


def assign_sub(ref, value, use_locking=None, name=None):
    ref = getattr(ref, "_ref", lambda: ref)()
    return gen_ops.assign_sub(ref, value, use_locking=use_locking, name=name or "AssignSub")


def is_variable_initialized(variable):
    return gen_ops.is_variable_initialized(variable._ref(), dtype=variable.dtype)

