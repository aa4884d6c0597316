"""TensorFlow 1.x's CNN tutorial, as written for TensorFlow, on Fashion-MNIST: two conv and
pool layers, a dense layer with dropout, Adam, batches fed from NumPy. Runs on Tessera with
`import tessera.compat.v1 as tf`, or on TensorFlow with `--engine tensorflow`.

    python examples/python/fashion_cnn_tf1.py [--steps 200] [--engine tessera|tensorflow]
"""

import argparse
import gzip
import os
import time

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"


def load(kind):
    with gzip.open(f"{DATA}/{kind}-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28, 1)
    with gzip.open(f"{DATA}/{kind}-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return images.astype(np.float32) / 255.0, labels.astype(np.int64)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--engine", default="tessera", choices=["tessera", "tensorflow"])
    args = parser.parse_args()
    if args.engine == "tensorflow":
        os.environ["TF_USE_LEGACY_KERAS"] = "1"  # tf.compat.v1.layers lives in tf_keras
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    else:
        import tessera.compat.v1 as tf

    train_x, train_y = load("train")
    test_x, test_y = load("t10k")
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 28, 28, 1], name="images")
    y = tf.placeholder(tf.int64, [None], name="labels")
    training = tf.placeholder_with_default(False, [], name="training")
    net = tf.layers.conv2d(x, 32, 5, padding="same", activation=tf.nn.relu)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.conv2d(net, 64, 5, padding="same", activation=tf.nn.relu)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.dense(tf.layers.flatten(net), 1024, activation=tf.nn.relu)
    net = tf.layers.dropout(net, rate=0.4, training=training)
    logits = tf.layers.dense(net, 10)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.AdamOptimizer(1e-3).minimize(loss)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))

    config = tf.ConfigProto(intra_op_parallelism_threads=args.threads, inter_op_parallelism_threads=args.threads)
    rng = np.random.RandomState(0)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        start, cpu_start = time.perf_counter(), time.process_time()
        for step in range(1, args.steps + 1):
            batch = rng.randint(0, len(train_x), args.batch)
            value, _ = sess.run([loss, train], {x: train_x[batch], y: train_y[batch], training: True})
            if step % 50 == 0 or step == args.steps:
                print(f"step {step}: loss {value:.4f}")
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
        test = sess.run(accuracy, {x: test_x[:2000], y: test_y[:2000]})
    # CPU time beside wall time: an engine told to use one thread may use more cores.
    print(f"{args.engine}: {args.steps * args.batch / seconds:.0f} images/s ({cpu_seconds:.1f} CPU-seconds), "
          f"test accuracy {test:.4f}")


if __name__ == "__main__":
    main()
