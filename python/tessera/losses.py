"""tf.compat.v1.losses: the common losses, reduced as TensorFlow 1.x reduces them by
default (the weighted sum over the non-zero weights' count; with the default weights of 1,
the mean), and added to the LOSSES collection."""

from tessera import array_ops, nn
from tessera.framework import convert_to_tensor, get_default_graph, name_scope
from tessera.unsupported import module_getattr
from tessera.variables import GraphKeys


class Reduction:
    NONE = "none"
    SUM = "weighted_sum"
    MEAN = "weighted_mean"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"


def _reduce(losses, weights, reduction):
    losses = convert_to_tensor(losses)
    weights = array_ops.cast(weights, losses.dtype)
    weighted = losses * weights
    if reduction == Reduction.NONE:
        out = weighted
    elif reduction == Reduction.SUM:
        out = array_ops.reduce_sum(weighted)
    elif reduction == Reduction.MEAN:
        out = array_ops.reduce_sum(weighted) / array_ops.reduce_sum(weights * array_ops.ones_like(losses))
    elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
        out = array_ops.reduce_sum(weighted) / array_ops.cast(array_ops.size(losses), losses.dtype)
    elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
        present = array_ops.not_equal(weights * array_ops.ones_like(losses), 0.0)
        out = array_ops.reduce_sum(weighted) / array_ops.maximum(
            array_ops.reduce_sum(array_ops.cast(present, losses.dtype)), 1.0)
    else:
        raise ValueError(f"Invalid Reduction Key {reduction}.")
    get_default_graph().add_to_collection(GraphKeys.LOSSES, out)
    return out


def mean_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    with name_scope(scope, "mean_squared_error"):
        predictions = convert_to_tensor(predictions)
        labels = array_ops.cast(labels, predictions.dtype)
        return _reduce(array_ops.squared_difference(predictions, labels), weights, reduction)


def absolute_difference(labels, predictions, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    with name_scope(scope, "absolute_difference"):
        predictions = convert_to_tensor(predictions)
        labels = array_ops.cast(labels, predictions.dtype)
        return _reduce(array_ops.abs(predictions - labels), weights, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    with name_scope(scope, "softmax_cross_entropy_loss"):
        logits = convert_to_tensor(logits)
        labels = array_ops.cast(onehot_labels, logits.dtype)
        if label_smoothing:
            classes = array_ops.cast(array_ops.shape(labels)[-1], logits.dtype)
            labels = labels * (1 - label_smoothing) + label_smoothing / classes
        return _reduce(nn.softmax_cross_entropy_with_logits_v2(labels=array_ops.stop_gradient(labels), logits=logits),
                       weights, reduction)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    with name_scope(scope, "sparse_softmax_cross_entropy_loss"):
        return _reduce(nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits), weights,
                       reduction)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES):
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    return get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    losses = get_losses(scope) + (get_regularization_losses(scope) if add_regularization_losses else [])
    return array_ops.add_n(losses, name=name)


__getattr__ = module_getattr("tf.compat.v1.losses")
