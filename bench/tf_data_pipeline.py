#!/usr/bin/env python3
"""The pipeline of bench/dataset_bench.cc in tf.data: Fashion-MNIST's training set (read from
the same IDX files into memory, as IdxDataset does) -> map(normalise) -> shuffle(10,000) ->
batch(128) -> prefetch, one batch per tf.compat.v1 Session.run. Threads = inter-op, intra-op,
tf.data's private pool and the map's parallel calls. Prints one JSON line per thread count
with the median of five timed epochs' worth of batches (469)."""
import gzip, json, os, statistics, sys, time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
DIR = "/usr/share/datasets/fashion-mnist/"
BATCH, STEPS, WARMUP, REPS = 128, 469, 100, 5


def idx(name):
    with gzip.open(DIR + name, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * rank).reshape(dims)


def run(threads, images, labels):
    graph = tf1.Graph()
    with graph.as_default():
        ds = tf.data.Dataset.from_tensor_slices((images, labels))
        ds = ds.map(lambda x, y: (tf.cast(x, tf.float32) * (1.0 / 255), tf.cast(y, tf.int32)),
                    num_parallel_calls=threads)
        ds = ds.repeat().shuffle(10000, seed=1).batch(BATCH, drop_remainder=True).prefetch(2)
        options = tf.data.Options()
        options.threading.private_threadpool_size = threads
        ds = ds.with_options(options)
        nxt = tf1.data.make_one_shot_iterator(ds).get_next()
    config = tf1.ConfigProto(inter_op_parallelism_threads=threads, intra_op_parallelism_threads=threads)
    with tf1.Session(graph=graph, config=config) as sess:
        for _ in range(WARMUP):
            sess.run(nxt)
        rates = []
        for _ in range(REPS):
            start = time.perf_counter()
            for _ in range(STEPS):
                sess.run(nxt)
            rates.append(STEPS * BATCH / (time.perf_counter() - start))
    return statistics.median(rates)


def main():
    images, labels = idx("train-images-idx3-ubyte.gz"), idx("train-labels-idx1-ubyte.gz")
    for threads in (1, 2):
        rate = run(threads, images, labels)
        print(json.dumps({"tf": tf.__version__, "threads": threads, "images_per_second": rate}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
