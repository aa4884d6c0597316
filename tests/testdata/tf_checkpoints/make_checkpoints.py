"""Writes the TensorFlow checkpoints tests/graph/tensor_bundle_test.cc reads (run with
TensorFlow 2.21: `$(scripts/peers.sh) tests/testdata/tf_checkpoints/make_checkpoints.py`).
Every value is a function of its index, so the test can say what each must hold:
  v1/model.ckpt   tf.compat.v1.train.Saver over one variable of each dtype Tessera has,
                  plus an int8 one (a dtype Tessera lacks)
  tf2/ckpt-1      tf.train.Checkpoint of a tf.Module, keys through the object graph; the
                  variables' names (dense/kernel, dense/bias, global_step) in it too"""
import os
import shutil

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))


def values():
    return {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
        "f64": np.arange(3, dtype=np.float64) - 1.5,
        "f16": np.arange(4, dtype=np.float16) / 2,
        "bf16": tf.constant(np.arange(4, dtype=np.float32) * 3, dtype=tf.bfloat16),
        "i32": np.arange(5, dtype=np.int32) * -7,
        "i64": np.array([1 << 40, -3], dtype=np.int64),
        "u8": np.arange(250, 256, dtype=np.uint8),
        "b": np.array([True, False, True]),
        "s": np.array([b"", b"tessera", b"x" * 200]),
        "scalar": np.float32(2.5),
        "i8": np.array([-128, 0, 127], dtype=np.int8),
    }


def write_v1():
    out = os.path.join(HERE, "v1")
    shutil.rmtree(out, ignore_errors=True)
    with tf.Graph().as_default():
        variables = [tf.compat.v1.Variable(v, name=k) for k, v in values().items()]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.save(sess, os.path.join(out, "model.ckpt"), write_meta_graph=False, write_state=False)


def write_tf2():
    out = os.path.join(HERE, "tf2")
    shutil.rmtree(out, ignore_errors=True)
    module = tf.Module()
    module.dense = tf.Module()
    module.dense.kernel = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="dense/kernel")
    module.dense.bias = tf.Variable(np.array([0.5, -0.5], dtype=np.float32), name="dense/bias")
    module.step = tf.Variable(np.int64(7), name="global_step")
    tf.train.Checkpoint(model=module).write(os.path.join(out, "ckpt-1"))


write_v1()
write_tf2()
