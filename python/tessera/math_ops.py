"""The rest of the math TF1 scripts call: moments, clipping, learning-rate schedules."""

from tessera import array_ops, dtypes
from tessera.framework import convert_to_tensor, name_scope


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """Mean and variance of x over `axes` (tf.nn.moments)."""
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with name_scope(name, "moments"):
        x = convert_to_tensor(x)
        mean = array_ops.reduce_mean(x, axes, keepdims=True, name="mean")
        # (x - mean)^2 rather than SquaredDifference, which has no gradient function yet.
        variance = array_ops.reduce_mean(array_ops.square(x - array_ops.stop_gradient(mean)), axes, keepdims=True,
                                         name="variance")
        if not keep:
            mean, variance = array_ops.squeeze(mean, axes), array_ops.squeeze(variance, axes)
        return mean, variance


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    with name_scope(name, "clip_by_value"):
        t = convert_to_tensor(t)
        return array_ops.maximum(array_ops.minimum(t, clip_value_max), clip_value_min)


def global_norm(t_list, name=None):
    with name_scope(name, "global_norm"):
        return array_ops.sqrt(array_ops.add_n([array_ops.reduce_sum(array_ops.square(t)) for t in t_list
                                               if t is not None]))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Each tensor scaled by clip_norm / max(global_norm, clip_norm); returns them and the norm."""
    with name_scope(name, "clip_by_global_norm"):
        norm = use_norm if use_norm is not None else global_norm(t_list)
        scale = clip_norm / array_ops.maximum(norm, clip_norm)
        return [None if t is None else t * array_ops.cast(scale, t.dtype) for t in t_list], norm


def clip_by_norm(t, clip_norm, axes=None, name=None):
    with name_scope(name, "clip_by_norm"):
        t = convert_to_tensor(t)
        norm = array_ops.sqrt(array_ops.reduce_sum(array_ops.square(t), axes, keepdims=True))
        return t * (clip_norm / array_ops.maximum(norm, clip_norm))


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """learning_rate * decay_rate ^ (global_step / decay_steps), floored where staircase."""
    with name_scope(name, "ExponentialDecay"):
        rate = convert_to_tensor(learning_rate, dtypes.float32)
        step = array_ops.cast(global_step, dtypes.float32)
        p = step / float(decay_steps)
        if staircase:
            p = array_ops.floordiv(p, 1.0)
        return rate * array_ops.pow(convert_to_tensor(decay_rate, dtypes.float32), p)
