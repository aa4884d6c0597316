#!/usr/bin/env python3
"""TensorFlow's side of bench/c_api_vs_tf.py: the same frozen .pb in a tf.compat.v1.Session,
latency at batch 1 and images/s at batch 128 (as c_api_cnn.c measures them), peak RSS, and
the size of the libraries a C++ embedder of TensorFlow links.

usage: tf_frozen_cnn.py MODEL.pb INPUT OUTPUT"""
import glob, json, os, resource, sys, time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1


def main():
    model, input_name, output_name = sys.argv[1:4]
    graph_def = tf1.GraphDef()
    with open(model, "rb") as f:
        graph_def.ParseFromString(f.read())
    g = tf1.Graph()
    with g.as_default():
        tf1.import_graph_def(graph_def, name="")
    x = g.get_tensor_by_name(input_name + ":0")
    y = g.get_tensor_by_name(output_name + ":0")
    sess = tf1.Session(graph=g)

    def images(batch):
        return (np.arange(batch * 784) % 255).astype(np.float32).reshape(batch, 28, 28, 1) / 255

    one, many = images(1), images(128)
    for _ in range(20):
        sess.run(y, {x: one})
    times = []
    for _ in range(500):
        start = time.perf_counter()
        sess.run(y, {x: one})
        times.append((time.perf_counter() - start) * 1e6)
    for _ in range(3):
        sess.run(y, {x: many})
    start = time.perf_counter()
    for _ in range(30):
        sess.run(y, {x: many})
    rate = 128 * 30 / (time.perf_counter() - start)
    root = os.path.dirname(tf.__file__)
    libs = glob.glob(os.path.join(root, "libtensorflow_cc.so*")) + glob.glob(os.path.join(root, "libtensorflow_framework.so*"))
    print(json.dumps({"peer": f"tensorflow {tf.__version__} Session", "batch1_latency_us": sorted(times)[250],
                      "batch128_images_per_s": rate,
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "library_bytes": sum(os.path.getsize(p) for p in set(map(os.path.realpath, libs)))}))


if __name__ == "__main__":
    main()
