"""tf.nn: activations, convolutions, pooling, losses and dropout, with TensorFlow's argument
names, over the engine's ops."""

from tessera import array_ops, dtypes, gen_ops
from tessera import random_ops
from tessera import rnn as rnn_cell  # noqa: F401 (tf.nn.rnn_cell; its static_rnn is tf.nn's)
from tessera.framework import convert_to_tensor, name_scope
from tessera.math_ops import moments  # noqa: F401 (tf.nn.moments)
from tessera.rnn import static_rnn  # noqa: F401
from tessera.unsupported import module_getattr


def relu(features, name=None):
    return gen_ops.relu(features, name=name or "Relu")


def relu6(features, name=None):
    return gen_ops.relu6(features, name=name or "Relu6")


def _over_axis(op, logits, axis, name):
    """op (Softmax, LogSoftmax: over the last axis) over `axis`: the axis swapped to the end
    and back, as TensorFlow does."""
    logits = convert_to_tensor(logits)
    rank = logits.shape.ndims
    if axis is None or axis == -1 or (rank is not None and axis == rank - 1):
        return op(logits, name=name)
    if rank is None:
        raise NotImplementedError(f"tf.nn.{op.__name__} over axis {axis} of a tensor of unknown rank is not "
                                  "supported by Tessera yet")
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for a tensor of rank {rank}")
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]  # its own inverse
    return array_ops.transpose(op(array_ops.transpose(logits, perm)), perm, name=name)


def softmax(logits, axis=None, name=None, dim=None):
    return _over_axis(gen_ops.softmax, logits, axis if axis is not None else dim, name or "Softmax")


def log_softmax(logits, axis=None, name=None, dim=None):
    return _over_axis(gen_ops.log_softmax, logits, axis if axis is not None else dim, name or "LogSoftmax")


sigmoid = array_ops.sigmoid
tanh = array_ops.tanh


def bias_add(value, bias, data_format=None, name=None):
    return gen_ops.bias_add(value, bias, data_format=data_format, name=name or "BiasAdd")


def _four(v):
    return [1, v, v, 1] if isinstance(v, int) else (list(v) if len(v) == 4 else [1, *v, 1])


def _dilated(filter, dilations):  # noqa: A002
    """`filter` [KH, KW, ...] with dilations[1] - 1 and dilations[2] - 1 zeros between its
    taps: a convolution with it is the dilated convolution, SAME padding included (its size
    is the effective one TensorFlow pads for). The engine's kernels take no dilations; this
    costs the products with the zeros (dilation squared, at most)."""
    filter = convert_to_tensor(filter)
    with name_scope(None, "dilated_filter"):
        for axis, rate in ((0, dilations[1]), (1, dilations[2])):
            if rate == 1:
                continue
            size = array_ops.shape(filter)
            taps = array_ops.pad(array_ops.expand_dims(filter, axis + 1),
                                 [[0, rate - 1] if a == axis + 1 else [0, 0] for a in range(5)])
            spread = array_ops.concat([size[:axis], size[axis:axis + 1] * rate, size[axis + 1:]], 0)
            kept = array_ops.concat([size[:axis], (size[axis:axis + 1] - 1) * rate + 1, size[axis + 1:]], 0)
            static = filter.shape.dims
            filter = array_ops.slice(array_ops.reshape(taps, spread), [0, 0, 0, 0], kept)
            if static is not None:
                static = list(static)
                static[axis] = None if static[axis] is None else (static[axis] - 1) * rate + 1
                filter.set_shape(static)
        return filter


def _dilations(dilations, rate=None):
    d = _four(rate if rate is not None else dilations) if (dilations is not None or rate is not None) else [1, 1, 1, 1]
    if d[0] != 1 or d[3] != 1 or min(d) < 1:
        raise ValueError(f"Dilations must be positive, and 1 in the batch and depth dimensions; got {d}")
    return d


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True, data_format="NHWC",  # noqa: A002
           dilations=None, name=None, filters=None):
    filter = filter if filter is not None else filters
    d = _dilations(dilations)
    if d != [1, 1, 1, 1]:
        filter = _dilated(filter, d)
    return gen_ops.conv2d(input, filter, strides=_four(strides), padding=padding, data_format=data_format,
                          name=name or "Conv2D")


def convolution(input, filter=None, padding=None, strides=None, dilation_rate=None, name=None,  # noqa: A002
                data_format=None, filters=None, dilations=None):
    """tf.nn.convolution of 2 spatial dimensions (NHWC): conv2d."""
    filter = filter if filter is not None else filters
    if convert_to_tensor(input).shape.ndims not in (None, 4):
        raise NotImplementedError("tf.nn.convolution of other than 2 spatial dimensions is not supported by Tessera")
    rate = dilation_rate if dilation_rate is not None else dilations
    return conv2d(input, filter, strides if strides is not None else 1, padding,
                  dilations=rate if rate is not None else 1, name=name or "convolution")


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None, padding="SAME",  # noqa: A002
                     data_format="NHWC", name=None, input=None, filters=None, dilations=None):  # noqa: A002
    """The transpose (gradient) of conv2d: value [N, H, W, out channels] to output_shape with
    filter [KH, KW, output channels, value's channels]."""
    value = value if value is not None else input
    filter = filter if filter is not None else filters
    if dilations is not None and _dilations(dilations) != [1, 1, 1, 1]:
        raise NotImplementedError("tf.nn.conv2d_transpose(dilations=...) is not supported by Tessera yet")
    return gen_ops.conv2d_backprop_input(convert_to_tensor(output_shape, dtypes.int32), filter, value,
                                         strides=_four(strides), padding=padding, data_format=data_format,
                                         name=name or "conv2d_transpose")


def atrous_conv2d(value, filters, rate, padding, name=None):
    return conv2d(value, filters, [1, 1, 1, 1], padding, dilations=[1, rate, rate, 1], name=name or "atrous")


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None, data_format=None, dilations=None):  # noqa: A002
    d = _dilations(dilations, rate)
    if d != [1, 1, 1, 1]:
        filter = _dilated(filter, d)
    return gen_ops.depthwise_conv2d_native(input, filter, strides=_four(strides), padding=padding,
                                           data_format=data_format, name=name or "depthwise")


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    value = value if value is not None else input
    return gen_ops.max_pool(value, ksize=_four(ksize), strides=_four(strides), padding=padding,
                            data_format=data_format, name=name or "MaxPool")


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    value = value if value is not None else input
    return gen_ops.avg_pool(value, ksize=_four(ksize), strides=_four(strides), padding=padding,
                            data_format=data_format, name=name or "AvgPool")


def l2_loss(t, name=None):
    with name_scope(name, "L2Loss"):
        return array_ops.reduce_sum(array_ops.square(t)) * 0.5


def softmax_cross_entropy_with_logits_v2(labels=None, logits=None, axis=-1, name=None, dim=None):
    """-sum(labels * log_softmax(logits)) over the last axis, per example."""
    if (dim if dim is not None else axis) != -1:
        raise NotImplementedError("softmax_cross_entropy_with_logits over an axis other than the last is not "
                                  "supported by Tessera yet")
    with name_scope(name, "softmax_cross_entropy_with_logits"):
        logits = convert_to_tensor(logits)
        labels = convert_to_tensor(labels, logits.dtype)
        return array_ops.negative(array_ops.reduce_sum(labels * log_softmax(logits), axis=-1))


def softmax_cross_entropy_with_logits(labels=None, logits=None, dim=-1, name=None, axis=None):
    # TensorFlow 1.x's version does not take gradients into the labels.
    return softmax_cross_entropy_with_logits_v2(array_ops.stop_gradient(labels), logits,
                                                axis if axis is not None else dim, name)


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    loss, _ = gen_ops.sparse_softmax_cross_entropy_with_logits(logits, labels,
                                                               name=name or "SparseSoftmaxCrossEntropyWithLogits")
    return loss


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """Zeroes each element with probability rate (1 - keep_prob) and scales the rest by
    1 / keep_prob; keep_prob may be a tensor (fed 1.0 to turn it off)."""
    if rate is not None:
        keep_prob = 1 - rate
    with name_scope(name, "dropout"):
        x = convert_to_tensor(x)
        keep = convert_to_tensor(keep_prob, x.dtype)
        noise = random_ops.random_uniform(array_ops.shape(x) if noise_shape is None else noise_shape,
                                          dtype=x.dtype, seed=seed)
        mask = array_ops.cast(array_ops.less(noise, keep), x.dtype)
        out = x * mask / keep
        out.set_shape(x.shape)  # the noise's shape is x's, known only when the step runs
        return out


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True, max_norm=None):
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("tf.nn.embedding_lookup over partitioned params is not supported by "
                                      "Tessera yet")
        params = params[0]
    return array_ops.gather(params, ids, name=name or "embedding_lookup")


__getattr__ = module_getattr("tf.compat.v1.nn")
