"""The README's Python tour: a TF1 script, its import line changed, trained on Tessera."""

import numpy as np
import tessera
import tessera.compat.v1 as tf      # was: import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 3], name="x")
y = tf.placeholder(tf.float32, [None, 1], name="y")
with tf.device("/cpu:1"):
    prediction = tf.layers.dense(x, 1)
loss = tf.reduce_mean(tf.square(prediction - y))
train = tf.train.AdamOptimizer(0.1).minimize(loss)

features = np.random.RandomState(0).randn(64, 3).astype(np.float32)
targets = features @ [[1.0], [-2.0], [0.5]] + 3
with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(300):
        value, _ = sess.run([loss, train], {x: features, y: targets})
    print("loss", value)
    print(sess.run({"kernel": "dense/kernel:0", "bias": "dense/bias:0"}))
    for r in tessera.placement(sess):
        if r["node"] in ("x", "dense/kernel", "dense/MatMul"):
            print(r["node"], r["device"], r["reason"])
    try:
        sess.run(loss, {x: features})
    except tf.errors.InvalidArgumentError as e:
        print(type(e).__name__, "naming", e.node_name)
