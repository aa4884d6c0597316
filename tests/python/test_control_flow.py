"""tf.cond and tf.while_loop: only the taken branch runs; loops with the names, frames and
errors TensorFlow 2.21's v1 control flow gives (recorded here); nests of both."""

import collections

import numpy as np
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



def test_while_loop_names_and_values_are_tensorflows():
    x = tf.placeholder(tf.float32, [])
    i, a = tf.while_loop(lambda i, a: i < 10, lambda i, a: (i + 1, a * 2.0 + x), [tf.constant(0), tf.constant(1.0)])
    graph = tf.get_default_graph()
    assert (i.name, a.name) == ("while/Exit:0", "while/Exit_1:0")
    # TensorFlow 2.21's v1 loop: its frame, and the Enter of a tensor from outside, named
    # after the op that takes it.
    assert graph.get_operation_by_name("while/Enter").get_attr("frame_name") == b"while/while_context"
    assert graph.get_operation_by_name("while/add_1/Enter").get_attr("is_constant")
    assert {"while/Merge", "while/LoopCond", "while/Switch_1", "while/Identity", "while/NextIteration_1"} <= {
        op.name for op in graph.get_operations()}
    one = tf.while_loop(lambda v: v < 100, lambda v: v * 3, [tf.constant(1)])
    assert one.name == "while_1/Exit:0"
    with tf.Session() as sess:
        assert sess.run([i, a], {x: 1.0}) == [10, 2047.0]
        assert sess.run(one) == 243


def test_loops_nest_with_conds_structures_and_limits():
    def outer_body(n, total):
        inner = tf.while_loop(lambda j, acc: j < n, lambda j, acc: (j + 1, acc + j), [0, 0])
        return n + 1, total + inner[1]

    nested = tf.while_loop(lambda n, t: n < 5, outer_body, [0, 0])
    with_cond = tf.while_loop(
        lambda k, acc: k < 6,
        lambda k, acc: (k + 1, tf.cond(tf.equal(k % 2, 0), lambda: acc + k, lambda: acc - 1)), [0, 0])
    Pair = collections.namedtuple("Pair", "count value")
    pair = tf.while_loop(lambda p: p.count < 3, lambda p: Pair(p.count + 1, p.value * 2.0),
                         [Pair(tf.constant(0), tf.constant(1.5))])
    limited = tf.while_loop(lambda v: True, lambda v: v + 1, [tf.constant(0)], maximum_iterations=7)
    grown = tf.while_loop(
        lambda k, v: k < 4, lambda k, v: (k + 1, tf.concat([v, tf.cast(tf.reshape(k, [1]), tf.float32)], 0)),
        [tf.constant(0), tf.zeros([0])], shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
    assert grown[1].shape.as_list() == [None]
    assert limited.name == "while_3/Exit_1:0"  # the counter is the first loop variable, as in TensorFlow
    with tf.Session() as sess:
        got = sess.run([nested, with_cond, pair, limited, grown])
    assert got[0] == [5, 10] and got[1] == [6, 3] and got[3] == 7
    assert isinstance(got[2], Pair) and got[2] == (3, 12.0)
    np.testing.assert_array_equal(got[4][1], [0, 1, 2, 3])


def test_a_loop_reads_a_variable_and_may_join_a_running_session():
    v = tf.Variable(3.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        # Made after the session's first step: the session takes the loop, back edge and all.
        total = tf.while_loop(lambda k, acc: k < 4, lambda k, acc: (k + 1, acc + v), [0, 0.0],
                              parallel_iterations=1)
        assert sess.run(total) == [4, 12.0]
    enter = tf.get_default_graph().get_operation_by_name("while/Enter")
    assert enter.get_attr("parallel_iterations") == 1


def test_loops_say_what_is_wrong():
    with pytest.raises(ValueError, match="enters the loop with shape \\(1,\\), but has shape \\(2,\\)"):
        tf.while_loop(lambda v: True, lambda v: tf.concat([v, v], 0), [tf.zeros([1])])
    with pytest.raises(TypeError, match="enters the loop as int32"):
        tf.while_loop(lambda v: v < 3, lambda v: tf.cast(v, tf.float32), [tf.constant(0)])
    with pytest.raises(ValueError, match="scalar bool"):
        tf.while_loop(lambda v: v, lambda v: v, [tf.constant(1)])
    with pytest.raises(ValueError, match="not compatible with the initial shape"):
        tf.while_loop(lambda v: True, lambda v: v, [tf.zeros([2])], shape_invariants=[tf.TensorShape([3])])
    with pytest.raises(TypeError, match="callable"):
        tf.while_loop(None, lambda v: v, [1])


def test_gradients_go_through_the_branch_that_ran():
    x = tf.placeholder(tf.float32, [])
    p = tf.placeholder(tf.bool, [])
    v = tf.Variable(2.0)
    simple = tf.gradients(tf.cond(p, lambda: v * x * x, lambda: v + 3.0 * x), [v, x])
    # A branch returning a tensor from outside, and a cond in a branch.
    nested = tf.gradients(tf.cond(x > 0, lambda: tf.cond(p, lambda: x * v, lambda: x), lambda: x), [v, x])
    constant = tf.gradients(tf.cond(p, lambda: x * 2.0, lambda: tf.constant(1.0)), [v, x])
    assert constant[0] is None  # v is on no path, as in TensorFlow
    with tf.Session() as sess:
        sess.run(v.initializer)
        got = {(pv, xv): sess.run([simple, nested, constant[1]], {x: xv, p: pv})
               for pv in (True, False) for xv in (3.0, -1.0)}
    # What TensorFlow 2.21's v1 cond gives for the same (the branch not taken gives zeros).
    assert got[True, 3.0] == [[9, 12], [3, 2], 2] and got[False, 3.0] == [[1, 3], [0, 1], 0]
    assert got[True, -1.0] == [[1, -4], [0, 1], 2] and got[False, -1.0] == [[1, 3], [0, 1], 0]


def test_training_through_a_cond_and_the_loop_gradient_still_missing():
    x = tf.placeholder(tf.float32, [None, 2])
    training = tf.placeholder_with_default(False, [])
    w = tf.Variable([[1.0], [-1.0]])
    hidden = tf.matmul(x, w)
    out = tf.cond(training, lambda: tf.nn.dropout(hidden, rate=0.0) * 1.0, lambda: hidden)
    loss = tf.reduce_mean(tf.square(out - 1.0))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feed = {x: [[1.0, 0.0], [0.0, 1.0]]}
    with tf.Session() as sess:
        sess.run(w.initializer)
        before = sess.run(loss, feed)
        for _ in range(20):
            sess.run(train, {**feed, training: True})
        assert sess.run(loss, feed) < before / 10
    i = tf.constant(0.0)
    looped = tf.while_loop(lambda k: k < 3.0, lambda k: k + w[0, 0], [i])
    with pytest.raises(tf.errors.UnimplementedError, match="tf.while_loop are not supported"):
        tf.gradients(looped, w)
