"""tf.compat.v1.layers: dense, conv2d, max_pooling2d, average_pooling2d, flatten and
dropout as functions, each making its variables with get_variable under a variable scope
of its own ("dense", "dense_1", ...), as TensorFlow 1.x's layers do."""

import numpy as np

from tessera import array_ops, dtypes, nn
from tessera.framework import convert_to_tensor, get_default_graph
from tessera.unsupported import module_getattr
from tessera.variable_scope import get_variable, ones_initializer, variable_scope, zeros_initializer
from tessera.variables import GraphKeys


def _pair(v):
    return [v, v] if isinstance(v, int) else list(v)


def _padding(padding):
    return padding.upper()


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
          kernel_regularizer=None, bias_regularizer=None, trainable=True, name=None, reuse=None, **unsupported):
    if unsupported:
        raise NotImplementedError(f"tf.compat.v1.layers.dense({', '.join(unsupported)}) is not supported by "
                                  "Tessera yet")
    inputs = convert_to_tensor(inputs)
    with variable_scope(name, default_name="dense", reuse=reuse):
        kernel = get_variable("kernel", [inputs.shape[-1], units], inputs.dtype, kernel_initializer,
                              kernel_regularizer, trainable)
        if inputs.shape.ndims is not None and inputs.shape.ndims > 2:
            raise NotImplementedError("tf.compat.v1.layers.dense over inputs of rank above 2 is not supported by "
                                      "Tessera yet")
        out = array_ops.matmul(inputs, kernel)
        if use_bias:
            bias = get_variable("bias", [units], inputs.dtype, bias_initializer or zeros_initializer(),
                                bias_regularizer, trainable)
            out = nn.bias_add(out, bias)
        return activation(out) if activation is not None else out


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
           dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
           kernel_regularizer=None, bias_regularizer=None, trainable=True, name=None, reuse=None, **unsupported):
    if unsupported or data_format != "channels_last":
        raise NotImplementedError("tf.compat.v1.layers.conv2d with these arguments is not supported by Tessera yet")
    inputs = convert_to_tensor(inputs)
    kh, kw = _pair(kernel_size)
    with variable_scope(name, default_name="conv2d", reuse=reuse):
        kernel = get_variable("kernel", [kh, kw, inputs.shape[-1], filters], inputs.dtype, kernel_initializer,
                              kernel_regularizer, trainable)
        out = nn.conv2d(inputs, kernel, strides=_pair(strides), padding=_padding(padding),
                        dilations=_pair(dilation_rate))
        if use_bias:
            bias = get_variable("bias", [filters], inputs.dtype, bias_initializer or zeros_initializer(),
                                bias_regularizer, trainable)
            out = nn.bias_add(out, bias)
        return activation(out) if activation is not None else out


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    with variable_scope(name, default_name="max_pooling2d"):
        return nn.max_pool(inputs, _pair(pool_size), _pair(strides), _padding(padding))


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    with variable_scope(name, default_name="average_pooling2d"):
        return nn.avg_pool(inputs, _pair(pool_size), _pair(strides), _padding(padding))


def flatten(inputs, name=None, data_format="channels_last"):
    inputs = convert_to_tensor(inputs)
    with variable_scope(name, default_name="flatten"):
        rest = inputs.shape[1:]
        size = int(np.prod(rest.as_list())) if rest.is_fully_defined() else -1
        return array_ops.reshape(inputs, [-1, size])


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Dropout where `training` is True (or a bool tensor that is, per step); the inputs as
    they are elsewhere."""
    with variable_scope(name, default_name="dropout"):
        if isinstance(training, bool):
            return nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed) if training else \
                array_ops.identity(inputs)
        training = convert_to_tensor(training, dtypes.bool)
        inputs = convert_to_tensor(inputs)
        out = array_ops.where(training, nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed), inputs)
        out.set_shape(inputs.shape)
        return out


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None, moving_mean_initializer=None,
                        moving_variance_initializer=None, training=False, trainable=True, name=None, reuse=None,
                        **unsupported):
    """Normalizes over every axis but `axis` with the batch's moments where training (and
    adds the moving averages' updates to UPDATE_OPS, which the training op must depend on,
    as in TensorFlow), with the moving averages elsewhere."""
    if unsupported:
        raise NotImplementedError(f"tf.compat.v1.layers.batch_normalization({', '.join(unsupported)}) is not "
                                  "supported by Tessera yet")
    inputs = convert_to_tensor(inputs)
    rank = inputs.shape.ndims
    axis = axis % rank
    channels = inputs.shape[axis]
    reduce_axes = [a for a in range(rank) if a != axis]
    with variable_scope(name, default_name="batch_normalization", reuse=reuse):
        gamma = get_variable("gamma", [channels], inputs.dtype, gamma_initializer or ones_initializer(),
                             trainable=trainable) if scale else None
        beta = get_variable("beta", [channels], inputs.dtype, beta_initializer or zeros_initializer(),
                            trainable=trainable) if center else None
        moving_mean = get_variable("moving_mean", [channels], inputs.dtype,
                                   moving_mean_initializer or zeros_initializer(), trainable=False)
        moving_variance = get_variable("moving_variance", [channels], inputs.dtype,
                                       moving_variance_initializer or ones_initializer(), trainable=False)
        shape = [1] * rank
        shape[axis] = channels

        def normalize(mean, variance):
            out = (inputs - array_ops.reshape(mean, shape)) / array_ops.sqrt(array_ops.reshape(variance, shape) +
                                                                               epsilon)
            if gamma is not None:
                out = out * array_ops.reshape(gamma, shape)
            if beta is not None:
                out = out + array_ops.reshape(beta, shape)
            return out

        if training is False:
            return normalize(moving_mean, moving_variance)
        mean, variance = nn.moments(inputs, reduce_axes)
        decay = 1.0 - momentum
        graph = get_default_graph()
        graph.add_to_collection(GraphKeys.UPDATE_OPS, moving_mean.assign_sub((moving_mean - mean) * decay))
        graph.add_to_collection(GraphKeys.UPDATE_OPS,
                                moving_variance.assign_sub((moving_variance - variance) * decay))
        if training is True:
            return normalize(mean, variance)
        out = array_ops.where(convert_to_tensor(training, dtypes.bool), normalize(mean, variance),
                              normalize(moving_mean, moving_variance))
        out.set_shape(inputs.shape)
        return out


__getattr__ = module_getattr("tf.compat.v1.layers")
