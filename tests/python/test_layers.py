"""tf.layers, variable scopes and get_variable, with TensorFlow 2.21's names; and the TF1
tutorials' patterns trained end to end on Fashion-MNIST."""

import numpy as np
import pytest

import tessera.compat.v1 as tf


def test_layer_and_variable_names_are_tensorflows():
    x = tf.placeholder(tf.float32, [None, 28, 28, 1], name="images")
    net = tf.layers.conv2d(x, 32, 5, padding="same", activation=tf.nn.relu)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.conv2d(net, 64, 5, padding="same", activation=tf.nn.relu)
    flat = tf.layers.flatten(net)
    d = tf.layers.dense(flat, 10, name="logits")
    d2 = tf.layers.dense(d, 10)
    with tf.variable_scope("block"):
        v = tf.get_variable("w", [3])
        with tf.variable_scope("inner"):
            u = tf.get_variable("u", [2], initializer=tf.zeros_initializer())
    with tf.variable_scope("block", reuse=True):
        v_again = tf.get_variable("w")
    with tf.variable_scope("block", reuse=tf.AUTO_REUSE):
        z = tf.get_variable("z", [1])
    assert sorted(v.op.name for v in tf.global_variables()) == [
        "block/inner/u", "block/w", "block/z", "conv2d/bias", "conv2d/kernel", "conv2d_1/bias", "conv2d_1/kernel",
        "dense/bias", "dense/kernel", "logits/bias", "logits/kernel"]
    assert [t.name for t in (net, flat, d, d2)] == ["conv2d_1/Relu:0", "flatten/Reshape:0", "logits/BiasAdd:0",
                                                    "dense/BiasAdd:0"]
    assert v_again is v and u.name == "block/inner/u:0" and z.name == "block/z:0"
    assert flat.shape.as_list() == [None, 14 * 14 * 64]
    with pytest.raises(ValueError, match="Variable block/w already exists, disallowed"):
        with tf.variable_scope("block"):
            tf.get_variable("w", [3])
    with pytest.raises(ValueError, match="does not exist"):
        with tf.variable_scope("block", reuse=True):
            tf.get_variable("nope", [3])


def test_glorot_uniform_stays_in_its_limit_and_a_graph_seed_repeats():
    tf.set_random_seed(3)
    k = tf.get_variable("k", [100, 50])
    limit = np.sqrt(6 / 150)
    with tf.Session() as a, tf.Session() as b:
        a.run(k.initializer)
        b.run(k.initializer)
        first, second = a.run(k), b.run(k)
    assert np.abs(first).max() <= limit and np.abs(first).max() > 0.9 * limit
    np.testing.assert_array_equal(first, second)


def test_dropout_scales_what_it_keeps_only_when_training():
    x = tf.ones([1000])
    training = tf.placeholder_with_default(False, [])
    y = tf.layers.dropout(x, rate=0.25, training=training)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), np.ones(1000))
        dropped = sess.run(y, {training: True})
    kept = dropped[dropped != 0]
    np.testing.assert_allclose(kept, 1 / 0.75, rtol=1e-6)
    assert 650 < kept.size < 850


def test_softmax_regression_learns_fashion_mnist(fashion):
    (train_x, train_y), (test_x, test_y) = fashion
    x = tf.placeholder(tf.float32, [None, 784])
    y = tf.placeholder(tf.int64, [None])
    w = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    logits = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.one_hot(y, 10), logits=logits))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    flat_train, flat_test = train_x.reshape(-1, 784), test_x.reshape(-1, 784)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(100):
            batch = slice(step * 60 % 6000, step * 60 % 6000 + 60)
            sess.run(train, {x: flat_train[batch], y: train_y[batch]})
        assert sess.run(accuracy, {x: flat_test, y: test_y}) > 0.7


def test_the_cnn_tutorial_trains_with_adam_and_restores(fashion, tmp_path):
    (train_x, train_y), (test_x, test_y) = fashion
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 28, 28, 1])
    y = tf.placeholder(tf.int64, [None])
    training = tf.placeholder_with_default(False, [])
    net = tf.layers.conv2d(x, 16, 5, padding="same", activation=tf.nn.relu)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.conv2d(net, 32, 5, padding="same", activation=tf.nn.relu)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.dense(tf.layers.flatten(net), 128, activation=tf.nn.relu)
    logits = tf.layers.dense(tf.layers.dropout(net, rate=0.4, training=training), 10)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    step = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(1e-3).minimize(loss, global_step=step)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    saver = tf.train.Saver()
    rng = np.random.RandomState(0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = None
        for _ in range(80):
            batch = rng.randint(0, len(train_x), 64)
            value, _ = sess.run([loss, train], {x: train_x[batch], y: train_y[batch], training: True})
            first = value if first is None else first
        trained = sess.run(accuracy, {x: test_x, y: test_y})
        path = saver.save(sess, str(tmp_path / "cnn"), global_step=step)
    assert value < 0.7 * first and trained > 0.7
    with tf.Session() as fresh:
        saver.restore(fresh, path)
        assert fresh.run(accuracy, {x: test_x, y: test_y}) == trained
        assert fresh.run(step) == 80


def test_batch_normalization_as_tensorflows():
    """Values TensorFlow 2.21 gives for the same graph (outputs, gradients, moving averages)."""
    x = tf.constant(np.linspace(-2, 3, 24).reshape(2, 3, 4).astype(np.float32))
    training = tf.placeholder_with_default(True, [])
    y = tf.layers.batch_normalization(x, training=training)
    loss = tf.reduce_sum(y * y * tf.constant(np.arange(24).reshape(2, 3, 4).astype(np.float32)))
    grads = tf.gradients(loss, [x] + tf.trainable_variables())
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert sorted(v.op.name for v in tf.global_variables()) == [
        "batch_normalization/beta", "batch_normalization/gamma", "batch_normalization/moving_mean",
        "batch_normalization/moving_variance"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y)[0, 0], [-1.4635185] * 4, rtol=1e-6)
        sums = [float(np.abs(g).sum()) for g in sess.run(grads)]
        np.testing.assert_allclose(sums, [168.15231323242188, 551.7498168945312, 327.828125], rtol=1e-5)
        sess.run(updates)
        mean, variance = sess.run(tf.global_variables()[2:])
        np.testing.assert_allclose(mean, [0.00173913, 0.00391304, 0.00608696, 0.00826087], rtol=1e-5)
        np.testing.assert_allclose(variance, [1.0120542] * 4, rtol=1e-6)
        np.testing.assert_allclose(sess.run(y, {training: False})[0, 0], [-1.9888002, -1.774974, -1.5611476,
                                                                         -1.3473214], rtol=1e-6)


def test_basic_lstm_static_rnn_as_tensorflows():
    """An LSTM over 4 steps with fixed weights: TensorFlow 2.21's outputs and gradients."""
    steps = [tf.constant(np.full((2, 3), t, np.float32)) for t in range(4)]
    cell = tf.nn.rnn_cell.BasicLSTMCell(5)
    outputs, state = tf.nn.static_rnn(cell, steps, dtype=tf.float32)
    variables = tf.global_variables()
    assert sorted(v.op.name for v in variables) == ["rnn/basic_lstm_cell/bias", "rnn/basic_lstm_cell/kernel"]
    assert outputs[-1].shape.as_list() == [2, 5] and isinstance(state, tf.nn.rnn_cell.LSTMStateTuple)
    fixed = [v.assign(np.linspace(-1, 1, v.shape.num_elements()).reshape(v.shape.as_list()).astype(np.float32))
             for v in variables]
    grads = tf.gradients(tf.reduce_sum(outputs[-1]), variables)
    with tf.Session() as sess:
        sess.run(fixed)
        np.testing.assert_allclose(sess.run(outputs[-1])[0], [-5.9630115e-06, -9.5303712e-06, -1.5248571e-05,
                                                               -2.4366116e-05, -3.8758673e-05], rtol=2e-4)
        sums = [float(np.abs(g).sum()) for g in sess.run(grads)]
    np.testing.assert_allclose(sums, [0.0036488305777311325, 0.0004655189113691449], rtol=1e-4)


def test_dilated_convolutions_are_tensorflows():
    x = tf.constant(np.arange(2 * 7 * 6 * 3, dtype=np.float32).reshape(2, 7, 6, 3) / 100 - 0.6)
    f = tf.constant(np.arange(3 * 2 * 3 * 4, dtype=np.float32).reshape(3, 2, 3, 4) / 40 - 0.5)
    fd = tf.constant(np.arange(3 * 3 * 3 * 2, dtype=np.float32).reshape(3, 3, 3, 2) / 30 - 0.4)
    a = tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME", dilations=[1, 2, 3, 1])
    b = tf.nn.conv2d(x, f, [1, 1, 1, 1], "VALID", dilations=[1, 2, 2, 1])
    c = tf.nn.atrous_conv2d(x, f, 2, "SAME")
    d = tf.nn.depthwise_conv2d(x, fd, [1, 1, 1, 1], "SAME", rate=[2, 2])
    loss = tf.reduce_sum(tf.square(a)) + tf.reduce_sum(b) + tf.reduce_sum(tf.square(d))
    grads = tf.gradients(loss, [x, f, fd])
    assert b.shape.as_list() == [2, 3, 4, 4]
    # TensorFlow 2.21's for the same graph: shape, sum of |values|, first values.
    want = [((2, 7, 6, 4), 1244.927978515625, [-1.352000117301941, -1.4045000076293945, -1.4570001363754272]),
            ((2, 3, 4, 4), 696.3480224609375, [1.4249998331069946, 1.3349997997283936, 1.244999885559082]),
            ((2, 7, 6, 4), 1418.4189453125, [-1.4960001707077026, -1.5530000925064087, -1.6100001335144043]),
            ((2, 7, 6, 6), 1186.7406005859375, [-1.0200001001358032, -1.0720000267028809, -1.0893335342407227]),
            ((2, 7, 6, 3), 23606.970703125, [-13.711690902709961, -14.46696949005127, -15.36180305480957]),
            ((3, 2, 3, 4), 35133.6328125, [217.97386169433594, 240.97784423828125, 263.9818420410156]),
            ((3, 3, 3, 2), 16000.111328125, [105.05448150634766, 117.66682434082031, 132.64251708984375])]
    with tf.Session() as sess:
        got = sess.run([a, b, c, d] + grads)
    for value, (shape, total, first) in zip(got, want):
        assert value.shape == shape
        assert float(np.abs(value).sum()) == pytest.approx(total, rel=1e-5)
        np.testing.assert_allclose(value.ravel()[:3], first, rtol=1e-5)
    layer = tf.layers.conv2d(x, 4, 3, padding="same", dilation_rate=2)
    assert layer.shape.as_list() == [2, 7, 6, 4]
    with pytest.raises(ValueError, match="Dilations must be positive"):
        tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME", dilations=[2, 1, 1, 1])

