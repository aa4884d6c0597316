#!/usr/bin/env python3
"""Keras 3 models exported as SavedModels (`model.export`, random weights) and run by
`tessera run DIR` beside TensorFlow: Keras's applications MobileNetV2, ResNet50,
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


def main():
    build, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(0)
    failures = 0
    for name, make in MODELS.items():
        path = os.path.join(out, name)
        make().export(path, verbose=False)
        signature = tf.saved_model.load(path).signatures["serving_default"]
        (key, spec), = signature.structured_input_signature[1].items()
        shape = [2 if d is None else d for d in spec.shape]
        if spec.dtype == tf.int32:
            x, dtype = rng.integers(0, 100, shape).astype(np.int32), "int32"
        else:
            x, dtype = rng.standard_normal(shape).astype(np.float32), "float32"
        want = {k: v.numpy() for k, v in signature(tf.constant(x)).items()}
        feed = os.path.join(out, name + "_feed.json")
        with open(feed, "w") as f:
            json.dump({"dtype": dtype, "shape": list(x.shape), "data": x.ravel().tolist()}, f)
        r = subprocess.run([os.path.join(build, "tools", "tessera"), "run", path, "--feed", f"{key}={feed}"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {name}: {r.stderr.strip().splitlines()[-1]}")
            failures += 1
            continue
        got = json.loads(r.stdout)
        for k, v in want.items():
            diff = np.max(np.abs(np.array(got[k]["data"], np.float32).reshape(v.shape) - v)) / np.max(np.abs(v))
            ok = diff <= 1e-4
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name} {k} {list(v.shape)}: max difference {diff:.1e} of the largest output")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
