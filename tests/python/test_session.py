"""Sessions: fetch structures, feeds from NumPy, errors of TensorFlow's classes, a graph
that grows after the session is made, and many threads stepping one session."""

import collections
import gc
import json
import threading
import types

import numpy as np
import pytest

import tessera
import tessera.compat.v1 as tf
from tessera import timeline


def test_fetches_keep_their_structure():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    a, d, s = x + 1.0, x * 2, tf.reduce_sum(x)
    v = tf.Variable(1.0, name="v")
    P = collections.namedtuple("P", "p q")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run({"a": [a, (d,)], "n": P(s, v), "op": v.initializer, "by_name": "x:0"},
                       {x: [[1, 2], [3, 4]]})
    np.testing.assert_array_equal(out["a"][0], [[2, 3], [4, 5]])
    np.testing.assert_array_equal(out["a"][1][0], [[2, 4], [6, 8]])
    assert isinstance(out["a"][1], tuple) and isinstance(out["n"], P)
    assert out["n"].p == 10.0 and type(out["n"].p) is np.float32 and out["n"].q == 1.0
    assert out["op"] is None
    np.testing.assert_array_equal(out["by_name"], [[1, 2], [3, 4]])


def test_repeated_steps_reuse_their_plan_and_still_see_each_feed():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.placeholder(tf.float32, [2], name="y")
    total = x + 2 * y
    with tf.Session() as sess:
        # The same fetches and keys make one plan; each step's values are its own, and keys
        # in another order (another plan) pair each value with its own placeholder.
        for k in range(3):
            np.testing.assert_array_equal(sess.run([total], {x: [k, 0], y: [0, k]})[0], [k, 2 * k])
        np.testing.assert_array_equal(sess.run([total], {y: [1, 1], x: [5, 5]})[0], [7, 7])
        assert len(sess._plans) == 2
        # A graph grown since keeps the plans, and what it gained is fetched by new ones.
        more = total * 10
        np.testing.assert_array_equal(sess.run(more, {x: [1, 1], y: [0, 0]}), [10, 10])
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            sess.run([total], {x: [1, 2, 3], y: [0, 0]})


def test_feeds_are_converted_to_the_placeholders_dtype():
    x = tf.placeholder(tf.float32, [None, 2])
    i = tf.placeholder(tf.int64, [])
    s = tf.placeholder(tf.string, [2])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(x, {x: [[1, 2]]}), [[1, 2]])
        np.testing.assert_array_equal(sess.run(x, {x: np.ones((1, 2), np.float64)}), [[1, 1]])
        strided = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
        np.testing.assert_array_equal(sess.run(x, {x: strided}), strided)
        readonly = np.ones((2, 2), np.float32)
        readonly.flags.writeable = False
        np.testing.assert_array_equal(sess.run(x * 2, {x: readonly}), 2 * readonly)
        assert sess.run(i, {i: 7}) == 7
        assert list(sess.run(s, {s: ["a", b"b"]})) == [b"a", b"b"]
        swapped = np.array([[1.5, -2]], dtype=">f4")
        np.testing.assert_array_equal(sess.run(x, {x: swapped}), [[1.5, -2]])
        unaligned = np.frombuffer(b"\0" + np.array([[3.0, 4.0]], np.float32).tobytes(), np.float32, offset=1)
        assert not unaligned.flags.aligned
        np.testing.assert_array_equal(sess.run(x, {x: unaligned.reshape(1, 2)}), [[3.0, 4.0]])
        assert sess.run(i, types.MappingProxyType({i: 3})) == 3  # any mapping, as TensorFlow's
        # The keys' iteration order, not a dict's storage order, pairs values with feeds.
        a, b = tf.placeholder(tf.float32, [2]), tf.placeholder(tf.float32, [2])
        moved = collections.OrderedDict([(a, np.ones(2, np.float32)), (b, np.full(2, 5, np.float32))])
        moved.move_to_end(a)
        np.testing.assert_array_equal(sess.run(a - b, moved), [-4, -4])
        # Fed arrays are lent to the step, not copied.
        for rows in (1, 4096):
            value = np.arange(2 * rows, dtype=np.float32).reshape(rows, 2)
            out = sess.run(x + 1, {x: value})
            value[:] = 0  # the step is over: what it was fed is the caller's again
            np.testing.assert_array_equal(out, np.arange(2 * rows).reshape(rows, 2) + 1)


def test_bad_feeds_name_the_placeholder():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = x + 1
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor x:0, which has "
                                             r"shape \(None, 2\)"):
            sess.run(y, {x: [1, 2, 3]})
        with pytest.raises(ValueError, match="x:0"):
            sess.run(y, {x: [["a", "b"]]})
        with pytest.raises(TypeError, match="cannot be a tf.Tensor"):
            sess.run(y, {x: y})
        with pytest.raises(tf.errors.InvalidArgumentError) as err:
            sess.run(y)
        assert err.value.error_code == tf.errors.INVALID_ARGUMENT
        assert err.value.node_name == "x"
        np.testing.assert_array_equal(sess.run(y, {x: [[1, 1]]}), [[2, 2]])  # still working


def test_engine_errors_are_tensorflows_classes():
    v = tf.Variable(1.0, name="v")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as err:
            sess.run(v)
        assert "v" in str(err.value)
        with pytest.raises(ValueError, match="Fetch argument 'nothing:0' cannot be interpreted as a Tensor"):
            sess.run("nothing:0")
        with pytest.raises(tf.errors.FailedPreconditionError) as err:
            sess.run(v + 1.0)
        assert err.value.op.name == "v/read"  # the node the engine named, as in TensorFlow's error
    sess = tf.Session()
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(v)


def test_the_graph_may_grow_after_the_session_is_made():
    v = tf.Variable(5.0, name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        bump = v.assign_add(2.0)  # made after the session
        assert sess.run(bump) == 7.0
        assert sess.run(tf.constant(1.0) + v) == 8.0
        nodes = [r["node"] for r in tessera.placement(sess)]
        assert "v" in nodes and bump.op.name in nodes


def test_placement_is_data():
    with tf.device("/cpu:1"):
        a = tf.constant(1.0, name="a")
    with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
        records = {r["node"]: r for r in tessera.placement(sess)}
        assert records["a"]["device"].endswith("/device:CPU:1")
        assert records["a"]["reason"] == "requested"
        meta = tf.RunMetadata()
        sess.run(a, run_metadata=meta)
        assert any(r["node"] == "a" for r in meta.placement)


def test_interactive_session_and_eval():
    sess = tf.InteractiveSession()
    try:
        assert tf.constant(3.0).eval() == 3.0
        c = tf.constant([1, 2])
        np.testing.assert_array_equal(c.eval(), [1, 2])
        assert tf.get_default_session() is sess
    finally:
        sess.close()
    assert tf.get_default_session() is None
    with pytest.raises(ValueError, match="No default session"):
        tf.constant(1.0).eval()


def test_a_fetched_array_outlives_its_session():
    x = tf.placeholder(tf.float32, [None])
    y = x * 3
    sess = tf.Session()
    out = sess.run(y, {x: np.arange(1 << 16, dtype=np.float32)})
    sess.close()
    del sess
    gc.collect()
    np.testing.assert_array_equal(out[:4], [0, 3, 6, 9])
    out[0] = 42  # the array's own memory
    assert out[0] == 42


def test_fetching_a_fed_tensor_copies_it():
    x = tf.placeholder(tf.float32, [3])
    fed = np.array([1, 2, 3], np.float32)
    with tf.Session() as sess:
        out = sess.run(tf.identity(x), {x: fed})
    assert not np.shares_memory(out, fed)
    fed[0] = 9
    assert out[0] == 1


def test_many_threads_step_one_session():
    x = tf.placeholder(tf.float32, [])
    y = x * 2 + 1
    failures = []
    with tf.Session() as sess:
        def step(k):
            for i in range(200):
                got = sess.run(y, {x: float(k * 1000 + i)})
                if got != 2 * (k * 1000 + i) + 1:
                    failures.append((k, i, got))
        threads = [threading.Thread(target=step, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []


def test_run_metadata_traces_the_step_and_its_partitions():
    x = tf.placeholder(tf.float32, [2, 2], name="x")
    with tf.device("/cpu:1"):
        y = tf.matmul(x, x, name="product")
    z = tf.add(y, 1.0, name="z")
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, output_partition_graphs=True)
    meta = tf.RunMetadata()
    with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
        np.testing.assert_array_equal(sess.run(z, {x: np.eye(2)}, options=options, run_metadata=meta), np.eye(2) + 1)
        plain = tf.RunMetadata()
        sess.run(z, {x: np.eye(2)}, run_metadata=plain)  # no trace asked: none made
    by_device = {d.device: d for d in meta.step_stats.dev_stats}
    assert set(by_device) == {"/job:localhost/replica:0/task:0/device:CPU:0",
                              "/job:localhost/replica:0/task:0/device:CPU:1"}
    product = [n for n in by_device["/job:localhost/replica:0/task:0/device:CPU:1"].node_stats
               if n.node_name == "product"]
    assert len(product) == 1 and product[0].timeline_label == "product = MatMul()"
    assert product[0].all_start_micros > 1.7e15 and product[0].all_end_rel_micros >= 0
    # One graph per device, the cross-device edge split into a _Send/_Recv pair.
    assert len(meta.partition_graphs) == 2
    assert all(b"_Send" in g.SerializeToString() or b"_Recv" in g.SerializeToString() for g in meta.partition_graphs)
    trace = json.loads(timeline.Timeline(meta.step_stats).generate_chrome_trace_format())
    assert any(e.get("args", {}).get("name") == "product" or e.get("name") == "product" for e in trace["traceEvents"])
    assert plain.step_stats.dev_stats == [] and plain.partition_graphs == []
