"""The functions TensorFlow 1.x scripts call by their Python names (tf.add, tf.reduce_sum,
tf.reshape, tf.nn.relu, ...), with TensorFlow's argument names, over the generated op
functions (gen_ops); and Tensor's operators (+, *, @, [], <, ...)."""

import builtins

import numpy as np

from tessera import dtypes, gen_ops
from tessera.framework import (Operation, Tensor, TensorShape, constant, contains_tensor, control_dependencies,
                               convert_to_tensor, name_scope)


def _binary(x, y):
    """x and y as Tensors of one dtype: a Python value takes the other's dtype."""
    if isinstance(x, Tensor) or hasattr(x, "_as_input_tensor"):
        x = convert_to_tensor(x)
        return x, convert_to_tensor(y, x.dtype if not isinstance(y, Tensor) else None)
    y = convert_to_tensor(y)
    return convert_to_tensor(x, y.dtype), y


# Math --------------------------------------------------------------------------------------
def add(x, y, name=None):
    x, y = _binary(x, y)
    return gen_ops.add_v2(x, y, name=name or "Add")


def subtract(x, y, name=None):
    x, y = _binary(x, y)
    return gen_ops.sub(x, y, name=name or "Sub")


def multiply(x, y, name=None):
    x, y = _binary(x, y)
    return gen_ops.mul(x, y, name=name or "Mul")


def divide(x, y, name=None):
    x, y = _binary(x, y)
    if x.dtype.is_integer:
        x, y = cast(x, dtypes.float64), cast(y, dtypes.float64)
    return gen_ops.real_div(x, y, name=name or "truediv")


def div(x, y, name=None):
    """tf.compat.v1.div: Python 2's x / y, floored for integers and true for floats."""
    x, y = _binary(x, y)
    if x.dtype.is_integer:
        return gen_ops.floor_div(x, y, name=name or "div")
    return gen_ops.real_div(x, y, name=name or "div")


def floordiv(x, y, name=None):
    x, y = _binary(x, y)
    return gen_ops.floor_div(x, y, name=name or "floordiv")


def floormod(x, y, name=None):
    x, y = _binary(x, y)
    return gen_ops.floor_mod(x, y, name=name or "floormod")


def pow(x, y, name=None):  # noqa: A001 (TensorFlow's name)
    x, y = _binary(x, y)
    return gen_ops.pow(x, y, name=name or "pow")


def maximum(x, y, name=None):
    x, y = _binary(x, y)
    return gen_ops.maximum(x, y, name=name or "Maximum")


def minimum(x, y, name=None):
    x, y = _binary(x, y)
    return gen_ops.minimum(x, y, name=name or "Minimum")


def squared_difference(x, y, name=None):
    x, y = _binary(x, y)
    return gen_ops.squared_difference(x, y, name=name or "SquaredDifference")


def _comparison(op):
    def compare(x, y, name=None):
        x, y = _binary(x, y)
        return op(x, y, name=name or op.__name__.title().replace("_", ""))
    return compare


equal = _comparison(gen_ops.equal)
not_equal = _comparison(gen_ops.not_equal)
less = _comparison(gen_ops.less)
less_equal = _comparison(gen_ops.less_equal)
greater = _comparison(gen_ops.greater)
greater_equal = _comparison(gen_ops.greater_equal)


def logical_and(x, y, name=None):
    return gen_ops.logical_and(x, y, name=name or "LogicalAnd")


def logical_or(x, y, name=None):
    return gen_ops.logical_or(x, y, name=name or "LogicalOr")


def logical_not(x, name=None):
    return gen_ops.logical_not(x, name=name or "LogicalNot")


def _unary(op, default_name):
    def apply(x, name=None):
        return op(x, name=name or default_name)
    apply.__name__ = default_name.lower()
    return apply


negative = _unary(gen_ops.neg, "Neg")
square = _unary(gen_ops.square, "Square")
sqrt = _unary(gen_ops.sqrt, "Sqrt")
rsqrt = _unary(gen_ops.rsqrt, "Rsqrt")
exp = _unary(gen_ops.exp, "Exp")
log = _unary(gen_ops.log, "Log")
sin = _unary(gen_ops.sin, "Sin")
cos = _unary(gen_ops.cos, "Cos")
tanh = _unary(gen_ops.tanh, "Tanh")
sigmoid = _unary(gen_ops.sigmoid, "Sigmoid")
erf = _unary(gen_ops.erf, "Erf")
identity = _unary(gen_ops.identity, "Identity")
stop_gradient = _unary(gen_ops.stop_gradient, "StopGradient")


def abs(x, name=None):  # noqa: A001
    x = convert_to_tensor(x)
    return maximum(x, negative(x), name=name or "Abs")


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
           b_is_sparse=False, name=None):
    a, b = _binary(a, b)
    transpose_a, transpose_b = transpose_a or adjoint_a, transpose_b or adjoint_b
    if (a.shape.ndims or 2) > 2 or (b.shape.ndims or 2) > 2:
        return gen_ops.batch_mat_mul_v2(a, b, adj_x=transpose_a, adj_y=transpose_b, name=name or "MatMul")
    return gen_ops.mat_mul(a, b, transpose_a=transpose_a, transpose_b=transpose_b, name=name or "MatMul")


def add_n(inputs, name=None):
    return gen_ops.add_n([convert_to_tensor(i) for i in inputs], name=name or "AddN")


def cast(x, dtype, name=None):
    x = convert_to_tensor(x)
    dtype = dtypes.as_dtype(dtype)
    if x.dtype == dtype:
        return x
    return gen_ops.cast(x, DstT=dtype, name=name or "Cast")


def to_float(x, name="ToFloat"):
    return cast(x, dtypes.float32, name=name)


def _reduction(op, default_name):
    def reduce(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
        x = convert_to_tensor(input_tensor)
        axis = axis if axis is not None else reduction_indices
        keep = bool(keepdims if keepdims is not None else keep_dims)
        if axis is None:
            axis = list(builtins.range(x.shape.ndims)) if x.shape.ndims is not None else \
                gen_ops.range(0, size(shape(x)), 1)
        if not isinstance(axis, Tensor):
            axis = convert_to_tensor(axis, dtypes.int32, name="Const")
        return op(x, axis, keep_dims=keep, name=name or default_name)
    reduce.__name__ = default_name
    return reduce


reduce_sum = _reduction(gen_ops.sum, "Sum")
reduce_mean = _reduction(gen_ops.mean, "Mean")
reduce_max = _reduction(gen_ops.max, "Max")
reduce_min = _reduction(gen_ops.min, "Min")
reduce_prod = _reduction(gen_ops.prod, "Prod")


def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    axis = axis if axis is not None else (dimension if dimension is not None else 0)
    return gen_ops.arg_max(input, convert_to_tensor(axis, dtypes.int32), output_type=output_type,
                           name=name or "ArgMax")


arg_max = argmax


def argmin(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    """The index of the first smallest value: ArgMax of the negation (Tessera has no ArgMin)."""
    with name_scope(name, "ArgMin"):
        return argmax(negative(input), axis=axis, dimension=dimension, output_type=output_type)


arg_min = argmin


# Arrays ------------------------------------------------------------------------------------
def shape(input, name=None, out_type=dtypes.int32):  # noqa: A002
    return gen_ops.shape(input, out_type=out_type, name=name or "Shape")


def size(input, name=None, out_type=dtypes.int32):  # noqa: A002
    return gen_ops.size(input, out_type=out_type, name=name or "Size")


def reshape(tensor, shape, name=None):  # noqa: F811 (TensorFlow's argument name)
    # A shape tensor may be int32 or int64, as Reshape's Tshape allows; Python values are int32.
    shape = shape if isinstance(shape, Tensor) else convert_to_tensor(shape, dtypes.int32)
    return gen_ops.reshape(tensor, shape, name=name or "Reshape")


def transpose(a, perm=None, name="transpose"):
    a = convert_to_tensor(a)
    if perm is None:
        perm = list(builtins.range(a.shape.ndims))[::-1]
    return gen_ops.transpose(a, convert_to_tensor(perm, dtypes.int32), name=name)


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    axis = axis if axis is not None else dim
    return gen_ops.expand_dims(input, convert_to_tensor(axis, dtypes.int32), name=name or "ExpandDims")


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    axis = axis if axis is not None else squeeze_dims
    axis = [] if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    return gen_ops.squeeze(input, squeeze_dims=axis, name=name or "Squeeze")


def _same_dtype(values):
    """`values` as Tensors, Python values taking the dtype of the first Tensor among them (as
    TensorFlow converts a list it packs)."""
    dtype = next((v.dtype for v in values if isinstance(v, Tensor)), None)
    return [convert_to_tensor(v, None if isinstance(v, Tensor) else dtype) for v in values]


def concat(values, axis, name="concat"):
    values = _same_dtype(values)
    if len(values) == 1:
        return identity(values[0], name=name)
    return gen_ops.concat_v2(values, convert_to_tensor(axis, dtypes.int32), name=name)


def stack(values, axis=0, name="stack"):
    values = _same_dtype(values)
    return gen_ops.pack(values, axis=axis, name=name)


def unstack(value, num=None, axis=0, name="unstack"):
    value = convert_to_tensor(value)
    if num is None:
        num = value.shape[axis]
        if num is None:
            raise ValueError(f"Cannot infer num from shape {value.shape}")
    out = gen_ops.unpack(value, num=num, axis=axis, name=name)
    return out if isinstance(out, list) else [out]


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    value = convert_to_tensor(value)
    if isinstance(num_or_size_splits, int):
        out = gen_ops.split(convert_to_tensor(axis, dtypes.int32), value, num_split=num_or_size_splits, name=name)
    else:
        sizes = list(num_or_size_splits)
        out = gen_ops.split_v(value, convert_to_tensor(sizes, dtypes.int32), convert_to_tensor(axis, dtypes.int32),
                              num_split=len(sizes), name=name)
    return out if isinstance(out, list) else [out]


def tile(input, multiples, name=None):  # noqa: A002
    return gen_ops.tile(input, convert_to_tensor(multiples, dtypes.int32), name=name or "Tile")


def fill(dims, value, name=None):
    return gen_ops.fill(convert_to_tensor(dims, dtypes.int32), value, name=name or "Fill")


def zeros(shape, dtype=dtypes.float32, name=None):
    dtype = dtypes.as_dtype(dtype)
    if contains_tensor(shape):
        return fill(shape, convert_to_tensor(0, dtype), name=name or "zeros")
    return _constant_filled(shape, 0, dtype, name or "zeros")


def ones(shape, dtype=dtypes.float32, name=None):
    dtype = dtypes.as_dtype(dtype)
    if contains_tensor(shape):
        return fill(shape, convert_to_tensor(1, dtype), name=name or "ones")
    return _constant_filled(shape, 1, dtype, name or "ones")


def _constant_filled(shape, value, dtype, name):
    return constant(np.full(list(shape), value, dtype=dtype.as_numpy_dtype), dtype=dtype, name=name)


def zeros_like(tensor, dtype=None, name=None):
    out = gen_ops.zeros_like(convert_to_tensor(tensor), name=name or "zeros_like")
    return cast(out, dtype) if dtype is not None else out


def ones_like(tensor, dtype=None, name=None):
    tensor = convert_to_tensor(tensor)
    out = gen_ops.ones_like(tensor, name=name or "ones_like")
    return cast(out, dtype) if dtype is not None else out


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    if limit is None:
        start, limit = 0, start
    if dtype is None:  # the widest of the arguments', as TensorFlow infers it
        order = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]
        found = [v.dtype if isinstance(v, Tensor) else dtypes.float32 if isinstance(v, float) else dtypes.int32
                 for v in (start, limit, delta)]
        dtype = max(found, key=lambda d: order.index(d) if d in order else 0)
    dtype = dtypes.as_dtype(dtype)
    return gen_ops.range(convert_to_tensor(start, dtype), convert_to_tensor(limit, dtype),
                         convert_to_tensor(delta, dtype), name=name)


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                  shrink_axis_mask=0, var=None, name=None):
    begin = convert_to_tensor(begin)
    strides = ones_like(begin) if strides is None else strides
    return gen_ops.strided_slice(input_, begin, end, strides, begin_mask=begin_mask, end_mask=end_mask,
                                 ellipsis_mask=ellipsis_mask, new_axis_mask=new_axis_mask,
                                 shrink_axis_mask=shrink_axis_mask, name=name or "StridedSlice")


def gather(params, indices, validate_indices=None, name=None, axis=0):
    indices = convert_to_tensor(indices)
    return gen_ops.gather_v2(params, indices, convert_to_tensor(axis, dtypes.int32), name=name or "GatherV2")


def where(condition, x=None, y=None, name=None):
    if x is None and y is None:
        raise NotImplementedError("tf.where(condition) with one argument (the indices of true elements) is not "
                                  "supported by Tessera yet")
    x, y = _binary(x, y)
    return gen_ops.select_v2(condition, x, y, name=name or "Select")


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """As tf.one_hot: built from an equality with a range, as Tessera has no OneHot op. The
    new axis of `depth` goes at `axis` (-1: last)."""
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.float32
    with name_scope(name, "one_hot"):
        indices = convert_to_tensor(indices)
        rank = indices.shape.ndims
        axis = -1 if axis is None else axis
        if axis != -1 and rank is None:
            raise NotImplementedError("tf.one_hot(axis=...) of indices of unknown rank is not supported by Tessera")
        if axis != -1 and not 0 <= axis <= rank:
            raise ValueError(f"Expected axis to be -1 or between [0, {rank + 1}).  But received: {axis}")
        at = rank if axis == -1 and rank is not None else axis
        classes = range(0, depth, dtype=indices.dtype)
        if at != -1 and at != rank:  # the classes run along `at`, broadcast over the axes after it
            classes = reshape(classes, [-1] + [1] * (rank - at))
        hot = equal(expand_dims(indices, at), classes)
        on = convert_to_tensor(1 if on_value is None else on_value, dtype)
        off = convert_to_tensor(0 if off_value is None else off_value, dtype)
        out = gen_ops.select_v2(hot, on, off)
        if isinstance(depth, int) and indices.shape.dims is not None:
            dims = list(indices.shape.dims)
            dims.insert(at, depth)
            out.set_shape(dims)
        return out


def _slice_spec(tensor, key):
    """StridedSlice's begin, end, strides and masks for a Python index, as Tensor.__getitem__."""
    if not isinstance(key, tuple):
        key = (key,)
    begin, end, strides = [], [], []
    begin_mask = end_mask = ellipsis_mask = new_axis_mask = shrink_mask = 0
    for i, k in enumerate(key):
        if isinstance(k, builtins.slice):
            begin.append(k.start if k.start is not None else 0)
            end.append(k.stop if k.stop is not None else 0)
            strides.append(k.step if k.step is not None else 1)
            if k.start is None:
                begin_mask |= 1 << i
            if k.stop is None:
                end_mask |= 1 << i
        elif k is Ellipsis:
            begin.append(0), end.append(0), strides.append(1)
            ellipsis_mask |= 1 << i
        elif k is None:
            begin.append(0), end.append(0), strides.append(1)
            new_axis_mask |= 1 << i
        else:
            begin.append(k)
            end.append(k + 1 if isinstance(k, int) else add(k, 1))
            strides.append(1)
            shrink_mask |= 1 << i
    return (stack(begin) if any(isinstance(b, Tensor) for b in begin) else convert_to_tensor(begin, dtypes.int32),
            stack(end) if any(isinstance(e, Tensor) for e in end) else convert_to_tensor(end, dtypes.int32),
            convert_to_tensor(strides, dtypes.int32), begin_mask, end_mask, ellipsis_mask, new_axis_mask,
            shrink_mask)


def _getitem(tensor, key):
    b, e, s, bm, em, elm, nam, sm = _slice_spec(tensor, key)
    return gen_ops.strided_slice(tensor, b, e, s, begin_mask=bm, end_mask=em, ellipsis_mask=elm,
                                 new_axis_mask=nam, shrink_axis_mask=sm, name="strided_slice")


# Tensor's operators, as TensorFlow's Python gives them.
# Operators name their ops in lower case, as TensorFlow's do: `x + y` is "add", tf.add "Add".
def _operator(fn, name, reflected=False):
    if reflected:
        return lambda self, other: fn(other, self, name=name)
    return lambda self, other: fn(self, other, name=name)


Tensor.__add__ = _operator(add, "add")
Tensor.__radd__ = _operator(add, "add", reflected=True)
Tensor.__sub__ = _operator(subtract, "sub")
Tensor.__rsub__ = _operator(subtract, "sub", reflected=True)
Tensor.__mul__ = _operator(multiply, "mul")
Tensor.__rmul__ = _operator(multiply, "mul", reflected=True)
Tensor.__truediv__ = _operator(divide, "truediv")
Tensor.__rtruediv__ = _operator(divide, "truediv", reflected=True)
Tensor.__floordiv__ = _operator(floordiv, "floordiv")
Tensor.__rfloordiv__ = _operator(floordiv, "floordiv", reflected=True)
Tensor.__mod__ = _operator(floormod, "mod")
Tensor.__pow__ = _operator(pow, "pow")
Tensor.__rpow__ = _operator(pow, "pow", reflected=True)
Tensor.__matmul__ = _operator(matmul, "matmul")
Tensor.__rmatmul__ = _operator(matmul, "matmul", reflected=True)
Tensor.__neg__ = lambda self: negative(self)
Tensor.__abs__ = lambda self: abs(self)
Tensor.__lt__ = lambda self, other: less(self, other)
Tensor.__le__ = lambda self, other: less_equal(self, other)
Tensor.__gt__ = lambda self, other: greater(self, other)
Tensor.__ge__ = lambda self, other: greater_equal(self, other)
Tensor.__and__ = lambda self, other: logical_and(self, other)
Tensor.__or__ = lambda self, other: logical_or(self, other)
Tensor.__invert__ = lambda self: logical_not(self)
# x ^ y on bools: (x or y) and not (x and y), as tf.math.logical_xor.
Tensor.__xor__ = lambda self, other: logical_and(logical_or(self, other), logical_not(logical_and(self, other)))
Tensor.__getitem__ = _getitem


# Control and structure -------------------------------------------------------------------
def no_op(name=None):
    return gen_ops.no_op(name=name or "NoOp")


def group(*inputs, name=None):
    """tf.group: an op that runs once every one of `inputs` (ops or tensors, in lists or not) has."""
    ops = []

    def add(value):
        if isinstance(value, (list, tuple)):
            for v in value:
                add(v)
        elif isinstance(value, dict):
            for v in value.values():
                add(v)
        elif value is not None:
            ops.append(value if isinstance(value, Operation) else value.op)
    add(inputs)
    with control_dependencies(ops):
        return no_op(name=name or "group_deps")


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    if mode.upper() != "CONSTANT":
        raise NotImplementedError(f"tf.compat.v1.pad(mode={mode!r}) is not supported by Tessera yet")
    paddings = convert_to_tensor(paddings, dtypes.int32)
    if isinstance(constant_values, (int, float)) and constant_values == 0:
        return gen_ops.pad(tensor, paddings, name=name or "Pad")
    tensor = convert_to_tensor(tensor)
    return gen_ops.pad_v2(tensor, paddings, convert_to_tensor(constant_values, tensor.dtype), name=name or "PadV2")


def slice(input_, begin, size, name=None):  # noqa: A001
    index = begin.dtype if isinstance(begin, Tensor) else (size.dtype if isinstance(size, Tensor) else dtypes.int32)
    return gen_ops.slice(input_, convert_to_tensor(begin, index), convert_to_tensor(size, index), name=name or "Slice")


def broadcast_to(input, shape, name=None):  # noqa: A002
    return gen_ops.broadcast_to(input, convert_to_tensor(shape, dtypes.int32), name=name or "BroadcastTo")


def identity_n(input, name=None):  # noqa: A002
    return gen_ops.identity_n(list(input), name=name or "IdentityN")


def ensure_shape(x, shape, name=None):
    return gen_ops.ensure_shape(x, shape=TensorShape(shape), name=name or "EnsureShape")


def einsum(equation, *inputs, name=None, **kwargs):
    """tf.einsum, in what the engine's Einsum runs (two operands, an explicit output, every
    label in both operands or the output): an implicit output is the labels used once, in
    order; a label only one operand has is summed there first; one operand is a sum and a
    transpose; three or more go two at a time, as TensorFlow's Python einsum does. Ellipses
    and repeated labels in one operand (diagonals) are not supported."""
    if kwargs:
        raise NotImplementedError(f"tf.compat.v1.einsum({', '.join(kwargs)}) is not supported by Tessera")
    equation = equation.replace(" ", "")
    if "." in equation:
        raise NotImplementedError(f"tf.einsum('{equation}'): ellipses are not supported by Tessera yet")
    lhs, _, out = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(inputs):
        raise ValueError(f"tf.einsum('{equation}') names {len(terms)} operands but got {len(inputs)}")
    if "->" not in equation:
        out = "".join(sorted(c for c in set(lhs) if c.isalpha() and lhs.count(c) == 1))
    if any(len(set(t)) != len(t) for t in terms) or len(set(out)) != len(out):
        raise NotImplementedError(f"tf.einsum('{equation}'): a label repeated in one term (a diagonal) is not "
                                  "supported by Tessera yet")
    with name_scope(name, "einsum"):
        operands = [convert_to_tensor(x) for x in inputs]
        for i, term in enumerate(terms):  # labels only this operand has, and the output not, are summed now
            others = out + "".join(t for j, t in enumerate(terms) if j != i)
            alone = [k for k, c in enumerate(term) if c not in others]
            if alone:
                operands[i] = reduce_sum(operands[i], alone)
                terms[i] = "".join(c for c in term if c in others)
        while len(operands) > 1:
            a, b = terms[0], terms[1]
            later = out + "".join(terms[2:])
            kept = "".join(dict.fromkeys(c for c in a + b if c in later))
            product = gen_ops.einsum([operands[0], operands[1]], equation=f"{a},{b}->{kept}")
            operands, terms = [product] + operands[2:], [kept] + terms[2:]
        if terms[0] == out:
            return identity(operands[0])
        return transpose(operands[0], [terms[0].index(c) for c in out])
