"""tf.compat.v1.train.Saver in TensorFlow's checkpoint format: round trips, the state file,
max_to_keep, a checkpoint TensorFlow's own Saver wrote, and bad paths."""

import os
import pathlib

import numpy as np
import pytest

import tessera.compat.v1 as tf

TF_WRITTEN = pathlib.Path(__file__).resolve().parents[1] / "testdata" / "tf_checkpoints" / "v1" / "model.ckpt"


def test_save_restore_and_the_state_file(tmp_path):
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    n = tf.Variable(7, name="count", dtype=tf.int64)
    saver = tf.train.Saver(max_to_keep=2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        paths = [saver.save(sess, str(tmp_path / "model"), global_step=s) for s in (1, 2, 3)]
        assert paths[-1] == str(tmp_path / "model-3")
        assert tf.train.latest_checkpoint(str(tmp_path)) == paths[-1]
        # max_to_keep: the oldest is gone, files and all.
        assert not os.path.exists(paths[0] + ".index") and os.path.exists(paths[1] + ".index")
        assert saver.last_checkpoints == paths[1:]
        sess.run([w.assign(tf.zeros([2, 3])), n.assign(0)])
        saver.restore(sess, paths[-1])
        got_w, got_n = sess.run([w, n])
    np.testing.assert_array_equal(got_w, np.arange(6).reshape(2, 3))
    assert got_n == 7
    state = (tmp_path / "checkpoint").read_text()
    assert 'model_checkpoint_path: "model-3"' in state
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert {"save/Const", "save/SaveV2", "save/control_dependency", "save/RestoreV2", "save/restore_all"} <= set(names)


def test_restores_what_tensorflows_saver_wrote():
    want = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 4, "f64": np.arange(3, dtype=np.float64) - 1.5,
            "i64": np.array([1 << 40, -3], dtype=np.int64), "u8": np.arange(250, 256, dtype=np.uint8),
            "b": np.array([True, False, True])}
    variables = {k: tf.Variable(np.zeros_like(v), name=k) for k, v in want.items()}
    saver = tf.train.Saver(variables)
    with tf.Session() as sess:
        saver.restore(sess, str(TF_WRITTEN))
        got = sess.run(variables)
    for k, v in want.items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)


def test_bad_paths_are_errors_and_the_session_goes_on(tmp_path):
    v = tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.NotFoundError, match="not a valid checkpoint"):
            saver.restore(sess, str(tmp_path / "nothing"))
        with pytest.raises(ValueError, match="doesn't exist"):
            saver.save(sess, str(tmp_path / "no" / "such" / "dir" / "m"))
        broken = tmp_path / "broken"
        (tmp_path / "broken.index").write_bytes(b"not a table")
        with pytest.raises(tf.errors.OpError):
            saver.restore(sess, str(broken))
        assert sess.run(v) == 1.0
        assert tf.train.latest_checkpoint(str(tmp_path)) is None


def test_a_meta_graph_written_beside_the_checkpoint_restores_in_a_fresh_graph(tmp_path):
    # The TF1 way to pick a model up again: import_meta_graph, then restore.
    prefix = str(tmp_path / "model")
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable([[1.0], [2.0]], name="w")
        step = tf.Variable(0, trainable=False, name="step")
        tf.matmul(x, w, name="y")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run([w.assign([[3.0], [4.0]]), step.assign(7)])
            tf.train.Saver(max_to_keep=2).save(sess, prefix)
    assert os.path.isfile(prefix + ".meta")
    with tf.Graph().as_default() as graph:
        saver = tf.train.import_meta_graph(prefix + ".meta", clear_devices=True)
        assert [v.name for v in tf.global_variables()] == ["w:0", "step:0"]
        assert [v.name for v in tf.trainable_variables()] == ["w:0"]
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            y = sess.run("y:0", {graph.get_tensor_by_name("x:0"): [[1.0, 1.0]]})
            assert y.tolist() == [[7.0]] and sess.run("step:0") == 7
            # The imported saver saves too, and its variables initialize.
            sess.run(tf.global_variables_initializer())
            saver.save(sess, str(tmp_path / "again"))
    with tf.Graph().as_default():
        scoped = tf.train.import_meta_graph(prefix + ".meta", import_scope="imported")
        again = tf.train.import_meta_graph(prefix + ".meta", import_scope="imported")  # takes imported_1/
        with tf.name_scope("outer"):
            nested = tf.train.import_meta_graph(prefix + ".meta", import_scope="imported")
        assert [v.name for v in tf.global_variables()][::2] == ["imported/w:0", "imported_1/w:0", "outer/imported/w:0"]
        with tf.Session() as sess:
            for saver, scope in ((scoped, "imported"), (again, "imported_1"), (nested, "outer/imported")):
                saver.restore(sess, prefix)
                assert sess.run(scope + "/w:0").tolist() == [[3.0], [4.0]]
    # A meta graph without a saver: TensorFlow's import gives a new Saver of its variables.
    with tf.Graph().as_default():
        tf.Variable([[0.0], [0.0]], name="w")
        tf.Variable(0, name="step")
        bare = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(bare)
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            assert sess.run("step:0") == 7


def test_a_damaged_meta_graph_is_data_loss_naming_the_file(tmp_path):
    path = tmp_path / "bad.meta"
    with tf.Graph().as_default():
        tf.Variable(1.0, name="v")
        tf.train.Saver()
        good = tf.train.export_meta_graph()
    for damaged, why in ((good[:len(good) // 2], r"byte offset \d+ is truncated"),
                         (good[:-3] + b"\xff\xff\xff", "is not a VariableDef")):
        path.write_bytes(damaged)
        with tf.Graph().as_default():
            with pytest.raises(tf.errors.DataLossError, match=r"meta graph '.*bad.meta': .*" + why):
                tf.train.import_meta_graph(str(path))
            assert tf.get_default_graph().get_operations() == []  # nothing half-imported
    with tf.Graph().as_default():
        assert tf.train.import_meta_graph(good) is not None
