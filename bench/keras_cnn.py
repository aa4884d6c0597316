#!/usr/bin/env python3
"""The training demo's CNN in Keras (tensorflow-cpu), for bench/cnn_side_by_side.sh: the
seeds' Sequential model, RMSprop(1e-3), batch 128, 2 epochs, optionally under
MirroredStrategy over 2 logical CPU devices. Prints one JSON line like bench/torch_cnn.py."""
import argparse, gzip, json, os, resource, sys, time

import numpy as np


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--mirrored", action="store_true")
    a = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    if a.mirrored:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    tf.random.set_seed(0)
    d = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    xtr = idx(f"{d}/train-images-idx3-ubyte.gz").astype(np.float32)[..., None] / 255.0
    ytr = idx(f"{d}/train-labels-idx1-ubyte.gz").astype(np.int64)
    xte = idx(f"{d}/t10k-images-idx3-ubyte.gz").astype(np.float32)[..., None] / 255.0
    yte = idx(f"{d}/t10k-labels-idx1-ubyte.gz").astype(np.int64)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]) if a.mirrored else tf.distribute.get_strategy()
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.Input((28, 28, 1)),
            tf.keras.layers.Conv2D(32, 3, activation="relu"), tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Conv2D(64, 3, activation="relu"), tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(), tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(10)])
        model.compile(optimizer=tf.keras.optimizers.RMSprop(1e-3),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    out = {"peer": "keras-mirrored" if a.mirrored else "keras", "version": tf.__version__, "threads": a.threads,
           "epochs": []}
    for _ in range(a.epochs):
        start = time.perf_counter()
        model.fit(xtr, ytr, batch_size=128, epochs=1, verbose=0, shuffle=True)
        seconds = time.perf_counter() - start
        accuracy = model.evaluate(xte, yte, batch_size=1000, verbose=0)[1]
        out["epochs"].append({"images_per_s": len(xtr) / seconds, "test_accuracy": accuracy})
    infer = tf.function(lambda x: model(x, training=False))
    n = (len(xte) // 128) * 128
    batches = [tf.constant(xte[i:i + 128]) for i in range(0, n, 128)]
    for b in batches[:10]:
        infer(b)
    rates = []
    for _ in range(3):
        start = time.perf_counter()
        for b in batches:
            infer(b).numpy()
        rates.append(n / (time.perf_counter() - start))
    out["inference_images_per_s"] = sorted(rates)[1]
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
