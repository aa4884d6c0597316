"""What TF1 tutorials and scripts do that a review of the package found broken: each case
with the value TensorFlow 2.21's tf.compat.v1 gives (recorded here)."""

import subprocess
import sys
import threading

import numpy as np
import pytest

import tessera.compat.v1 as tf


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def test_linear_regression_with_tf_pow_trains():
    w = tf.Variable(1.0)
    cost = tf.reduce_sum(tf.pow(w * 2.0 - 3.0, 2))
    step = tf.train.GradientDescentOptimizer(0.01).minimize(cost)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        assert sess.run(w) == pytest.approx(1.04)  # TensorFlow: 1.04


def test_gradients_of_gather_slices_and_stacks():
    table = tf.Variable(tf.ones([5, 3]))
    looked_up = tf.nn.embedding_lookup(table, tf.constant([1, 1, 4]))
    x = tf.Variable(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    y = tf.reduce_sum(looked_up * 2.0) + tf.reduce_sum(x[1:, ::2] * 3.0) + tf.reduce_sum(tf.stack([x, x]) * 0.5)
    d_table, d_x = run(tf.gradients(y, [table, x]))
    # TensorFlow gives the table's as IndexedSlices; dense, they are these rows.
    np.testing.assert_array_equal(d_table, [[0, 0, 0], [4, 4, 4], [0, 0, 0], [0, 0, 0], [2, 2, 2]])
    np.testing.assert_array_equal(d_x, [[1, 1, 1, 1], [4, 1, 4, 1], [4, 1, 4, 1]])


def test_batch_norm_updates_under_control_dependencies_with_adam():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.layers.batch_normalization(x, training=True)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        step = tf.train.AdamOptimizer().minimize(tf.reduce_sum(y * y))
    moving_mean = [v for v in tf.global_variables() if v.name == "batch_normalization/moving_mean:0"][0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())  # the slots wait on no batch norm update
        sess.run(step, {x: np.arange(6.0).reshape(2, 3)})
        np.testing.assert_allclose(sess.run(moving_mean), [0.015, 0.025, 0.035], rtol=1e-6)  # TensorFlow's


def test_a_variable_read_under_control_dependencies_sees_the_update():
    v = tf.Variable(0.0)
    inc = tf.assign_add(v, 1.0)
    with tf.control_dependencies([inc]):
        out = tf.identity(v)
        doubled = v * 2.0
    w = tf.Variable(0.0)
    with tf.control_dependencies([w.assign(w + 5)]):
        made = tf.Variable(7.0)  # made under the dependency, it waits on nothing
        w2 = w * 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert [sess.run(out), sess.run(out), sess.run(doubled)] == [1.0, 2.0, 6.0]  # TensorFlow: 1, 2, 6
        assert sess.run(w2) == 10.0
        assert sess.run(made) == 7.0 and sess.run(w) == 5.0


def test_static_rnn_lstm_keeps_static_shapes_and_trains():
    x = tf.placeholder(tf.float32, [None, 4, 3])
    outputs, state = tf.nn.static_rnn(tf.nn.rnn_cell.BasicLSTMCell(8), tf.unstack(x, 4, 1), dtype=tf.float32)
    assert outputs[-1].shape.as_list() == [None, 8] and state.c.shape.as_list() == [None, 8]
    loss = tf.reduce_sum(tf.layers.dense(outputs[-1], 2))
    step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(loss, {x: np.ones((2, 4, 3))})
        sess.run(step, {x: np.ones((2, 4, 3))})
        assert sess.run(loss, {x: np.ones((2, 4, 3))}) < before


def test_set_shape_reaches_the_ops_made_after_it():
    x = tf.placeholder(tf.float32)
    x.set_shape([None, 5])
    assert tf.negative(x).shape.as_list() == [None, 5]
    with pytest.raises(ValueError):
        x.set_shape([2, 4])


def test_lists_mixing_tensors_and_numbers_are_packed():
    x = tf.placeholder(tf.float32, [None, 3])
    n = tf.shape(x)[0]
    out = run([tf.reshape(x, [n, -1]), tf.zeros([n, 2]), tf.ones([n, 2]), tf.convert_to_tensor([n, 3])],
              {x: np.ones((4, 3))})
    assert [o.shape for o in out] == [(4, 3), (4, 2), (4, 2), (2,)]
    np.testing.assert_array_equal(out[3], [4, 3])


def test_ops_and_helpers_by_their_tensorflow_names():
    a, b = tf.Variable(1.0), tf.Variable(2.0)
    grouped = tf.group(a.assign(3.0), [b.assign(4.0)])
    m = tf.constant([[3.0, 1.0, 2.0], [0.5, 4.0, 0.5]])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([grouped, tf.no_op()])
        assert sess.run([a, b]) == [3.0, 4.0]
        np.testing.assert_array_equal(sess.run(tf.argmin(m, 1)), [1, 0])  # ties: the first
        np.testing.assert_array_equal(sess.run(tf.arg_min(m, 0)), [1, 0, 1])
        np.testing.assert_array_equal(sess.run(tf.pad(tf.constant([[1, 2]]), [[1, 0], [0, 1]])), [[0, 0, 0], [1, 2, 0]])
        np.testing.assert_array_equal(sess.run(tf.pad(tf.constant([1, 2]), [[1, 1]], constant_values=9)), [9, 1, 2, 9])
        np.testing.assert_array_equal(sess.run(tf.slice(m, [1, 1], [1, -1])), [[4.0, 0.5]])
        np.testing.assert_array_equal(sess.run(tf.broadcast_to(tf.constant([1, 2]), [2, 2])), [[1, 2], [1, 2]])
        np.testing.assert_allclose(sess.run(tf.einsum("ij,kj->ik", m, m)), np.einsum("ij,kj->ik", *[m.eval()] * 2))
        assert sess.run(tf.div(tf.constant([7, -7]), 2)).tolist() == [3, -4]  # TF1's floor for integers
        assert sess.run(tf.div(7.0, 2.0)) == 3.5
        ints = sess.run(tf.random_uniform([1000], -3, 5, dtype=tf.int32, seed=1))
        assert ints.dtype == np.int32 and ints.min() == -3 and ints.max() == 4
        assert sess.run(tf.losses.sparse_softmax_cross_entropy(labels=tf.constant([0, 2]),
                                                               logits=tf.ones([2, 3]))) == pytest.approx(1.0986123)
    assert tf.one_hot(tf.placeholder(tf.int32, [None]), 5).shape.as_list() == [None, 5]


def test_one_hot_along_any_axis():
    indices = np.array([[0, 2], [1, -1], [3, 1]], np.int32)
    with tf.Session() as sess:
        for axis in (-1, 0, 1, 2):
            got = tf.one_hot(indices, 4, on_value=5.0, off_value=-1.0, axis=axis)
            want = np.where(np.arange(4)[:, None, None] == indices[None], 5.0, -1.0)  # axis 0
            want = np.moveaxis(want, 0, 2 if axis == -1 else axis)
            assert got.shape.as_list() == list(want.shape)
            np.testing.assert_array_equal(sess.run(got), want)
    with pytest.raises(ValueError, match=r"between \[0, 3\)"):
        tf.one_hot(indices, 4, axis=3)


def test_reuse_variables_and_checkpoint_state(tmp_path):
    with tf.variable_scope("model") as scope:
        w = tf.get_variable("w", [2])
        scope.reuse_variables()
        assert tf.get_variable("w", [2]) is w
    with tf.Session() as sess:
        sess.run(w.initializer)
        tf.train.Saver().save(sess, str(tmp_path / "model"))
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state and state.model_checkpoint_path == str(tmp_path / "model")
    assert list(state.all_model_checkpoint_paths) == [str(tmp_path / "model")]


def test_optimizer_slots_by_tensorflows_names():
    w = tf.Variable([1.0, 2.0], name="w")
    loss = tf.reduce_sum(w * w)
    adam, momentum = tf.train.AdamOptimizer(), tf.train.MomentumOptimizer(0.1, 0.9)
    adam.minimize(loss)
    momentum.minimize(loss)
    assert adam.get_slot_names() == ["m", "v"] and momentum.get_slot_names() == ["momentum"]
    assert adam.get_slot(w, "m").name == "w/Adam:0" and adam.get_slot(w, "v").name == "w/Adam_1:0"
    assert momentum.get_slot(w, "momentum").name == "w/Momentum:0"
    assert [v.name for v in adam.variables()] == ["beta1_power:0", "beta2_power:0", "w/Adam:0", "w/Adam_1:0"]


def test_the_smaller_names_scripts_call():
    a = tf.Variable(2.0)
    b = tf.Variable(a.initialized_value() * 3)  # whatever order the initializers run in
    x = tf.placeholder(tf.float32, [2])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(b) == 6.0
        double = sess.make_callable(x * 2, [x])
        np.testing.assert_array_equal(double(np.array([1.0, 2.0], np.float32)), [2.0, 4.0])
        assert [d.device_type for d in sess.list_devices()] == ["CPU"]
        assert sess.list_devices()[0].name.endswith("/device:CPU:0")
        p, q = tf.constant([True, True, False]), tf.constant([True, False, False])
        assert sess.run(p ^ q).tolist() == [False, True, False]
    assert isinstance(tf.__version__, str)
    assert x.op.values() == (x,)
    assert tf.TensorShape([None, 2]).concatenate([3]).as_list() == [None, 2, 3]
    assert tf.int32.max == 2**31 - 1 and tf.uint8.min == 0 and tf.float32.max == np.finfo(np.float32).max


def test_one_iterator_switched_between_datasets_from_structure():
    train = tf.data.Dataset.from_tensor_slices((np.arange(4.0, dtype=np.float32), np.arange(4))).batch(2)
    valid = tf.data.Dataset.from_tensor_slices((np.full(3, 9.0, np.float32), np.zeros(3, np.int64))).batch(3)
    iterator = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    x, y = iterator.get_next()
    with tf.Session() as sess:
        sess.run(iterator.make_initializer(train))
        assert sess.run(x).tolist() == [0.0, 1.0]
        sess.run(iterator.make_initializer(valid))
        assert sess.run(x).tolist() == [9.0, 9.0, 9.0]
    with pytest.raises(ValueError, match="does not have an initializer"):
        _ = iterator.initializer
    with pytest.raises(TypeError, match="Expected output types"):
        iterator.make_initializer(tf.data.Dataset.from_tensor_slices(np.arange(3.0)))


def test_an_assign_inside_a_cond_branch_runs_only_when_taken():
    v = tf.Variable(0)
    p = tf.placeholder(tf.bool)

    def taken():
        with tf.control_dependencies([tf.assign_add(v, 1)]):
            return tf.constant(1)
    y = tf.cond(p, taken, lambda: tf.assign_add(v, 10))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(y, {p: True}) == 1 and sess.run(v) == 1
        assert sess.run(y, {p: False}) == 11 and sess.run(v) == 11  # TensorFlow: 1, 1, 11, 11


def test_a_graph_defs_nodes_can_be_read():
    x = tf.placeholder(tf.float32, name="in")
    tf.multiply(x, 3.0, name="out")
    graph_def = tf.get_default_graph().as_graph_def()
    assert [(n.name, n.op) for n in graph_def.node] == [("in", "Placeholder"), ("Const", "Const"), ("out", "Mul")]
    assert graph_def.node[2].input == ["in", "Const"] and graph_def.node[0].attr["dtype"] == "float32"
    again = tf.GraphDef()
    again.ParseFromString(graph_def.SerializeToString())
    assert [n.name for n in again.node] == ["in", "Const", "out"]


def test_a_node_defs_attrs_read_as_attr_values():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    tf.constant([[1.5, 2.0]], name="c")
    tf.constant(["a", "bc"], name="words")
    tf.nn.conv2d(tf.zeros([1, 4, 4, 1]), tf.zeros([2, 2, 1, 1]), [1, 2, 2, 1], "SAME", name="conv")
    tf.reduce_sum(x, 1, keepdims=True, name="sum")
    nodes = {n.name: n for n in tf.get_default_graph().as_graph_def().node}
    placeholder = nodes["x"].attr
    assert placeholder["dtype"].type == tf.float32.as_datatype_enum == 1
    assert placeholder["dtype"].WhichOneof("value") == "type" and tf.as_dtype(placeholder["dtype"].type) == tf.float32
    assert [d.size for d in placeholder["shape"].shape.dim] == [-1, 3] and not placeholder["shape"].shape.unknown_rank
    value = nodes["c"].attr["value"].tensor
    assert value.dtype == 1 and [d.size for d in value.tensor_shape.dim] == [1, 2]
    np.testing.assert_array_equal(tf.make_ndarray(value), [[1.5, 2.0]])
    assert tf.make_ndarray(nodes["words"].attr["value"].tensor).tolist() == [b"a", b"bc"]
    conv = nodes["conv"].attr
    assert conv["padding"].s == b"SAME" and conv["strides"].list.i == [1, 2, 2, 1] and conv["strides"].list.s == []
    assert conv["T"].type == tf.float32.as_datatype_enum and conv["padding"].i == 0
    assert nodes["sum"].attr["keep_dims"].b is True and nodes["sum"].attr["keep_dims"].HasField("b")


def test_second_derivatives_and_slices_of_a_batch():
    x = tf.placeholder(tf.float32)
    y = x ** 3 + 2 * x
    first = tf.gradients(y, x)[0]
    second = tf.gradients(first, x)[0]
    assert run([first, second], {x: 2.0}) == [14.0, 12.0]  # TensorFlow: 14, 12
    batch = tf.placeholder(tf.float32, [None, 4])
    assert batch[:, 1:3].shape.as_list() == [None, 2]
    assert batch[:5].shape.as_list() == [None, 4]  # 3 rows give 3: what it takes of the batch is unknown
    assert run(batch[:5], {batch: np.ones((3, 4))}).shape == (3, 4)
    # d/dx of d(x**y)/dy: 0 where x <= 0 (no NaN from the log TensorFlow also keeps away).
    base, power = tf.constant([0.0, -1.0, 2.0]), tf.constant([2.0, 2.0, 2.0])
    mixed = tf.gradients(tf.gradients(tf.reduce_sum(tf.pow(base, power)), power)[0], base)[0]
    np.testing.assert_allclose(run(mixed), [0.0, 0.0, 4 * np.log(2.0) + 2], rtol=1e-6)


def test_softmax_over_any_axis_and_constants_filled_out():
    logits = np.array([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]], np.float32)
    expected = np.exp(logits) / np.exp(logits).sum(axis=0)
    out, log_out = run([tf.nn.softmax(logits, axis=0), tf.nn.log_softmax(logits, dim=0)])
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    np.testing.assert_allclose(log_out, np.log(expected), rtol=1e-5)
    # TensorFlow 1.x fills a shape longer than the values with the last one.
    assert run(tf.constant([1, 2, 3, 4, 5, 6, 7], shape=[2, 4])).tolist() == [[1, 2, 3, 4], [5, 6, 7, 7]]
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        tf.constant([1, 2, 3], shape=[1, 2])


def test_py_func_runs_python_in_the_step():
    x = tf.placeholder(tf.float32, [None])
    calls = []

    def scaled(values, factor):
        calls.append(values.copy())
        return values * factor, np.int64(len(values))

    doubled, count = tf.py_func(scaled, [x, tf.constant(2.0)], [tf.float32, tf.int64])
    total = tf.reduce_sum(doubled) + tf.cast(count, tf.float32)
    wrong = tf.py_func(lambda v: v.astype(np.float64), [x], tf.float32, name="wrong")
    raising = tf.numpy_function(lambda v: v[10], [x], tf.float32)
    words = tf.py_func(lambda: np.array([b"a", b"bc"]), [], tf.string)
    with tf.Session() as sess:
        assert sess.run(total, {x: [1.0, 2.0]}) == 8.0
        assert calls[0].tolist() == [1.0, 2.0]
        with pytest.raises(tf.errors.InvalidArgumentError, match="0-th value returned by .*'wrong'.* is float64, "
                                                                 "but expects float32"):
            sess.run(wrong, {x: [1.0]})
        with pytest.raises(tf.errors.OutOfRangeError, match="IndexError"):
            sess.run(raising, {x: [1.0]})
        assert sess.run(words).tolist() == [b"a", b"bc"]
        # Steps from several threads, each taking the GIL in its PyFunc.
        results = []
        threads = [threading.Thread(target=lambda v=v: results.append(sess.run(total, {x: [v] * 3})))
                   for v in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(results) == [3.0 + 6.0 * v for v in range(8)]


def test_what_a_review_against_tensorflow_found():
    # Fill (a zero state sized by a tensor) and PyFunc: TF's gradients.
    x = tf.Variable(np.ones((2, 3), np.float32))
    grads = tf.gradients(tf.reduce_sum(x + tf.zeros([tf.shape(x)[0], 3])), x)
    w = tf.constant([1.0, 2.0])
    through_py = tf.gradients(w * 3.0 + tf.py_func(lambda v: v * 2, [w], tf.float32), w)
    assert tf.gradients(tf.py_func(lambda v: v + 1, [w], tf.float32), w) == [None]
    # A loop variable that grows: Concat's gradient reads its sizes as the step runs.
    v = tf.constant([1.0])
    _, grown = tf.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, tf.concat([h, h[-1:] * 2.0], 0)), [0, v],
                             shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
    grown_grad = tf.gradients(tf.reduce_sum(grown), v)
    # back_prop=False: nothing goes through the loop.
    _, frozen = tf.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, h * 2.0), [0, v], back_prop=False)
    assert tf.gradients(frozen, v) == [None]
    # One loop variable that is a structure comes back as that structure in its list.
    out = tf.while_loop(lambda d: d["i"] < 3, lambda d: [{"i": d["i"] + 1, "x": d["x"] * 2.0}],
                        [{"i": tf.constant(0), "x": tf.constant(1.0)}])
    assert isinstance(out, list) and set(out[0]) == {"i", "x"}
    # Second-order gradients of a loop: TensorFlow refuses them, and so does Tessera.
    _, h = tf.while_loop(lambda i, h: i < 2, lambda i, h: (i + 1, h * h), [0, v])
    with pytest.raises(tf.errors.UnimplementedError, match="Second-order gradients of a tf.while_loop"):
        tf.gradients(tf.gradients(tf.reduce_sum(h), v)[0], v)
    side_effect = tf.py_func(lambda: None, [], [])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(grads[0]).tolist() == [[1.0] * 3] * 2
        assert sess.run(through_py[0]).tolist() == [3.0, 3.0]
        assert sess.run(grown_grad[0]).tolist() == [15.0]
        assert sess.run(out)[0] == {"i": 3, "x": 8.0}
        assert sess.run(side_effect) is None and isinstance(side_effect, tf.Operation)
        assert sess.run(tf.range(tf.constant(3, tf.int64))).dtype == np.int64
    assert tf.DType(1) == tf.float32 and str(tf.float32) == "<dtype: 'float32'>" and repr(tf.int64) == "tf.int64"
    tf.disable_control_flow_v2()


def test_conv2d_transpose_and_padded_batch_are_tensorflows():
    v = tf.constant(np.arange(2 * 3 * 3 * 2, dtype=np.float32).reshape(2, 3, 3, 2) / 10 - 0.8)
    f = tf.constant(np.arange(3 * 3 * 4 * 2, dtype=np.float32).reshape(3, 3, 4, 2) / 20 - 0.9)
    t = tf.nn.conv2d_transpose(v, f, [2, 6, 6, 4], [1, 2, 2, 1], "SAME")
    gv, gf = tf.gradients(tf.reduce_sum(tf.square(t)), [v, f])
    ds = tf.data.Dataset.range(1, 5).map(lambda n: tf.range(n)).padded_batch(
        3, padded_shapes=[None], padding_values=tf.constant(-1, tf.int64))
    element = tf.data.make_one_shot_iterator(ds).get_next()
    assert element.shape.as_list() == [None, None]
    # TensorFlow 2.21's: shape, sum of |values|, first values.
    want = [((2, 6, 6, 4), 785.6000366210938, [1.3149999380111694, 1.1649999618530273, 1.0149999856948853]),
            ((2, 3, 3, 2), 6407.43994140625, [-235.29598999023438, -240.5439910888672, -234.58799743652344]),
            ((3, 3, 4, 2), 10561.537109375, [117.52201080322266, 120.10601806640625, 153.99000549316406])]
    with tf.Session() as sess:
        for value, (shape, total, first) in zip(sess.run([t, gv, gf]), want):
            assert value.shape == shape
            assert float(np.abs(value).sum()) == pytest.approx(total, rel=1e-5)
            np.testing.assert_allclose(value.ravel()[:3], first, rtol=1e-5)
        assert sess.run(element).tolist() == [[0, -1, -1], [0, 1, -1], [0, 1, 2]]
        assert sess.run(element).tolist() == [[0, 1, 2, 3]]


def test_a_script_with_py_funcs_ends_cleanly():
    # A function holds its module's globals, which hold the session that holds it: the
    # package lets go of the functions at exit, so nothing is left for nanobind to report.
    script = ("import tessera.compat.v1 as tf\n"
              "s = tf.Session()\n"
              "print(s.run(tf.py_func(lambda x: x * 2, [tf.constant(1.5)], tf.float32)))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "3.0", done.stderr
    assert "leaked" not in done.stderr, done.stderr

