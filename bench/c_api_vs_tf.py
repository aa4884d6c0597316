#!/usr/bin/env python3
"""Frozen Keras CNN inference: Tessera's C API (bench/c_api_cnn.c) against TensorFlow's own
tf.compat.v1.Session on the same .pb, interleaved for three rounds; prints the medians and
Tessera's ratios (targets: >= 1.5x TensorFlow's images/s at batch 128, <= 1/4 of its batch-1
latency, <= 1/5 of its peak RSS). Run from the repository root after a Release build.

usage: c_api_vs_tf.py PYTHON_WITH_TF [MODEL.pb INPUT OUTPUT]
       (without a model, freezes the seeds' Keras CNN, untrained: speed does not depend on weights)"""
import json, os, statistics, subprocess, sys, tempfile

FREEZE = r"""
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
m = tf.keras.Sequential([tf.keras.Input((28, 28, 1)), tf.keras.layers.Conv2D(32, 3, activation="relu"),
    tf.keras.layers.MaxPooling2D(2), tf.keras.layers.Conv2D(64, 3, activation="relu"), tf.keras.layers.MaxPooling2D(2),
    tf.keras.layers.Flatten(), tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(10)])
f = tf.function(lambda images: m(images)).get_concrete_function(tf.TensorSpec([None, 28, 28, 1], tf.float32, name="images"))
frozen = convert_variables_to_constants_v2(f)
open(sys.argv[1], "wb").write(frozen.graph.as_graph_def().SerializeToString())
print(frozen.outputs[0].name.split(":")[0])
"""


def main():
    py = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        if len(sys.argv) >= 5:
            model, input_name, output_name = sys.argv[2:5]
        else:
            model, input_name = os.path.join(tmp, "cnn.pb"), "images"
            output_name = subprocess.run([py, "-c", FREEZE, model], capture_output=True, text=True,
                                         check=True).stdout.strip()
        rows = {"tessera": [], "tensorflow": []}
        for _ in range(3):
            for name, cmd in (("tessera", ["build/bench/c_api_cnn"]), ("tensorflow", [py, "bench/tf_frozen_cnn.py"])):
                out = subprocess.run(cmd + [model, input_name, output_name], capture_output=True, text=True, check=True)
                rows[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    med = {n: {k: statistics.median(r[k] for r in rs) for k in rs[0] if k != "peer"} for n, rs in rows.items()}
    print(f"{'':28} {'batch-1 latency':>16} {'batch-128 images/s':>19} {'peak RSS':>10} {'library':>10}")
    for n, rs in rows.items():
        m = med[n]
        print(f"{rs[0]['peer']:28} {m['batch1_latency_us']:13.0f} us {m['batch128_images_per_s']:19.0f} "
              f"{m['peak_rss_mib']:6.0f} MiB {m['library_bytes'] / 2**20:6.0f} MiB")
    t, f = med["tessera"], med["tensorflow"]
    print(f"Tessera / TensorFlow: images/s {t['batch128_images_per_s'] / f['batch128_images_per_s']:.2f}x (target >= 1.5x), "
          f"latency {t['batch1_latency_us'] / f['batch1_latency_us']:.2f}x (target <= 0.25x), "
          f"RSS {t['peak_rss_mib'] / f['peak_rss_mib']:.2f}x (target <= 0.2x), "
          f"library {t['library_bytes'] / f['library_bytes']:.3f}x")
    spread = {n: (min(r["batch128_images_per_s"] for r in rs), max(r["batch128_images_per_s"] for r in rs))
              for n, rs in rows.items()}
    print("batch-128 images/s spread over the rounds:", {n: f"{lo:.0f}-{hi:.0f}" for n, (lo, hi) in spread.items()})


if __name__ == "__main__":
    main()
