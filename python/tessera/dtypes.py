"""Data types, as tf.dtypes: DType objects named as TensorFlow names them."""

import builtins

import numpy as np


class DType:
    """One element type: `name` is TensorFlow's ("float32"), `as_numpy_dtype` NumPy's."""

    __slots__ = ("_name", "_numpy", "_enum")

    def __new__(cls, name, numpy_type=None, enum=None):
        if numpy_type is None:  # tf.DType(1): TensorFlow's DataType number
            return as_dtype(name)
        return super().__new__(cls)

    def __init__(self, name, numpy_type=None, enum=None):
        if numpy_type is None:
            return  # made by __new__ already
        self._name = name
        self._numpy = numpy_type
        self._enum = enum  # TensorFlow's DataType (types.proto)

    @property
    def name(self):
        return self._name

    @property
    def as_numpy_dtype(self):
        return self._numpy

    @property
    def as_datatype_enum(self):
        return self._enum

    @property
    def base_dtype(self):
        return self

    @property
    def is_floating(self):
        return self._name in ("float16", "bfloat16", "float32", "float64")

    @property
    def is_integer(self):
        return self._name in ("int32", "int64", "uint8")

    @property
    def is_bool(self):
        return self._name == "bool"

    @property
    def min(self):
        return self._limits().min

    @property
    def max(self):
        return self._limits().max

    def _limits(self):
        if self._name in ("bool", "string"):
            raise TypeError(f"Cannot find minimum/maximum value for {self._name}.")
        if self._name == "bfloat16":
            return np.finfo(np.float32)  # bfloat16 keeps float32's exponent range
        return np.iinfo(self._numpy) if self.is_integer else np.finfo(self._numpy)

    @property
    def size(self):
        return np.dtype(self._numpy).itemsize if self._numpy is not object else 0

    def __eq__(self, other):
        try:
            return self._name == as_dtype(other)._name
        except TypeError:
            return False

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return f"tf.{self._name}"

    def __str__(self):
        return f"<dtype: '{self._name}'>"

    def __reduce__(self):
        return as_dtype, (self._name,)


float16 = half = DType("float16", np.float16, 19)
bfloat16 = DType("bfloat16", np.float32, 14)  # NumPy has none: values cross as float32
float32 = DType("float32", np.float32, 1)
float64 = double = DType("float64", np.float64, 2)
int32 = DType("int32", np.int32, 3)
int64 = DType("int64", np.int64, 9)
uint8 = DType("uint8", np.uint8, 4)
bool = DType("bool", np.bool_, 10)  # noqa: A001 (TensorFlow's name)
string = DType("string", object, 7)
variant = DType("variant", object, 21)
resource = DType("resource", object, 20)

_BY_NAME = {d.name: d for d in (float16, bfloat16, float32, float64, int32, int64, uint8, bool, string, variant,
                               resource)}
_BY_NAME.update({"float": float32, "double": float64, "half": float16})
_BY_ENUM = {d.as_datatype_enum: d for d in _BY_NAME.values()}
_BY_NUMPY = {np.dtype(np.float16): float16, np.dtype(np.float32): float32, np.dtype(np.float64): float64,
             np.dtype(np.int32): int32, np.dtype(np.int64): int64, np.dtype(np.uint8): uint8,
             np.dtype(np.bool_): bool, np.dtype(object): string}


def as_dtype(value):
    """A DType from a DType, a name ("float32"), TensorFlow's DataType number, a NumPy dtype
    or type, or a Python type."""
    if isinstance(value, DType):
        return value
    if isinstance(value, builtins.int) and not isinstance(value, builtins.bool):
        if value in _BY_ENUM:
            return _BY_ENUM[value]
        raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType.")
    if isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
        raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType.")
    if value is builtins.bool:
        return bool
    if value is float:
        return float32
    if value is int:
        return int32
    if value in (str, bytes):
        return string
    try:
        numpy_dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType.") from None
    if numpy_dtype.kind in "SU":
        return string
    if numpy_dtype in _BY_NUMPY:
        return _BY_NUMPY[numpy_dtype]
    raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType: Tessera has no {numpy_dtype} tensors.")
