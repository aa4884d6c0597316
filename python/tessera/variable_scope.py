"""tf.compat.v1.variable_scope and get_variable: variables found or made by their full names
("dense/kernel") in the graph's store, with TensorFlow 1.x's reuse rules; and the
initializers they take."""

import contextlib
import math

import numpy as np

from tessera import array_ops, dtypes, random_ops
from tessera.framework import TensorShape, get_default_graph
from tessera.variables import GraphKeys, Variable

AUTO_REUSE = "AUTO_REUSE"


# Initializers: called with (shape, dtype) inside the variable's name scope.
class Initializer:
    def __call__(self, shape, dtype=dtypes.float32, partition_info=None):
        raise NotImplementedError


class zeros_initializer(Initializer):  # noqa: N801 (TensorFlow's names)
    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.zeros(shape, dtype or self.dtype)


class ones_initializer(Initializer):  # noqa: N801
    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.ones(shape, dtype or self.dtype)


class constant_initializer(Initializer):  # noqa: N801
    def __init__(self, value=0, dtype=dtypes.float32, verify_shape=False):
        self.value, self.dtype = value, dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = dtype or self.dtype
        value = np.asarray(self.value, dtype=dtype.as_numpy_dtype)
        from tessera.framework import constant
        return constant(np.broadcast_to(value, shape) if value.size == 1 else value.reshape(shape), dtype)


class random_uniform_initializer(Initializer):  # noqa: N801
    def __init__(self, minval=-0.05, maxval=0.05, seed=None, dtype=dtypes.float32):
        self.minval, self.maxval, self.seed, self.dtype = minval, maxval, seed, dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_uniform(list(shape), self.minval, self.maxval, dtype or self.dtype, self.seed)


class random_normal_initializer(Initializer):  # noqa: N801
    _draw = staticmethod(random_ops.random_normal)

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean, self.stddev, self.seed, self.dtype = mean, stddev, seed, dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return self._draw(list(shape), self.mean, self.stddev, dtype or self.dtype, self.seed)


class truncated_normal_initializer(random_normal_initializer):  # noqa: N801
    _draw = staticmethod(random_ops.truncated_normal)


class glorot_uniform_initializer(Initializer):  # noqa: N801
    """Uniform in +-sqrt(6 / (fan_in + fan_out)): tf.layers' default for kernels."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        self.seed, self.dtype = seed, dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        shape = list(shape)
        receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
        fan_in = shape[-2] * receptive if len(shape) > 1 else shape[0]
        fan_out = shape[-1] * receptive if len(shape) > 1 else shape[0]
        limit = math.sqrt(6.0 / max(1.0, fan_in + fan_out))
        return random_uniform_initializer(-limit, limit, self.seed, dtype or self.dtype)(shape)


class _VariableScope:
    def __init__(self, name, reuse, initializer):
        self.name, self.reuse, self.initializer = name, reuse, initializer

    @property
    def original_name_scope(self):
        return self.name + "/" if self.name else ""

    def reuse_variables(self):
        """From here on, get_variable in this scope (and scopes opened in it) finds only."""
        self.reuse = True

    def set_initializer(self, initializer):
        self.initializer = initializer


def _store(graph):
    if not hasattr(graph, "_variable_store"):
        graph._variable_store = {}
        graph._variable_scope_stack = [_VariableScope("", False, None)]
    return graph._variable_store


def get_variable_scope():
    graph = get_default_graph()
    _store(graph)
    return graph._variable_scope_stack[-1]


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None, reuse=None, dtype=None,
                   auxiliary_name_scope=True, **unsupported):
    """Variables made or found under it are named "<scope>/<name>"; ops go under a name
    scope of the same name. reuse=True finds only, AUTO_REUSE finds or makes, and reuse is
    inherited by inner scopes."""
    if unsupported:
        raise NotImplementedError(f"tf.compat.v1.variable_scope({', '.join(unsupported)}) is not supported by "
                                  "Tessera yet")
    graph = get_default_graph()
    _store(graph)
    outer = graph._variable_scope_stack[-1]
    if isinstance(name_or_scope, _VariableScope):
        full = name_or_scope.name
        name_scope_name = full + "/" if full else ""
    else:
        name = name_or_scope
        if name is None:
            if default_name is None:
                raise TypeError("If default_name is None then name_or_scope is required")
            # A fresh scope of default_name: "dense", "dense_1", ... as its name scope is.
            name = graph.unique_name(default_name, mark_as_used=False).rsplit("/", 1)[-1]
        full = outer.name + "/" + name if outer.name else name
        name_scope_name = name
    inherited = True if outer.reuse is True else outer.reuse
    scope = _VariableScope(full, reuse if reuse is not None else inherited, initializer or outer.initializer)
    graph._variable_scope_stack.append(scope)
    try:
        if auxiliary_name_scope:
            with graph.name_scope(name_scope_name):
                yield scope
        else:
            yield scope
    finally:
        graph._variable_scope_stack.pop()


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=None,
                 collections=None, caching_device=None, partitioner=None, validate_shape=True, use_resource=None,
                 **unsupported):
    if unsupported or partitioner is not None:
        raise NotImplementedError(f"tf.compat.v1.get_variable({', '.join(unsupported) or 'partitioner'}) is not "
                                  "supported by Tessera yet")
    graph = get_default_graph()
    store = _store(graph)
    scope = graph._variable_scope_stack[-1]
    full = scope.name + "/" + name if scope.name else name
    if full in store:
        if scope.reuse is False or scope.reuse is None:
            raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set reuse=True or "
                             "reuse=tf.AUTO_REUSE in VarScope?")
        found = store[full]
        if shape is not None and not found.shape.is_compatible_with(shape):
            raise ValueError(f"Trying to share variable {full}, but specified shape {TensorShape(shape)} and found "
                             f"shape {found.shape}.")
        return found
    if scope.reuse is True:
        raise ValueError(f"Variable {full} does not exist, or was not created with tf.get_variable(). Did you mean "
                         "to set reuse=tf.AUTO_REUSE in VarScope?")
    if initializer is None:
        initializer = scope.initializer
    if initializer is None:
        dtype = dtypes.as_dtype(dtype or dtypes.float32)
        initializer = glorot_uniform_initializer() if dtype.is_floating else zeros_initializer()
    with graph.name_scope(None), graph.name_scope(full + "/Initializer/"):
        if callable(initializer):
            dtype = dtypes.as_dtype(dtype or dtypes.float32)
            value = initializer(shape, dtype=dtype)
        else:  # an initial value itself, as TensorFlow takes it where no shape is given
            value = initializer
    collections = collections or [GraphKeys.GLOBAL_VARIABLES]
    with graph.name_scope(None):
        graph.unique_name(full)  # the name is the variable's from now on
        variable = Variable(value, trainable=trainable if trainable is not None else True, collections=collections,
                            validate_shape=validate_shape, name=full + "/", dtype=dtype)
    store[full] = variable
    if regularizer is not None:
        loss = regularizer(variable)
        if loss is not None:
            graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return variable
