"""Gradients and the optimizers, against what TensorFlow 2.21's tf.compat.v1 gives for the
same script (an MLP on a fixed random problem, 100 full-batch steps): the same slot names,
the same gradients, the same loss after training to the 5 decimals recorded."""

import numpy as np
import pytest

import tessera
import tessera.compat.v1 as tf


def mlp():
    rng = np.random.RandomState(0)
    features = rng.randn(256, 10).astype(np.float32)
    labels = np.argmax(features @ rng.randn(10, 3).astype(np.float32), axis=1)
    x = tf.placeholder(tf.float32, [None, 10])
    y = tf.placeholder(tf.int64, [None])
    w1 = tf.Variable(rng.randn(10, 16).astype(np.float32) * 0.3, name="w1")
    b1 = tf.Variable(tf.zeros([16]), name="b1")
    w2 = tf.Variable(rng.randn(16, 3).astype(np.float32) * 0.3, name="w2")
    b2 = tf.Variable(tf.zeros([3]), name="b2")
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    return {x: features, y: labels}, (w1, b1, w2, b2), logits, loss, accuracy


# (optimizer, slot variables, loss after 100 steps, accuracy) as TensorFlow 2.21 gives them.
CASES = [
    (lambda: tf.train.GradientDescentOptimizer(0.5), [], 0.06174, 0.9922),
    (lambda: tf.train.MomentumOptimizer(0.1, 0.9), ["Momentum"], 0.02348, 1.0),
    (lambda: tf.train.AdamOptimizer(0.01), ["Adam", "Adam_1"], 0.04232, 1.0),
    (lambda: tf.train.RMSPropOptimizer(0.01), ["RMSProp", "RMSProp_1"], 0.16693, 0.9766),
    (lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True), ["RMSProp", "RMSProp_1", "RMSProp_2"],
     0.04727, 0.9961),
    (lambda: tf.train.AdagradOptimizer(0.3), ["Adagrad"], 0.03265, 1.0),
]


@pytest.mark.parametrize("make,slots,want_loss,want_accuracy", CASES)
def test_optimizers_train_as_tensorflows(make, slots, want_loss, want_accuracy):
    feed, _, _, loss, accuracy = mlp()
    step = tf.train.get_or_create_global_step()
    train = make().minimize(loss, global_step=step)
    names = sorted(v.op.name for v in tf.global_variables())
    want = ["b1", "b2", "global_step", "w1", "w2"] + [f"{v}/{s}" for v in ("b1", "b2", "w1", "w2") for s in slots]
    if slots and slots[0] == "Adam":
        want += ["beta1_power", "beta2_power"]
    assert names == sorted(want)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(100):
            value, _ = sess.run([loss, train], feed)
        assert value == pytest.approx(want_loss, abs=2e-5)
        assert sess.run(accuracy, feed) == pytest.approx(want_accuracy, abs=1e-4)
        assert sess.run(step) == 100


def test_gradients_are_tensorflows_and_none_where_unconnected():
    feed, (w1, b1, w2, b2), logits, _, _ = mlp()
    labels = tf.one_hot(list(feed.values())[1], 3)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits))
    unused = tf.Variable(1.0, name="unused")
    grads = tf.gradients(loss, [w1, b2, unused])
    assert grads[2] is None
    assert grads[0].name.startswith("gradients/") and grads[0].shape.is_compatible_with([10, 16])
    again = tf.gradients(loss, w1)[0]
    assert again.name.startswith("gradients_1/")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        g = sess.run(grads[:2], feed)
    # TensorFlow's: 3.5623526573181152 and 0.1509408950805664.
    assert float(np.abs(g[0]).sum()) == pytest.approx(3.5623527, rel=1e-6)
    assert float(np.abs(g[1]).sum()) == pytest.approx(0.1509409, rel=1e-5)


def test_an_op_without_a_gradient_is_named():
    x = tf.Variable([1.0, -2.0], name="x")
    y = tf.reduce_sum(tf.raw_ops.ReluGrad(gradients=x, features=x), name="y")  # no second derivatives yet
    with pytest.raises(tf.errors.NotFoundError, match="ReluGrad"):
        tf.gradients(y, x)
    # The graph still works after the failed attempt.
    with tf.Session() as sess:
        sess.run(x.initializer)
        assert sess.run(y) == 1.0


def test_centered_rmsprop_slots_are_named_as_tensorflows():
    w = tf.Variable([1.0, 2.0], name="w")
    opt = tf.train.RMSPropOptimizer(0.1, momentum=0.5, centered=True)
    opt.minimize(tf.reduce_sum(w * w))
    # What TensorFlow 2.21 names them: a checkpoint's "w/RMSProp" is the mean square.
    assert [(n, opt.get_slot(w, n).op.name) for n in opt.get_slot_names()] == [
        ("mg", "w/RMSProp_1"), ("momentum", "w/RMSProp_2"), ("rms", "w/RMSProp")]


def test_einsum_beyond_two_explicit_operands_is_numpys():
    m = np.arange(9, dtype=np.float32).reshape(3, 3) / 4 - 1
    n = np.arange(12, dtype=np.float32).reshape(3, 4) / 6
    cases = [("ij->j", [m]), ("ij->ji", [m]), ("ij,jk", [m, n]), ("ij,jk,kl->il", [m, m, n]),
             ("ij,jk->k", [m, n]), ("i,i", [m[0], m[1]]), ("ij, jk -> ik", [m, n])]
    tensors = [tf.einsum(eq, *[tf.constant(x) for x in xs]) for eq, xs in cases]
    x = tf.constant(m)
    grad = tf.gradients(tf.einsum("ij,jk,kl->il", x, x, tf.constant(n)), x)[0]
    with pytest.raises(NotImplementedError, match="diagonal"):
        tf.einsum("ii->i", x)
    with tf.Session() as sess:
        for (eq, xs), got in zip(cases, sess.run(tensors)):
            np.testing.assert_allclose(got, np.einsum(eq.replace(" ", ""), *xs), rtol=1e-5, atol=1e-5, err_msg=eq)
        # d/dm of sum(m m n): row sums of n go back through both factors.
        ones = np.ones((3, 4), np.float32)
        np.testing.assert_allclose(sess.run(grad), ones @ (m @ n).T + m.T @ ones @ n.T, rtol=1e-5, atol=1e-5)


def test_einsum_gradients():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    b = tf.constant([[0.5, -1.0, 2.0], [1.5, 0.0, -2.0]])
    ga, gb = tf.gradients(tf.einsum("ij,jk->ik", a, b) * tf.constant([1.0, 2.0, 3.0]), [a, b])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(ga), [[4.5, -4.5], [4.5, -4.5]])
        np.testing.assert_allclose(sess.run(gb), [[4.0, 8.0, 12.0], [6.0, 12.0, 18.0]])


def test_depthwise_conv2d_gradients_are_tensorflows():
    x = tf.constant(np.arange(96, dtype=np.float32).reshape(2, 4, 4, 3) / 50 - 0.9)
    f = tf.constant(np.arange(54, dtype=np.float32).reshape(3, 3, 3, 2) / 30 - 0.8)
    y = tf.reduce_sum(tf.square(tf.nn.depthwise_conv2d(x, f, [1, 2, 2, 1], "SAME")))
    gx, gf = tf.gradients(y, [x, f])
    with tf.Session() as sess:
        a, b = sess.run([gx, gf])
    # TensorFlow 2.21's, for the same graph.
    assert float(np.abs(a).sum()) == pytest.approx(141.52142333984375, rel=1e-5)
    assert float(np.abs(b).sum()) == pytest.approx(123.61942291259766, rel=1e-5)
    np.testing.assert_allclose(a.ravel()[:4], [-2.6568002700805664, -1.442000389099121, -0.47360026836395264,
                                               -1.9800001382827759], rtol=1e-5)
    np.testing.assert_allclose(b.ravel()[:4], [-6.301440238952637, -5.422560691833496, -4.500053405761719,
                                               -3.627840518951416], rtol=1e-5)


def test_no_gradient_at_all_is_a_value_error():
    x = tf.Variable(1.0)
    with pytest.raises(ValueError, match="No gradients provided"):
        tf.train.GradientDescentOptimizer(0.1).minimize(tf.constant(3.0) + 0 * tf.stop_gradient(x))


def _tower_model(rng):
    w = tf.get_variable("w", initializer=rng.randn(784, 10).astype(np.float32) * 0.01)
    b = tf.get_variable("b", initializer=np.zeros(10, np.float32))
    return w, b


def test_towers_over_two_cpus_average_gradients_as_one_device(fashion):
    """The TF1 multi-tower pattern: each tower on its own CPU device takes half the batch;
    their gradients averaged train exactly as the whole batch on one device."""
    (train_x, train_y), _ = fashion
    images, labels = train_x[:512].reshape(-1, 784), train_y[:512]
    results = []
    for towers in (1, 2):
        tf.reset_default_graph()
        rng = np.random.RandomState(0)
        x = tf.placeholder(tf.float32, [None, 784])
        y = tf.placeholder(tf.int64, [None])
        opt = tf.train.GradientDescentOptimizer(0.1)  # stable: 0.5 diverges, and float rounding with it
        tower_grads, losses = [], []
        xs, ys = tf.split(x, towers), tf.split(y, towers)
        for i in range(towers):
            with tf.device(f"/cpu:{i}"), tf.variable_scope("model", reuse=i > 0):
                w, b = _tower_model(rng) if i == 0 else (tf.get_variable("w"), tf.get_variable("b"))
                logits = tf.matmul(xs[i], w) + b
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ys[i], logits=logits))
                losses.append(loss)
                tower_grads.append(opt.compute_gradients(loss, [w, b]))
        averaged = [(tf.add_n([g for g, _ in pairs]) / float(towers), pairs[0][1]) for pairs in zip(*tower_grads)]
        train = opt.apply_gradients(averaged)
        mean_loss = tf.add_n(losses) / float(towers)
        with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(20):
                sess.run(train, {x: images, y: labels})
            results.append(sess.run(mean_loss, {x: images, y: labels}))
            if towers == 2:
                devices = {r["node"]: r["device"] for r in tessera.placement(sess)}
                assert devices["model/MatMul"].endswith("CPU:0") and devices["model_1/MatMul"].endswith("CPU:1")
    assert results[1] == pytest.approx(results[0], rel=1e-5) and results[0] < 1.5
