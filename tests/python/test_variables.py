"""Reference variables as TensorFlow 1.x makes them."""

import numpy as np
import pytest

import tessera.compat.v1 as tf


def test_variables_keep_their_values_across_steps():
    v = tf.Variable(tf.zeros([2]), name="counter")
    inc = tf.assign_add(v, [1.0, 2.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(inc)
        np.testing.assert_array_equal(sess.run(v), [3, 6])
        sess.run(v.assign([5.0, 5.0]))
        np.testing.assert_array_equal(sess.run(v + 1), [6, 6])
        v.load([7.0, 8.0], sess)
        np.testing.assert_array_equal(sess.run(v), [7, 8])


def test_collections_and_initializers():
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b", trainable=False)
    assert tf.global_variables() == [a, b]
    assert tf.trainable_variables() == [a]
    with tf.Session() as sess:
        sess.run(tf.variables_initializer([a]))
        assert sess.run(a) == 1.0
        assert not sess.run(tf.is_variable_initialized(b))
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(b)


def test_a_variable_needs_a_known_shape():
    x = tf.placeholder(tf.float32, [None])
    with pytest.raises(ValueError, match="shape"):
        tf.Variable(x)
