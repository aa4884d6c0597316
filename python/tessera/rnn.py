"""tf.nn.rnn_cell (this module, as tf.nn has it): BasicLSTMCell; and tf.nn.static_rnn, an
LSTM unrolled over a Python list of time steps, with TensorFlow 1.x's variable names
(rnn/basic_lstm_cell/kernel, .../bias) and gate order (input, new input, forget, output)."""

import collections

from tessera import array_ops, dtypes
from tessera.framework import convert_to_tensor
from tessera.unsupported import module_getattr
from tessera.variable_scope import AUTO_REUSE, get_variable, variable_scope, zeros_initializer

LSTMStateTuple = collections.namedtuple("LSTMStateTuple", ("c", "h"))


class BasicLSTMCell:
    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None):
        if not state_is_tuple:
            raise NotImplementedError("BasicLSTMCell(state_is_tuple=False) is not supported by Tessera")
        self._units = num_units
        self._forget_bias = forget_bias
        self._activation = activation or array_ops.tanh
        self._name = name or "basic_lstm_cell"
        self._dtype = dtypes.as_dtype(dtype) if dtype is not None else None

    state_size = property(lambda self: LSTMStateTuple(self._units, self._units))
    output_size = property(lambda self: self._units)

    def zero_state(self, batch_size, dtype):
        if isinstance(batch_size, int):
            zeros = array_ops.zeros([batch_size, self._units], dtype)
        else:
            zeros = array_ops.fill(array_ops.stack([batch_size, self._units]), convert_to_tensor(0, dtype))
            zeros.set_shape([None, self._units])  # the width known: the cell's concat needs it
        return LSTMStateTuple(zeros, zeros)

    def __call__(self, inputs, state, scope=None):
        inputs = convert_to_tensor(inputs)
        c, h = state
        with variable_scope(scope or self._name, reuse=AUTO_REUSE):
            kernel = get_variable("kernel", [inputs.shape[-1] + self._units, 4 * self._units], inputs.dtype)
            bias = get_variable("bias", [4 * self._units], inputs.dtype, zeros_initializer())
            gates = array_ops.matmul(array_ops.concat([inputs, h], 1), kernel) + bias
            i, j, f, o = array_ops.split(gates, 4, axis=1)
            new_c = c * array_ops.sigmoid(f + self._forget_bias) + array_ops.sigmoid(i) * self._activation(j)
            new_h = self._activation(new_c) * array_ops.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """Runs `cell` over `inputs`, a list of [batch, features] tensors; returns the list of
    outputs and the last state."""
    if sequence_length is not None:
        raise NotImplementedError("tf.nn.static_rnn(sequence_length=...) is not supported by Tessera yet")
    if not inputs:
        raise ValueError("inputs must not be empty")
    inputs = [convert_to_tensor(x) for x in inputs]
    with variable_scope(scope or "rnn"):
        if initial_state is None:
            if dtype is None:
                raise ValueError("If no initial_state is provided, dtype must be specified")
            batch = inputs[0].shape[0]
            state = cell.zero_state(batch if batch is not None else array_ops.shape(inputs[0])[0], dtype)
        else:
            state = initial_state
        outputs = []
        for x in inputs:
            out, state = cell(x, state)
            outputs.append(out)
        return outputs, state


__getattr__ = module_getattr("tf.compat.v1.nn.rnn_cell")
