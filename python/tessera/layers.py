"""tf.compat.v1.layers: dense, conv2d, max_pooling2d, average_pooling2d, flatten and
dropout as functions, each making its variables with get_variable under a variable scope
of its own ("dense", "dense_1", ...), as TensorFlow 1.x's layers do."""

import numpy as np

from tessera import array_ops, dtypes, nn
from tessera.framework import convert_to_tensor
from tessera.unsupported import module_getattr
from tessera.variable_scope import get_variable, variable_scope, zeros_initializer


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
    if unsupported or data_format != "channels_last" or _pair(dilation_rate) != [1, 1]:
        raise NotImplementedError("tf.compat.v1.layers.conv2d with these arguments is not supported by Tessera yet")
    inputs = convert_to_tensor(inputs)
    kh, kw = _pair(kernel_size)
    with variable_scope(name, default_name="conv2d", reuse=reuse):
        kernel = get_variable("kernel", [kh, kw, inputs.shape[-1], filters], inputs.dtype, kernel_initializer,
                              kernel_regularizer, trainable)
        out = nn.conv2d(inputs, kernel, strides=_pair(strides), padding=_padding(padding))
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


__getattr__ = module_getattr("tf.compat.v1.layers")
