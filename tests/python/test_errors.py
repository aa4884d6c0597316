"""tf.errors: a class per code, as TensorFlow numbers them."""

import pytest

import tessera.compat.v1 as tf


@pytest.mark.parametrize("cls,code", [
    (tf.errors.CancelledError, 1), (tf.errors.InvalidArgumentError, 3), (tf.errors.DeadlineExceededError, 4),
    (tf.errors.NotFoundError, 5), (tf.errors.FailedPreconditionError, 9), (tf.errors.OutOfRangeError, 11),
    (tf.errors.UnimplementedError, 12), (tf.errors.UnavailableError, 14), (tf.errors.DataLossError, 15)])
def test_codes_are_tensorflows(cls, code):
    assert tf.errors.exception_type_from_error_code(code) is cls
    err = cls(None, None, "Node 'layer/w' (VariableV2): gone")
    assert isinstance(err, tf.errors.OpError) and err.error_code == code
    assert err.node_name == "layer/w" and err.message.endswith("gone")


def test_a_step_past_its_deadline_is_deadline_exceeded_and_the_session_goes_on():
    q = tf.raw_ops.FIFOQueueV2(component_types=[tf.float32])
    take = tf.raw_ops.QueueDequeueV2(handle=q, component_types=[tf.float32])
    x = tf.placeholder(tf.float32, [])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(take, options=tf.RunOptions(timeout_in_ms=50))
        assert sess.run(x + 1, {x: 1.0}) == 2.0


def test_a_closed_queue_is_out_of_range():
    q = tf.raw_ops.FIFOQueueV2(component_types=[tf.float32])
    close = tf.raw_ops.QueueCloseV2(handle=q)
    take = tf.raw_ops.QueueDequeueV2(handle=q, component_types=[tf.float32])
    with tf.Session() as sess:
        sess.run(close)
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(take)
