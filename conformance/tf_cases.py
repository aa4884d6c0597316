"""Conformance cases built with TensorFlow's own API (tf.compat.v1 graph mode, v1 control
flow): each function builds its graph in the current default graph and returns what to run,
{"fetch": [tensor names], "feeds": {name: value}, "targets": [op names]}. run.py runs each
in TensorFlow, writes TensorFlow's GraphDef of it and runs that file with `tessera run`.
Every case is one step: state a case needs (a variable's value) comes in by control edges."""
import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_eager_execution()
tf1.disable_control_flow_v2()

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def x234():
    return tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4), name="x")


@case
def strided_slices():
    x = x234()
    ys = [tf.identity(t, name=f"y{i}") for i, t in enumerate(
        [x[1, :, ::-2], x[..., 1], x[:, tf1.newaxis, 1:3], x[-1:-5:-1, 5:], x[:, -2], x[::2, ::-1, 1::2]])]
    return {"fetch": [y.name for y in ys]}


@case
def slice_transpose_pack():
    x = x234()
    ys = [tf.slice(x, [0, 1, 1], [-1, 1, 2]), tf.transpose(x, [2, 0, 1]), tf.stack([x[0], x[1]], axis=1),
          tf.stack([tf.constant(["a", "b"]), tf.constant(["c", "d"])], axis=-1)]
    return {"fetch": [tf.identity(y, name=f"y{i}").name for i, y in enumerate(ys)]}


@case
def tile():
    x = x234()
    ys = [tf.tile(x, [2, 1, 3]), tf.tile(tf.constant([["a"], ["b"]]), [1, 3]), tf.tile(x, [1, 0, 1])]
    return {"fetch": [tf.identity(y, name=f"y{i}").name for i, y in enumerate(ys)]}


@case
def sigmoid_tanh_gradients():
    x = tf1.placeholder(tf.float32, [4], name="x")
    g = tf1.gradients(tf.reduce_sum(tf.sigmoid(x) * tf.tanh(x)), x)[0]
    return {"fetch": [tf.identity(g, name="g").name], "feeds": {"x:0": np.array([-2.0, -0.5, 0.5, 3.0], np.float32)}}


@case
def squeeze_expand_dims():
    p = tf1.placeholder(tf.float32, [1, None, 1, 3], name="p")
    ys = [tf.squeeze(p), tf.squeeze(p, [0]), tf.expand_dims(p, -1), tf.expand_dims(p, 0)]
    return {"fetch": [tf.identity(y, name=f"y{i}").name for i, y in enumerate(ys)],
            "feeds": {"p:0": np.arange(6, dtype=np.float32).reshape(1, 2, 1, 3)}}


@case
def math_tf2_emits():
    x = x234() - 11.5
    ys = [x + 1.0, x / 4.0, tf.sigmoid(x / 10.0), tf.tanh(x / 10.0), tf.reduce_min(x, [0, 2]),
          tf.reduce_prod(x / 10.0, 2, keepdims=True), tf.stop_gradient(x), x // 3.0, x % 3.0,
          tf.constant([-7, 7, -8, 8]) // 3, tf.constant([-7, 7, -8, 8]) % 3,
          tf.truncatediv(tf.constant([-7, 7]), tf.constant([2, -2]))]
    return {"fetch": [tf.identity(y, name=f"y{i}").name for i, y in enumerate(ys)]}


@case
def unstack_pad_select_gather():
    x = x234()
    i = tf.constant([[2, 0], [1, 1]])
    ys = list(tf.unstack(x, axis=1)) + [
        tf.pad(x, [[0, 1], [1, 0], [2, 1]]), tf.pad(x, [[0, 0], [0, 0], [1, 1]], constant_values=-1.0),
        tf1.where(tf.constant([True, False]), x, -x), tf.where(x > 10.0, x, tf.zeros([4])),
        tf.gather(x, i, axis=1), tf.gather(x, [1, 0]), tf.gather(tf.constant(["a", "b", "c"]), [2, 2, 0]),
        tf.cast(tf.logical_and(x >= 3.0, tf.logical_not(tf.not_equal(x, 5.0))), tf.int32),
        tf.cast(tf.logical_or(x <= 1.0, x > 22.0), tf.int32)]
    return {"fetch": [tf.identity(y, name=f"y{i}").name for i, y in enumerate(ys)]}


@case
def unstack_pad_select_gather_gradients():
    x = tf1.placeholder(tf.float32, [2, 3, 4], name="x")
    parts = tf.unstack(x, axis=2)
    loss = (tf.reduce_sum(parts[0] * parts[3]) + tf.reduce_sum(tf.pad(x, [[1, 0], [0, 2], [0, 0]]) ** 2)
            + tf.reduce_sum(tf.where(x > 5.0, x * 3.0, x)) + tf.reduce_sum(tf.gather(x, [2, 0, 2], axis=1) * x[:, :1]))
    g = tf1.gradients(loss, x)[0]
    return {"fetch": [tf.identity(g, name="g").name],
            "feeds": {"x:0": np.linspace(-3.0, 9.0, 24, dtype=np.float32).reshape(2, 3, 4)}}

@case
def resource_variable():
    v = tf1.get_variable("v", initializer=tf.constant([1.0, 2.0]), use_resource=True)
    init = v.initializer
    with tf.control_dependencies([init]):
        add = v.assign_add([0.5, 0.5], read_value=False)
    with tf.control_dependencies([add]):
        sub = v.assign_sub([2.0, 0.0], read_value=False)
    with tf.control_dependencies([sub]):
        read = tf.identity(v.read_value(), name="read")
    return {"fetch": [read.name]}


@case
def fifo_queue_v2():
    q = tf1.FIFOQueue(4, [tf.float32, tf.int32], shapes=[[2], []], name="q")
    e1 = q.enqueue([[1.0, 2.0], 3])
    with tf.control_dependencies([e1]):
        e2 = q.enqueue_many([[[4.0, 5.0], [6.0, 7.0]], [8, 9]])
    with tf.control_dependencies([e2]):
        a, b = q.dequeue_many(2)
        size = q.size()
    return {"fetch": [tf.identity(a, name="a").name, tf.identity(b, name="b").name,
                      tf.identity(size, name="size").name]}


@case
def cond_both_branches():
    x = tf1.placeholder(tf.float32, [], name="x")
    y = tf1.cond(x > 0, lambda: x * 2.0, lambda: x - 1.0)
    z = tf1.cond(x < 0, lambda: x * 2.0, lambda: x - 1.0)
    return {"fetch": [tf.identity(y, name="y").name, tf.identity(z, name="z").name], "feeds": {"x:0": 3.0}}


@case
def nested_cond():
    x = tf1.placeholder(tf.int32, [], name="x")
    y = tf1.cond(x > 0, lambda: tf1.cond(x > 10, lambda: x * 100, lambda: x * 10), lambda: -x)
    return {"fetch": [tf.identity(y, name="y").name], "feeds": {"x:0": 5}}


@case
def while_loop_sum():
    n = tf1.placeholder(tf.int32, [], name="n")
    _, s = tf1.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + i), [0, 0])
    return {"fetch": [tf.identity(s, name="s").name], "feeds": {"n:0": 100}}


@case
def while_loop_tensor_state():
    m = tf.constant([[0.5, 0.25], [0.25, 0.5]])
    v0 = tf.constant([[1.0], [2.0]])
    _, v = tf1.while_loop(lambda i, v: i < 8, lambda i, v: (i + 1, tf.matmul(m, v) + 0.1), [0, v0],
                          parallel_iterations=4)
    return {"fetch": [tf.identity(v, name="v").name]}


@case
def nested_while_loops():
    n = tf1.placeholder(tf.int32, [], name="n")

    def outer(i, acc):
        _, inner = tf1.while_loop(lambda j, s: j < i, lambda j, s: (j + 1, s + j * i), [0, 0])
        return i + 1, acc + inner
    _, total = tf1.while_loop(lambda i, acc: i < n, outer, [0, 0])
    return {"fetch": [tf.identity(total, name="total").name], "feeds": {"n:0": 7}}


@case
def loop_in_cond_and_cond_in_loop():
    x = tf1.placeholder(tf.int32, [], name="x")
    taken = tf1.cond(x > 0, lambda: tf1.while_loop(lambda v: v < 1000, lambda v: v * 3, [x]), lambda: -x)
    untaken = tf1.cond(x < 0, lambda: tf1.while_loop(lambda v: v < 1000, lambda v: v * 3, [x]), lambda: -x)

    def collatz(i, c):
        return i + 1, tf1.cond(tf.equal(c % 2, 0), lambda: c // 2, lambda: 3 * c + 1)
    steps, _ = tf1.while_loop(lambda i, c: c > 1, collatz, [0, x])
    return {"fetch": [tf.identity(taken, name="taken").name, tf.identity(untaken, name="untaken").name,
                      tf.identity(steps, name="steps").name], "feeds": {"x:0": 27}}


@case
def cond_gradient():
    x = tf1.placeholder(tf.float32, [3], name="x")
    y = tf1.cond(tf.reduce_sum(x) > 0, lambda: tf.square(x) * 3.0, lambda: tf.sigmoid(x))
    g = tf1.gradients(tf.reduce_sum(y), x)[0]
    return {"fetch": [tf.identity(y, name="y").name, tf.identity(g, name="g").name],
            "feeds": {"x:0": np.array([1.0, -0.5, 2.0], np.float32)}}


@case
def error_inside_a_loop():
    n = tf1.placeholder(tf.int32, [], name="n")
    _, s = tf1.while_loop(lambda i, s: i < 10, lambda i, s: (i + 1, s + tf.truncatediv(12, i - n)), [0, 0])
    return {"fetch": [tf.identity(s, name="s").name], "feeds": {"n:0": 4}}


@case
def while_loop_gradient():
    x = tf1.placeholder(tf.float32, [2], name="x")
    m = tf.constant([[0.9, 0.2], [-0.1, 0.8]])

    def body(i, v):
        return i + 1, tf.tanh(tf.squeeze(tf.matmul(m, v[:, None]), 1)) * x
    _, v = tf1.while_loop(lambda i, v: i < 5, body, [0, x], parallel_iterations=3)
    g = tf1.gradients(tf.reduce_sum(v * v), [x, m])
    return {"fetch": [tf.identity(v, name="v").name, tf.identity(g[0], name="gx").name,
                      tf.identity(g[1], name="gm").name], "feeds": {"x:0": np.array([0.7, -1.3], np.float32)}}


@case
def nested_while_loop_gradient():
    x = tf1.placeholder(tf.float32, [], name="x")

    def outer(i, a):
        _, b = tf1.while_loop(lambda j, b: j < i, lambda j, b: (j + 1, b * 0.5 + tf.sin(b) * x), [0, a])
        return i + 1, b
    _, y = tf1.while_loop(lambda i, a: i < 4, outer, [1, x])
    g = tf1.gradients(y, x)[0]
    return {"fetch": [tf.identity(y, name="y").name, tf.identity(g, name="g").name], "feeds": {"x:0": 0.8}}
