#!/usr/bin/env python3
"""The seeds' Keras CNN trained for one epoch in TensorFlow, frozen (variables to constants,
TensorFlow's convert_variables_to_constants_v2: Keras 3 models are tf.functions), and run on
the 10,000 Fashion-MNIST test images three ways: TensorFlow, `tessera run` on the frozen .pb,
and examples/classify.c through the C API. Checks the same predicted class for every image
and logits within 1e-4 of TensorFlow's.

usage: keras_frozen.py BUILD_DIR OUT_DIR      (writes OUT_DIR/keras_cnn_frozen.pb)"""
import gzip, json, os, subprocess, sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # noqa: E402

DATA = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def idx(name, offset):
    with gzip.open(os.path.join(DATA, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def main():
    build, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    x_train = idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28, 1).astype(np.float32) / 255
    y_train = idx("train-labels-idx1-ubyte.gz", 8).astype(np.int64)
    x_test = idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28, 1).astype(np.float32) / 255
    tf.random.set_seed(1)
    model = tf.keras.Sequential([
        tf.keras.Input((28, 28, 1)), tf.keras.layers.Conv2D(32, 3, activation="relu"), tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Conv2D(64, 3, activation="relu"), tf.keras.layers.MaxPooling2D(2), tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.RMSprop(1e-3),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=128, epochs=1, verbose=0)
    fn = tf.function(lambda images: model(images)).get_concrete_function(
        tf.TensorSpec([None, 28, 28, 1], tf.float32, name="images"))
    frozen = convert_variables_to_constants_v2(fn)
    graph_def = frozen.graph.as_graph_def()
    pb = os.path.join(out, "keras_cnn_frozen.pb")
    with open(pb, "wb") as f:
        f.write(graph_def.SerializeToString())
    output = frozen.outputs[0].name.split(":")[0]
    want = frozen(tf.constant(x_test))[0].numpy()

    feed = os.path.join(out, "keras_test_images.json")
    with open(feed, "w") as f:
        json.dump({"dtype": "float32", "shape": list(x_test.shape), "data": x_test.ravel().tolist()}, f)
    r = subprocess.run([os.path.join(build, "tools/tessera"), "run", pb, "--fetch", output, "--feed",
                        f"images={feed}"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"tessera run failed: {r.stderr[-2000:]}")
    got = np.array(json.loads(r.stdout)[output]["data"], np.float32).reshape(want.shape)
    same_class = (got.argmax(1) == want.argmax(1)).sum()
    max_diff = float(np.abs(got - want).max())
    c = subprocess.run([os.path.join(build, "examples/classify_c"), pb, "images", output, "10000"],
                       capture_output=True, text=True)
    c_accuracy = c.stdout.strip().splitlines()[-1] if c.returncode == 0 else f"classify_c failed: {c.stderr[-500:]}"
    tf_accuracy = (want.argmax(1) == idx("t10k-labels-idx1-ubyte.gz", 8)).mean()
    print(f"frozen Keras CNN ({len(graph_def.node)} nodes), TensorFlow test accuracy {tf_accuracy:.4f}")
    print(f"tessera run: same class for {same_class} of {len(want)} images, max |logit difference| {max_diff:.2e}")
    print(f"classify_c: {c_accuracy}")
    ok = same_class == len(want) and max_diff <= 1e-4 and c.returncode == 0 and f"{tf_accuracy:.4f}" in c_accuracy
    print("same" if ok else "DIFF")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
