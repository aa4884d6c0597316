"""tf.data in graph mode: datasets from tensors, their transformations, nested elements,
and the TF1 iterators ending with OutOfRangeError."""

import numpy as np
import pytest

import tessera.compat.v1 as tf


def drain(sess, element):
    out = []
    try:
        while True:
            out.append(sess.run(element))
    except tf.errors.OutOfRangeError:
        return out


def test_slices_batch_and_end_with_out_of_range():
    features = np.arange(10, dtype=np.float32)
    ds = tf.data.Dataset.from_tensor_slices((features, np.arange(10))).batch(4)
    assert ds.output_types == (tf.float32, tf.int64)
    assert ds.output_shapes[0].as_list() == [None]
    x, y = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as sess:
        batches = drain(sess, (x, y))
        # Exhausted stays exhausted.
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(x)
    assert [b[0].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_shuffle_keeps_every_element_and_drop_remainder_fixes_the_batch():
    ds = tf.data.Dataset.range(20).shuffle(20, seed=3).batch(6, drop_remainder=True)
    assert ds.output_shapes.as_list() == [6]
    n = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as sess:
        got = np.concatenate(drain(sess, n))
    assert len(got) == 18 and len(set(got.tolist())) == 18 and got.tolist() != sorted(got.tolist())


def test_an_initializable_iterator_restarts():
    ds = tf.data.Dataset.range(5).repeat(2).skip(1).take(7)
    it = tf.data.make_initializable_iterator(ds)
    n = it.get_next()
    with tf.Session() as sess:
        for _ in range(2):
            sess.run(it.initializer)
            assert drain(sess, n) == [1, 2, 3, 4, 0, 1, 2]


def test_nested_elements_and_zip():
    dicts = tf.data.Dataset.from_tensors({"a": [1, 2], "b": 3.0})
    assert dicts.output_types == {"a": tf.int32, "b": tf.float32}
    zipped = tf.data.Dataset.zip((tf.data.Dataset.range(3), tf.data.Dataset.range(10, 13)))
    pair = tf.data.make_one_shot_iterator(zipped).get_next()
    element = tf.data.make_one_shot_iterator(dicts).get_next()
    with tf.Session() as sess:
        got = sess.run(element)
        assert got["a"].tolist() == [1, 2] and got["b"] == 3.0
        assert drain(sess, pair) == [(0, 10), (1, 11), (2, 12)]


def test_map_and_filter_run_python_functions_as_graph_functions():
    images = np.arange(24, dtype=np.uint8).reshape(6, 2, 2)
    labels = np.arange(6, dtype=np.int64)
    scale = tf.constant(255.0)  # a constant of the graph outside, copied into the function
    ds = (tf.data.Dataset.from_tensor_slices((images, labels))
          .map(lambda x, y: (tf.reshape(tf.cast(x, tf.float32) / scale, [4]), y * 10))
          .filter(lambda x, y: tf.equal(y % 20, 0))
          .map(lambda x, y: {"sum": tf.reduce_sum(x), "label": y}, num_parallel_calls=tf.data.experimental.AUTOTUNE)
          .batch(2))
    assert ds.output_types == {"sum": tf.float32, "label": tf.int64}
    assert ds.output_shapes["sum"].as_list() == [None]
    element = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as sess:
        got = drain(sess, element)
    # Labels 0, 20, 40: images 0, 2 and 4, each summed after scaling.
    np.testing.assert_array_equal(np.concatenate([g["label"] for g in got]), [0, 20, 40])
    want = images[[0, 2, 4]].reshape(3, -1).astype(np.float32).sum(1) / 255
    np.testing.assert_allclose(np.concatenate([g["sum"] for g in got]), want, rtol=1e-6)


def test_dataset_functions_say_what_they_cannot_take():
    outside = tf.placeholder(tf.int64, [])
    with pytest.raises(NotImplementedError, match="Dataset.map: the function uses Placeholder"):
        tf.data.Dataset.range(3).map(lambda x: x + outside)
    with pytest.raises(ValueError, match="scalar boolean"):
        tf.data.Dataset.range(3).filter(lambda x: x * 2)
    # A function that fails while it runs fails the step; the session goes on.
    ds = tf.data.Dataset.range(3).map(lambda x: tf.reshape(x, tf.stack([x, 2])))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Reshape"):
            sess.run(tf.data.make_one_shot_iterator(ds).get_next())
        assert sess.run(tf.constant(1) + 1) == 2


def test_a_feedable_iterator_reads_from_the_iterator_its_handle_names():
    train = tf.data.Dataset.range(5).make_one_shot_iterator()
    validation = tf.data.Dataset.range(100, 103).make_initializable_iterator()
    handle = tf.placeholder(tf.string, shape=[])
    feedable = tf.data.Iterator.from_string_handle(handle, train.output_types, train.output_shapes)
    element = feedable.get_next()
    assert element.shape.as_list() == [] and element.dtype == tf.int64
    floats = tf.data.Iterator.from_string_handle(handle, tf.float32).get_next()
    with tf.Session() as sess:
        train_handle, validation_handle = sess.run([train.string_handle(), validation.string_handle()])
        assert isinstance(train_handle, bytes) and train_handle != validation_handle
        sess.run(validation.initializer)
        got = [sess.run(element, {handle: h}) for h in (train_handle, validation_handle, train_handle, train_handle)]
        assert got == [0, 100, 1, 2]
        assert drain(sess, validation.get_next()) == [101, 102]
        with pytest.raises(tf.errors.InvalidArgumentError, match="no iterator's string handle"):
            sess.run(element, {handle: b"junk"})
        with pytest.raises(tf.errors.NotFoundError, match="no iterator 'elsewhere'"):
            sess.run(element, {handle: b"0:elsewhere"})  # the encoding: container length, container, name
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"expects an iterator of \[float32\]; .* yields \[int64\]"):
            sess.run(floats, {handle: train_handle})
        assert sess.run(element, {handle: train_handle}) == 3  # the bad feeds took nothing


def test_flat_map_and_interleave():
    ds = tf.data.Dataset.range(1, 4).flat_map(lambda n: tf.data.Dataset.range(n * 10, n * 10 + n).map(lambda i: i + 1))
    mixed = tf.data.Dataset.range(3).interleave(lambda n: tf.data.Dataset.from_tensors(n).repeat(3), cycle_length=2,
                                                block_length=2)
    with tf.Session() as sess:
        assert drain(sess, tf.data.make_one_shot_iterator(ds).get_next()) == [11, 21, 22, 31, 32, 33]
        # TensorFlow's order: two open, two from each in turn.
        assert drain(sess, tf.data.make_one_shot_iterator(mixed).get_next()) == [0, 0, 1, 1, 0, 1, 2, 2, 2]
    with pytest.raises(TypeError, match="must return a `Dataset`"):
        tf.data.Dataset.range(3).flat_map(lambda n: n)


def test_from_generator_runs_the_generator_anew_for_each_start():
    starts = []

    def pairs(limit):
        starts.append(int(limit))
        for i in range(int(limit)):
            yield i, {"x": [float(i)] * 2, "name": f"e{i}"}

    limit = tf.placeholder(tf.int64, [])
    ds = tf.data.Dataset.from_generator(pairs, (tf.int32, {"x": tf.float32, "name": tf.string}),
                                        (tf.TensorShape([]), {"x": tf.TensorShape([2]), "name": tf.TensorShape([])}),
                                        args=(limit,))
    it = ds.batch(2).make_initializable_iterator()
    element = it.get_next()
    assert element[1]["x"].shape.as_list() == [None, 2] and element[0].dtype == tf.int32
    with tf.Session() as sess:
        sess.run(it.initializer, {limit: 3})
        batches = drain(sess, element)
        assert [b[0].tolist() for b in batches] == [[0, 1], [2]]  # the last, short batch too
        assert batches[1][1]["x"].tolist() == [[2.0, 2.0]] and batches[0][1]["name"].tolist() == [b"e0", b"e1"]
        sess.run(it.initializer, {limit: 1})
        assert [b[0].tolist() for b in drain(sess, element)] == [[0]]
    assert starts == [3, 1]


def test_from_generator_says_what_the_generator_got_wrong():
    def shapes():
        yield [1.0, 2.0]
        yield [1.0, 2.0, 3.0]

    def words():
        yield "not a number"

    def broken():
        yield 1.0
        raise RuntimeError("the generator broke")

    with tf.Session() as sess:
        ds = tf.data.Dataset.from_generator(shapes, tf.float32, tf.TensorShape([2]))
        element = tf.data.make_one_shot_iterator(ds).get_next()
        assert sess.run(element).tolist() == [1.0, 2.0]
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"yielded an element of shape \(3,\) where an "
                                                                 r"element of shape \(2,\) was expected"):
            sess.run(element)
        with pytest.raises(tf.errors.InvalidArgumentError, match="could not be converted to the expected type"):
            sess.run(tf.data.make_one_shot_iterator(tf.data.Dataset.from_generator(words, tf.int64)).get_next())
        element = tf.data.make_one_shot_iterator(tf.data.Dataset.from_generator(broken, tf.float64)).get_next()
        assert sess.run(element) == 1.0
        with pytest.raises(tf.errors.UnknownError, match="RuntimeError: the generator broke"):
            sess.run(element)
        assert sess.run(tf.constant(2.0) * 2) == 4.0
    with pytest.raises(TypeError, match="callable"):
        tf.data.Dataset.from_generator([1, 2], tf.int64)


def test_training_from_a_dataset(fashion):
    (train_x, train_y), _ = fashion
    tf.set_random_seed(0)
    ds = tf.data.Dataset.from_tensor_slices((train_x[:1024].reshape(-1, 784), train_y[:1024])).repeat().batch(64)
    x, y = tf.data.make_one_shot_iterator(ds).get_next()
    logits = tf.layers.dense(x, 10)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(50):
            last, _ = sess.run([loss, train])
    assert last < 0.7 * first
