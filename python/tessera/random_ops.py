"""Random tensors and the graph-level seed, as tf.compat.v1's: ops of one graph seeded by
set_random_seed draw the same values in every session, as in TensorFlow (not TensorFlow's
values: the generators differ)."""

from tessera import array_ops, dtypes, gen_ops
from tessera.framework import Tensor, get_default_graph, name_scope


def set_random_seed(seed):
    get_default_graph().seed = seed


def _seeds(seed):
    graph_seed = get_default_graph().seed
    if seed is None and graph_seed is None:
        return 0, 0
    # As TensorFlow: an op seed without a graph seed, or the reverse, still fixes the values.
    return (graph_seed if graph_seed is not None else 87654321), (seed if seed is not None else
                                                                   len(get_default_graph().get_operations()))


def _shape(shape):
    return shape if isinstance(shape, Tensor) else array_ops.convert_to_tensor(shape, dtypes.int32)


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    dtype = dtypes.as_dtype(dtype)
    seed, seed2 = _seeds(seed)
    if dtype.is_integer:
        # Integers in [minval, maxval): a float64 draw scaled to the range's width and
        # truncated (Tessera has no RandomUniformInt; the values differ from TensorFlow's,
        # the distribution not).
        if maxval is None:
            raise ValueError(f"Must specify maxval for integer dtype {dtype.name}")
        with name_scope(name, "random_uniform"):
            u = gen_ops.random_uniform(_shape(shape), dtype=dtypes.float64, seed=seed, seed2=seed2)
            low = array_ops.cast(minval, dtype)
            width = array_ops.cast(array_ops.cast(maxval, dtype) - low, dtypes.float64)
            return array_ops.cast(u * width, dtype) + low
    u = gen_ops.random_uniform(_shape(shape), dtype=dtype, seed=seed, seed2=seed2, name=name or "random_uniform")
    return u * ((1 if maxval is None else maxval) - minval) + minval


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    dtype = dtypes.as_dtype(dtype)
    seed, seed2 = _seeds(seed)
    n = gen_ops.random_standard_normal(_shape(shape), dtype=dtype, seed=seed, seed2=seed2, name=name or "random_normal")
    return n * stddev + mean


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    dtype = dtypes.as_dtype(dtype)
    seed, seed2 = _seeds(seed)
    n = gen_ops.truncated_normal(_shape(shape), dtype=dtype, seed=seed, seed2=seed2, name=name or "truncated_normal")
    return n * stddev + mean
