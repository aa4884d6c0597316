"""tf.compat.v1.summary and FileWriter, read back with TensorBoard's own event reader: names
and tags as TensorFlow 2.21 gives them (recorded here), scalars, histograms, images and the
graph through a training loop, Python-made Summaries, and bad input."""

import threading
import time

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator

import tessera.compat.v1 as tf


def read_events(logdir):
    keep_all = {kind: 0 for kind in (event_accumulator.SCALARS, event_accumulator.HISTOGRAMS, event_accumulator.IMAGES)}
    acc = event_accumulator.EventAccumulator(str(logdir), size_guidance=keep_all)
    acc.Reload()
    return acc


def test_names_and_tags_are_tensorflows():
    x = tf.placeholder(tf.float32, name="x")
    s1 = tf.summary.scalar("loss", x)
    with tf.name_scope("outer"):
        s2 = tf.summary.scalar("loss", x, family="fam")
        s3 = tf.summary.histogram("h", x)
    s4 = tf.summary.scalar("loss", x)
    merged = tf.summary.merge_all()
    # TensorFlow 2.21's op names, collection and tags for the same calls.
    assert [s.op.name for s in (s1, s2, s3, s4)] == ["loss", "outer/fam/loss", "outer/h", "loss_1"]
    assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [s1, s2, s3, s4]
    assert merged.op.name == "Merge/MergeSummary"
    with tf.Session() as sess:
        got = sess.run(merged, {x: 3.5})
    assert isinstance(got, bytes)
    # A Summary is its values; tags are strings inside it, in the order merged.
    tags = [b"loss", b"fam/outer/fam/loss", b"outer/h", b"loss_1"]
    positions = [got.find(t) for t in tags]
    assert all(p >= 0 for p in positions) and positions == sorted(positions)
    assert tf.summary.merge_all(key="no_such_collection") is None


def test_a_training_loop_tensorboard_reads(tmp_path):
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w = tf.Variable(tf.ones([4, 1]), name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    tf.summary.scalar("loss", loss)
    tf.summary.histogram("w", w)
    tf.summary.image("input", tf.reshape(x, [-1, 2, 2, 1]), max_outputs=2)
    merged = tf.summary.merge_all()
    feed = {x: np.arange(12, dtype=np.float32).reshape(3, 4) / 12}
    losses = []
    with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path), sess.graph) as writer:
        sess.run(tf.global_variables_initializer())
        for step in range(5):
            summary, loss_value = sess.run([merged, loss], feed)
            sess.run(train, feed)
            writer.add_summary(summary, step)
            losses.append(loss_value)
        writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="accuracy", simple_value=0.75)]), 4)
        writer.add_session_log(tf.SessionLog(status=tf.SessionLog.CHECKPOINT, checkpoint_path="ckpt"), 4)

    acc = read_events(tmp_path)
    tags = acc.Tags()
    assert set(tags["scalars"]) == {"loss", "accuracy"}
    # The variable took the name "w", so its summary's scope and tag are "w_1", as in TensorFlow.
    assert tags["histograms"] == ["w_1"]
    assert set(tags["images"]) == {"input/image/0", "input/image/1"}
    assert tags["graph"]
    scalars = acc.Scalars("loss")
    assert [e.step for e in scalars] == list(range(5))
    np.testing.assert_allclose([e.value for e in scalars], losses, rtol=1e-6)
    assert acc.Scalars("accuracy")[0].value == 0.75
    assert [e.step for e in acc.Histograms("w_1")] == list(range(5))
    first = acc.Histograms("w_1")[0].histogram_value
    assert (first.min, first.max, first.num, first.sum) == (1.0, 1.0, 4, 4.0)
    image = acc.Images("input/image/1")[-1]
    assert (image.width, image.height) == (2, 2)
    assert image.encoded_image_string.startswith(b"\x89PNG")
    assert {"w", "MatMul", "loss", "Merge/MergeSummary"} <= {n.name for n in acc.Graph().node}


def test_bad_input_is_tensorflows_error(tmp_path):
    x = tf.placeholder(tf.float32)
    with tf.name_scope("outer"):
        h = tf.summary.histogram("h", x)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Nan in summary histogram for: outer/h"):
            sess.run(h, {x: [1.0, np.nan]})
        # The session goes on working.
        assert sess.run(h, {x: [1.0]})

    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(tf.errors.OpError, match="file"):
        tf.summary.FileWriter(str(tmp_path / "file"))
    writer = tf.summary.FileWriter(str(tmp_path / "logs"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a serialized Summary"):
        writer.add_summary(b"\xff\xff\xff", 1)
    writer.close()
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="late", simple_value=1)]))  # dropped, as in TF
    writer.reopen()
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="again", simple_value=2)]), 1)
    writer.close()
    assert read_events(tmp_path / "logs").Tags()["scalars"] == ["again"]
    with pytest.raises(NotImplementedError, match="tf.compat.v1.summary.text"):
        tf.summary.text("t", tf.constant("x"))


def test_threads_may_write_at_once(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), max_queue=3)

    def write(tag):
        for step in range(40):
            writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag=tag, simple_value=step)]), step)

    threads = [threading.Thread(target=write, args=(f"t{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    acc = read_events(tmp_path)
    for i in range(4):
        assert sorted(e.step for e in acc.Scalars(f"t{i}")) == list(range(40))


def test_what_was_added_reaches_the_file_within_flush_secs(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), flush_secs=0.2)
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="late", simple_value=1.0)]), 3)
    # Nothing more is added: the writer's own thread writes the event out.
    deadline = time.monotonic() + 10
    while not read_events(tmp_path).Tags()["scalars"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert read_events(tmp_path).Scalars("late")[0].step == 3
    writer.close()
