#!/usr/bin/env python3
"""SavedModels of the three kinds TensorFlow writes, run by `tessera run DIR` beside
TensorFlow: a tf.Module saved by tf.saved_model.save, a TF1 graph saved by the v1 Builder,
and Keras 3 models exported with `model.export` (random weights): Keras's applications MobileNetV2, ResNet50,
EfficientNetB0 and DenseNet121 (logits: classifier_activation=None, since a softmax over 1000
classes of an untrained model is 0.001 everywhere and would compare nothing), an LSTM, a GRU,
a Conv1D model and a small Transformer encoder (Embedding, MultiHeadAttention,
LayerNormalization, GELU). Prints the largest difference relative to TensorFlow's largest
output for each; fails above 1e-4.

usage: keras_models.py BUILD_DIR OUT_DIR"""
import json, os, subprocess, sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def transformer():
    tokens = keras.Input((16,), dtype="int32")
    x = keras.layers.Embedding(100, 32)(tokens)
    x = keras.layers.LayerNormalization()(x + keras.layers.MultiHeadAttention(4, 8)(x, x))
    f = keras.layers.Dense(64, activation="gelu")(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.Dense(32)(f))
    return keras.Model(tokens, keras.layers.Dense(2)(keras.layers.GlobalAveragePooling1D()(x)))


MODELS = {
    "mobilenet_v2": lambda: keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3),
                                                           classifier_activation=None),
    "resnet50": lambda: keras.applications.ResNet50(weights=None, input_shape=(64, 64, 3),
                                                    classifier_activation=None),
    "efficientnet_b0": lambda: keras.applications.EfficientNetB0(weights=None, input_shape=(64, 64, 3),
                                                                 classifier_activation=None),
    "densenet121": lambda: keras.applications.DenseNet121(weights=None, input_shape=(64, 64, 3),
                                                          classifier_activation=None),
    "lstm": lambda: keras.Sequential([keras.Input((10, 8)), keras.layers.LSTM(16), keras.layers.Dense(2)]),
    "gru": lambda: keras.Sequential([keras.Input((10, 8)), keras.layers.GRU(16), keras.layers.Dense(2)]),
    "conv1d": lambda: keras.Sequential([keras.Input((20, 4)), keras.layers.Conv1D(8, 3, activation="relu"),
                                        keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(2)]),
    "transformer": transformer,
}


class ModuleCnn(tf.Module):
    """A TF2 model without Keras: tf.Variables, a convolution, batch normalisation, a
    depthwise convolution, a tf.cond and a dense layer. (Keras 3 models saved this way
    capture variables that only TF2's object loader restores, not TensorFlow's own C++ or
    v1 loader, nor Tessera's; Keras exports them with model.export.)"""

    def __init__(self):
        rng = np.random.default_rng(2)
        u = lambda *shape: tf.Variable(rng.uniform(-0.5, 0.5, shape).astype(np.float32))
        self.conv, self.dw, self.dense = u(3, 3, 3, 8), u(3, 3, 8, 1), u(8, 10)
        self.mean, self.offset = u(8), u(8)
        self.variance = tf.Variable(rng.uniform(0.5, 2.0, 8).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 16, 16, 3], tf.float32)])
    def serve(self, x):
        y = tf.nn.conv2d(x, self.conv, 2, "SAME")
        y = tf.nn.relu(tf.nn.batch_normalization(y, self.mean, self.variance, self.offset, None, 1e-3))
        y = tf.nn.depthwise_conv2d(y, self.dw, [1, 1, 1, 1], "VALID")
        y = tf.cond(tf.reduce_sum(y) > 0, lambda: y * 2.0, lambda: y - 1.0)
        return {"output_0": tf.matmul(tf.reduce_mean(y, [1, 2]), self.dense)}


def save_module_cnn(path):
    module = ModuleCnn()
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})


def save_v1_cnn(path):
    """A TF1 graph (reference variables; conv, FusedBatchNorm, Relu6, depthwise conv, max pool,
    dense) saved by tf.compat.v1.saved_model.Builder."""
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        v1.set_random_seed(1)
        init = v1.random_uniform_initializer(-0.5, 0.5)

        def var(name, shape, low=-0.5, high=0.5):
            return v1.get_variable(name, shape, initializer=v1.random_uniform_initializer(low, high),
                                   use_resource=False)
        images = v1.placeholder(tf.float32, [None, 16, 16, 3], name="images")
        y = tf.nn.conv2d(images, var("conv/kernel", [3, 3, 3, 8]), [1, 2, 2, 1], "SAME")
        y, _, _ = v1.nn.fused_batch_norm(y, var("bn/gamma", [8], 0.5, 1.5), var("bn/beta", [8]),
                                         var("bn/mean", [8]), var("bn/variance", [8], 0.5, 2.0), is_training=False)
        y = tf.nn.relu6(y)
        y = tf.nn.depthwise_conv2d(y, var("dw/kernel", [3, 3, 8, 2]), [1, 1, 1, 1], "SAME")
        y = tf.reshape(tf.nn.max_pool2d(y, 2, 2, "VALID"), [-1, 4 * 4 * 16])
        logits = tf.matmul(y, v1.get_variable("dense/kernel", [256, 10], initializer=init, use_resource=False))
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(path)
            signature = v1.saved_model.predict_signature_def(inputs={"images": images}, outputs={"logits": logits})
            builder.add_meta_graph_and_variables(sess, ["serve"], signature_def_map={"serving_default": signature})
            builder.save()


def compare(build, out, name, path, rng):
    """Runs the SavedModel's serving signature in TensorFlow and through `tessera run`; the
    number of outputs that differ by more than 1e-4 of the largest."""
    signature = tf.saved_model.load(path).signatures["serving_default"]
    (key, spec), = signature.structured_input_signature[1].items()
    shape = [2 if d is None else d for d in spec.shape]
    if spec.dtype == tf.int32:
        x, dtype = rng.integers(0, 100, shape).astype(np.int32), "int32"
    else:
        x, dtype = rng.standard_normal(shape).astype(np.float32), "float32"
    want = {k: v.numpy() for k, v in signature(**{key: tf.constant(x)}).items()}
    feed = os.path.join(out, name + "_feed.json")
    with open(feed, "w") as f:
        json.dump({"dtype": dtype, "shape": list(x.shape), "data": x.ravel().tolist()}, f)
    r = subprocess.run([os.path.join(build, "tools", "tessera"), "run", path, "--feed", f"{key}={feed}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL {name}: {r.stderr.strip().splitlines()[-1]}")
        return 1
    got = json.loads(r.stdout)
    failures = 0
    for k, v in want.items():
        diff = np.max(np.abs(np.array(got[k]["data"], np.float32).reshape(v.shape) - v)) / np.max(np.abs(v))
        ok = diff <= 1e-4
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name} {k} {list(v.shape)}: max difference {diff:.1e} of the largest output")
    return failures


def main():
    build, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(0)
    failures = 0
    for name, make in MODELS.items():
        make().export(os.path.join(out, name), verbose=False)
        failures += compare(build, out, name, os.path.join(out, name), rng)
    save_module_cnn(os.path.join(out, "module_cnn"))
    failures += compare(build, out, "module_cnn (tf.saved_model.save)", os.path.join(out, "module_cnn"), rng)
    save_v1_cnn(os.path.join(out, "v1_cnn"))
    failures += compare(build, out, "v1_cnn (Builder)", os.path.join(out, "v1_cnn"), rng)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
