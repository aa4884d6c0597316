"""SavedModels loaded into a session's graph (tf.compat.v1.saved_model.load), and
TensorFlow's GraphDefs in and out (import_graph_def, as_graph_def, write_graph)."""

import json
import pathlib

import numpy as np
import pytest

import tessera.compat.v1 as tf

MODELS = pathlib.Path(__file__).resolve().parents[1] / "testdata" / "saved_models"


@pytest.mark.parametrize("model", ["tf1_builder", "keras_export", "tf2_module"])
def test_saved_models_tensorflow_wrote_give_its_outputs(model):
    """The v1 Builder's, Keras's model.export and tf.saved_model.save's, each with the
    outputs TensorFlow computed for the inputs recorded beside it."""
    case = json.loads((MODELS / f"{model}.json").read_text())
    with tf.Session() as sess:
        meta = tf.saved_model.load(sess, [tf.saved_model.tag_constants.SERVING], str(MODELS / model))
        signature = meta.signature_def[case["signature"]]
        feeds = {signature.inputs[k].name: np.array(v, dtype=signature.inputs[k].dtype.as_numpy_dtype)
                 for k, v in case["inputs"].items()}
        got = sess.run({k: signature.outputs[k].name for k in case["outputs"]}, feeds)
    for key, want in case["outputs"].items():
        np.testing.assert_allclose(got[key], want, rtol=1e-5, err_msg=key)


def test_a_missing_tag_set_lists_those_there_are_and_the_session_goes_on():
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError, match=r"has no MetaGraph tagged \{train\}; it has \{serve\}"):
            tf.saved_model.load(sess, ["train"], str(MODELS / "tf1_builder"))
        with pytest.raises(tf.errors.OpError, match="nowhere"):
            tf.saved_model.load(sess, ["serve"], "/nowhere/at/all")
        assert sess.run(tf.constant(2.0) * 3) == 6.0


def test_a_graph_def_round_trips_with_an_input_map(tmp_path):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    tf.identity(tf.matmul(x, tf.constant([[1.0], [2.0]])) + 1, name="y")
    graph_def = tf.get_default_graph().as_graph_def()
    path = tf.train.write_graph(tf.get_default_graph(), str(tmp_path), "g.pbtxt")
    assert 'name: "y"' in pathlib.Path(path).read_text()

    tf.reset_default_graph()
    fed = tf.constant([[3.0, 4.0]])
    parsed = tf.GraphDef()
    parsed.ParseFromString(graph_def.SerializeToString())
    (out,) = tf.import_graph_def(parsed, input_map={"x:0": fed}, return_elements=["y:0"], name="net")
    assert out.name == "net/y:0"
    with tf.Session() as sess:
        assert sess.run(out).tolist() == [[12.0]]
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.import_graph_def(b"\x0a\xff\xff garbage")
