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
    pair = tf.while_loop(lambda p: p.count < 3, lambda p: [Pair(p.count + 1, p.value * 2.0)],
                         [Pair(tf.constant(0), tf.constant(1.5))])
    limited = tf.while_loop(lambda v: True, lambda v: v + 1, [tf.constant(0)], maximum_iterations=7)
    grown = tf.while_loop(
        lambda k, v: k < 4, lambda k, v: (k + 1, tf.concat([v, tf.cast(tf.reshape(k, [1]), tf.float32)], 0)),
        [tf.constant(0), tf.zeros([0])], shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
    assert grown[1].shape.as_list() == [None]
    assert limited.name == "while_3/Exit_1:0"  # the counter is the first loop variable, as in TensorFlow
    with tf.Session() as sess:
        got = sess.run([nested, with_cond, pair, limited, grown])
    # The results come in the structure the body returns, as in TensorFlow: a tuple here.
    assert got[0] == (5, 10) and got[1] == (6, 3) and got[3] == 7
    assert isinstance(got[2][0], Pair) and got[2] == [(3, 12.0)]
    np.testing.assert_array_equal(got[4][1], [0, 1, 2, 3])


def test_a_loop_reads_a_variable_and_may_join_a_running_session():
    v = tf.Variable(3.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        # Made after the session's first step: the session takes the loop, back edge and all.
        total = tf.while_loop(lambda k, acc: k < 4, lambda k, acc: (k + 1, acc + v), [0, 0.0],
                              parallel_iterations=1)
        assert sess.run(total) == (4, 12.0)
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


def test_training_through_a_cond():
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


# The values TensorFlow 2.21's v1 control flow gives for the same graphs (tf.compat.v1 with
# disable_control_flow_v2), float32.
def test_gradients_through_while_loops_are_tensorflows():
    x = tf.placeholder(tf.float32, [2])
    m = tf.constant([[0.9, 0.2], [-0.1, 0.8]])
    n = tf.placeholder_with_default(5, [])
    _, v = tf.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, tf.tanh(tf.squeeze(tf.matmul(m, v[:, None]), 1)) * x),
                         [0, x], parallel_iterations=3)
    gx, gm = tf.gradients(tf.reduce_sum(v * v), [x, m])

    s = tf.placeholder(tf.float32, [])

    def outer(i, a):  # a loop whose trip count is the outer loop's counter
        _, b = tf.while_loop(lambda j, b: j < i, lambda j, b: (j + 1, b * 0.5 + tf.sin(b) * s), [0, a])
        return i + 1, b

    _, y = tf.while_loop(lambda i, a: i < 4, outer, [1, s])
    gs = tf.gradients(y, s)[0]

    w = tf.Variable([0.5, -0.3], name="w")

    def body(i, a):  # a cond taking turns, reading a variable
        a = tf.cond(tf.equal(i % 2, 0), lambda: a * w + 1.0, lambda: tf.sin(a) * w)
        return i + 1, a

    _, c = tf.while_loop(lambda i, a: i < 5, body, [0, tf.constant([1.0, 2.0])])
    gw = tf.gradients(tf.reduce_sum(c), w)[0]
    with tf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(gx, {x: [0.5, -1.0]}), [0.007603028789162636, -0.5412028431892395],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(sess.run(gm, {x: [0.5, -1.0]}),
                                   [[-0.002367031294852495, 0.022784169763326645],
                                    [-0.056695789098739624, 0.5287007093429565]], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(sess.run(gs, {s: 0.7}), 3.8293092250823975, rtol=1e-5)
        np.testing.assert_allclose(sess.run(c), [1.237196683883667, 1.0773898363113403], rtol=1e-5)
        np.testing.assert_allclose(sess.run(gw), [1.028964877128601, -0.5190497636795044], rtol=1e-5)
        # A loop of n = 0 iterations passes the gradient straight through.
        np.testing.assert_allclose(sess.run(gx, {x: [0.5, -1.0], n: 0}), [1.0, -2.0])


def test_an_rnn_trains_through_a_while_loop_as_in_tensorflow():
    xs = tf.placeholder(tf.float32, [4, 3, 2])  # time, batch, features
    wx = tf.Variable(np.arange(8, dtype=np.float32).reshape(2, 4) / 10 - 0.3)
    wh = tf.Variable(np.eye(4, dtype=np.float32) * 0.5)
    wo = tf.Variable(np.ones([4, 1], np.float32) * 0.2)

    def step(t, h):
        return t + 1, tf.tanh(tf.matmul(xs[t], wx) + tf.matmul(h, wh))

    _, h = tf.while_loop(lambda t, h: t < 4, step, [0, tf.zeros([3, 4])])
    loss = tf.reduce_mean(tf.square(tf.matmul(h, wo) - 1.0))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    feed = {xs: (np.arange(24, dtype=np.float32).reshape(4, 3, 2) % 5) / 5 - 0.4}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        losses = [sess.run([loss, train], feed)[0] for _ in range(5)]
    np.testing.assert_allclose(losses, [0.9474077820777893, 0.9134619235992432, 0.8697876334190369,
                                        0.8102202415466309, 0.7292949557304382], rtol=1e-5)


def test_gradients_from_inside_a_loop_are_unimplemented():
    x = tf.placeholder(tf.float32, [])
    inside = []
    tf.while_loop(lambda k: k < 3.0, lambda k: inside.append(k * 2.0) or inside[-1], [x])
    with pytest.raises(tf.errors.UnimplementedError, match="inside a tf.while_loop"):
        tf.gradients(inside[0], x)
