"""tf.cond: only the taken branch runs; values, nests and nested conds."""

import pytest

import tessera.compat.v1 as tf


def test_cond_picks_a_branch_by_the_predicate():
    x = tf.placeholder(tf.float32, [])
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: x * 2, lambda: tf.constant(7.0) + x)
    pair = tf.cond(x > 0, lambda: (x, x + 1), lambda: (-x, x - 1))
    nested = tf.cond(p, lambda: tf.cond(x > 1, lambda: x * 10, lambda: x * 100), lambda: x)
    with tf.Session() as sess:
        assert sess.run(y, {x: 3, p: True}) == 6 and sess.run(y, {x: 3, p: False}) == 10
        assert sess.run(pair, {x: -2}) == (2, -3)
        assert [sess.run(nested, {x: v, p: q}) for v, q in ((2, True), (0.5, True), (2, False))] == [20, 50, 2]


def test_only_the_taken_branch_runs():
    q = tf.FIFOQueue(1, [tf.float32])
    close = q.close()
    p = tf.placeholder(tf.bool, [])
    # The false branch dequeues from a closed, empty queue: OutOfRange if it ever runs.
    y = tf.cond(p, lambda: tf.constant(1.0), lambda: q.dequeue())
    with tf.Session() as sess:
        sess.run(close)
        assert sess.run(y, {p: True}) == 1.0
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(y, {p: False})


def test_branches_must_agree():
    p = tf.placeholder(tf.bool, [])
    with pytest.raises(ValueError, match="same type"):
        tf.cond(p, lambda: tf.constant(1.0), lambda: tf.constant(1))
    with pytest.raises(ValueError, match="same number"):
        tf.cond(p, lambda: (tf.constant(1.0), tf.constant(2.0)), lambda: tf.constant(1.0))
    with pytest.raises(tf.errors.NotFoundError, match="Switch|Merge"):
        v = tf.Variable(1.0)
        tf.gradients(tf.cond(p, lambda: v * 2, lambda: v * 3), v)
