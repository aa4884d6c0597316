"""Writes the SavedModels tests/saved_model/saved_model_test.cc loads (run with TensorFlow
2.21: `$(scripts/peers.sh) tests/testdata/saved_models/make_saved_models.py`), each with
the inputs and the outputs TensorFlow computed for them in NAME.json:
  tf2_module    tf.saved_model.save of a tf.Module: resource variables, a signature
                function, a captured constant, a tf.cond
  tf1_builder   tf.compat.v1.saved_model.Builder: reference variables, a legacy_init_op
                that fills a variable, an asset whose path the graph reads
  keras_export  Keras 3's model.export of a small Dense model"""
import json
import os
import shutil

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))


def fresh(name):
    path = os.path.join(HERE, name)
    shutil.rmtree(path, ignore_errors=True)
    return path


def record(name, signature, inputs, outputs):
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump({"signature": signature, "inputs": {k: np.asarray(v).tolist() for k, v in inputs.items()},
                   "outputs": {k: np.asarray(v).tolist() for k, v in outputs.items()}}, f, indent=1)


def tf2_module():
    class Model(tf.Module):
        def __init__(self):
            self.w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 4, name="w")
            self.b = tf.Variable(np.array([0.5, -1.0], np.float32), name="b")
            self.scale = tf.constant(2.0)

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
        def serve(self, x):
            y = tf.nn.relu(tf.matmul(x, self.w) + self.b)
            y = tf.cond(tf.reduce_sum(y) > 1.0, lambda: y * self.scale, lambda: y - 1.0)
            return {"y": y, "total": tf.reduce_sum(y, axis=1)}

    m = Model()
    tf.saved_model.save(m, fresh("tf2_module"), signatures={"serving_default": m.serve})
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]], np.float32)
    record("tf2_module", "serving_default", {"x": x}, {k: v.numpy() for k, v in m.serve(x).items()})


def tf1_builder():
    path = fresh("tf1_builder")
    asset = os.path.join(HERE, "vocab.txt")
    with open(asset, "w") as f:
        f.write("tessera\n")
    with tf.Graph().as_default() as g:
        x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
        w = tf.compat.v1.Variable(np.array([[1.0, -2.0], [0.5, 3.0]], np.float32), name="w", use_resource=False)
        offset = tf.compat.v1.Variable(0.0, name="offset", use_resource=False)
        asset_path = tf.constant(asset, name="asset_path")
        tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.ASSET_FILEPATHS, asset_path)
        # The init op reads the asset's path: its length lands in `offset`.
        init_offset = tf.compat.v1.assign(offset, tf.cast(tf.strings.length(asset_path), tf.float32) * 0.0 + 0.25)
        y = tf.identity(tf.matmul(x, w) + offset, name="y")
        with tf.compat.v1.Session(graph=g) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(tf.compat.v1.assign(w, [[2.0, -1.0], [1.5, 0.5]]))  # differs from the initializer
            builder = tf.compat.v1.saved_model.Builder(path)
            sig = tf.compat.v1.saved_model.predict_signature_def({"x": x}, {"y": y})
            builder.add_meta_graph_and_variables(sess, ["serve"], signature_def_map={"predict": sig},
                                                 assets_collection=tf.compat.v1.get_collection(
                                                     tf.compat.v1.GraphKeys.ASSET_FILEPATHS),
                                                 legacy_init_op=tf.group(init_offset, name="legacy_init"))
            builder.save()
            xv = np.array([[1.0, 1.0], [2.0, -1.0]], np.float32)
            sess.run(init_offset)
            record("tf1_builder", "predict", {"x": xv}, {"y": sess.run(y, {x: xv})})
    os.remove(asset)


def keras_export():
    import keras
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((4,), name="features"), keras.layers.Dense(3, activation="relu"),
                              keras.layers.Dense(2)])
    path = fresh("keras_export")
    model.export(path)
    x = np.array([[0.1, -0.2, 0.3, 0.4], [1.0, 2.0, -3.0, 0.5]], np.float32)
    loaded = tf.saved_model.load(path)
    out = loaded.signatures["serving_default"](tf.constant(x))
    record("keras_export", "serving_default", {list(loaded.signatures["serving_default"].structured_input_signature[1])[0]: x},
           {k: v.numpy() for k, v in out.items()})


tf2_module()
tf1_builder()
keras_export()
