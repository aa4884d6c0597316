"""Writes tf_while_gradient.pbtxt, the GraphDef TensorFlow (tf.compat.v1, v1 control flow)
makes for two while loops and their gradients, and prints the values control_flow_test
expects:  python3 tests/testdata/tf_while_gradient.py tests/testdata"""
import sys

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_eager_execution()
tf1.disable_control_flow_v2()

x = tf1.placeholder(tf.float32, [2], name="x")
m = tf.constant([[0.9, 0.2], [-0.1, 0.8]], name="m")
n = tf1.placeholder_with_default(5, [], name="n")


def body(i, v):
    return i + 1, tf.tanh(tf.squeeze(tf.matmul(m, v[:, None]), 1)) * x


_, v = tf1.while_loop(lambda i, v: i < n, body, [0, x], parallel_iterations=3)
gx, gm = tf1.gradients(tf.reduce_sum(v * v), [x, m])
tf.identity(v, name="v")
tf.identity(gx, name="gx")
tf.identity(gm, name="gm")

s = tf1.placeholder(tf.float32, [], name="s")


def outer(i, a):
    _, b = tf1.while_loop(lambda j, b: j < i, lambda j, b: (j + 1, b * 0.5 + tf.sin(b) * s), [0, a])
    return i + 1, b


_, y = tf1.while_loop(lambda i, a: i < 4, outer, [1, s])
tf.identity(y, name="y")
tf.identity(tf1.gradients(y, s)[0], name="gs")

tf1.train.write_graph(tf1.get_default_graph().as_graph_def(), sys.argv[1], "tf_while_gradient.pbtxt", as_text=True)
with tf1.Session() as sess:
    for feeds in [{x: [0.7, -1.3]}, {x: [0.7, -1.3], n: 0}, {x: [0.7, -1.3], n: 40}]:
        print({k.name: v for k, v in feeds.items()}, sess.run(["v:0", "gx:0", "gm:0"], feeds))
    print(sess.run(["y:0", "gs:0"], {s: 0.8}))
