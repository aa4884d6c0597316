"""tf.errors: a class per code, as TensorFlow numbers them; deadlines, closed queues, and
Ctrl-C during a step."""

import subprocess
import sys
import textwrap

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


# Each step waits on an empty queue until a SIGINT, sent 0.3 s in, cancels it; a deadline
# bounds the wait should the cancel fail.
CTRL_C_SCRIPT = textwrap.dedent("""
    import os, signal, threading, time
    import tessera.compat.v1 as tf

    q = tf.FIFOQueue(3, tf.float32, shapes=[])
    take, put = q.dequeue(), q.enqueue(tf.constant(2.5))
    wait = tf.RunOptions(timeout_in_ms=20000)

    def interrupt_soon():
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()

    with tf.Session() as sess:
        interrupt_soon()
        start = time.time()
        try:
            sess.run(take, options=wait)
        except KeyboardInterrupt:
            print("KeyboardInterrupt", round(time.time() - start))
        sess.run(put)
        print("next", sess.run(take))
        # A script's own handler runs, and the cancelled step is CancelledError.
        signal.signal(signal.SIGINT, lambda *_: print("handler"))
        interrupt_soon()
        try:
            sess.run(take, options=wait)
        except tf.errors.CancelledError:
            print("CancelledError")
""")


def test_ctrl_c_cancels_the_step_and_the_session_goes_on():
    done = subprocess.run([sys.executable, "-c", CTRL_C_SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:5] == ["KeyboardInterrupt 0", "next 2.5", "handler", "CancelledError", ""]
