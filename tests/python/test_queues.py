"""TF1's queues and the threads that feed them."""

import threading

import numpy as np
import pytest

import tessera.compat.v1 as tf


def test_fifo_queue_in_order_then_out_of_range_once_closed():
    q = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []])
    enqueue = q.enqueue_many([np.arange(8, dtype=np.float32).reshape(4, 2), np.arange(4, dtype=np.int32)])
    x, i = q.dequeue()
    batch = q.dequeue_many(2)
    assert x.shape.as_list() == [2] and batch[0].shape.as_list() == [None, 2]
    with tf.Session() as sess:
        sess.run(enqueue)
        assert sess.run(q.size()) == 4
        first = sess.run([x, i])
        assert first[0].tolist() == [0, 1] and first[1] == 0
        rest = sess.run(batch)
        assert rest[1].tolist() == [1, 2]
        sess.run(q.close())
        assert sess.run(x).tolist() == [6, 7]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(x)


def test_queue_runners_feed_training_until_the_input_ends():
    data = np.arange(100, dtype=np.float32)
    source = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices(data).batch(10)).get_next()
    q = tf.FIFOQueue(3, [tf.float32], shapes=[[10]])
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue([source])]))
    total = tf.Variable(0.0)
    add = tf.assign_add(total, tf.reduce_sum(q.dequeue()))
    coord = tf.train.Coordinator()
    with tf.Session() as sess:
        sess.run(total.initializer)
        threads = tf.train.start_queue_runners(sess, coord)
        steps = 0
        try:
            while not coord.should_stop() and steps < 1000:
                sess.run(add)
                steps += 1
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
        coord.join(threads)
        assert sess.run(total) == data.sum() and steps == 10


def test_a_thread_failure_reaches_join():
    coord = tf.train.Coordinator()

    def work():
        with coord.stop_on_exception():
            raise RuntimeError("worker broke")
    t = threading.Thread(target=work)
    coord.register_thread(t)
    t.start()
    with pytest.raises(RuntimeError, match="worker broke"):
        coord.join()
    assert coord.should_stop()
