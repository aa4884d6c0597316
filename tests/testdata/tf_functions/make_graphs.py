"""Writes the TF2 graphs tests/graph/tensorflow_functions_test.cc imports (run with TensorFlow
2.21: `$(scripts/peers.sh) tests/testdata/tf_functions/make_graphs.py`): each is a
tf.function's graph, its calls and control flow in the GraphDef's function library, with the
feeds and the outputs TensorFlow computed for them in NAME.json."""
import json
import os

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, fn, feeds, graph_name=None):
    """NAME.json for these feeds; GRAPH.pbtxt (NAME's by default) for the graph."""
    concrete = fn.get_concrete_function(*[tf.TensorSpec(v.shape, tf.as_dtype(v.dtype), name=k)
                                          for k, v in feeds.items()])
    graph = concrete.graph.as_graph_def()
    with open(os.path.join(HERE, (graph_name or name) + ".pbtxt"), "w") as f:
        f.write(str(graph))
    outputs = concrete(*feeds.values())
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    fetches = [t.name for t in concrete.outputs]
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump({"feeds": {k: v.tolist() for k, v in feeds.items()},
                   "fetches": fetches,
                   "outputs": [np.asarray(o).tolist() for o in outputs]}, f, indent=1)


@tf.function
def inner(x):
    return tf.nn.relu(x) + 1.0


@tf.function
def middle(x):
    return inner(x) * inner(-x)


@tf.function
def calls(x):
    return middle(x) - inner(x), tf.reduce_sum(x)


@tf.function
def control_flow(x, n):
    y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
    i = tf.constant(0)
    acc = tf.zeros_like(x)
    _, acc = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a + y + tf.cast(i, tf.float32)), (i, acc),
                           parallel_iterations=4)
    nested = tf.cond(n > 2, lambda: tf.cond(n > 4, lambda: acc * 3.0, lambda: acc), lambda: -acc)
    return acc, nested


write("calls", calls, {"x": np.array([1.5, -2.0, 0.25], np.float32)})
write("control_flow", control_flow, {"x": np.array([[1.0, -0.5], [2.0, 0.0]], np.float32), "n": np.int32(5)})


@tf.function
def case(i, x):
    return tf.switch_case(i, [lambda: x + 1.0, lambda: x * 10.0, lambda: -x])


for index in (0, 1, 2, 7):
    write(f"case_{index}", case, {"i": np.int32(index), "x": np.array([1.0, 2.0], np.float32)}, graph_name="case")


@tf.function
def tensor_lists(x):
    n = tf.shape(x)[0]
    written = tf.TensorArray(tf.float32, size=n, element_shape=[3])
    for i in tf.range(n):
        written = written.write(i, x[i] * tf.cast(i, tf.float32))
    grown = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    for i in tf.range(n):
        grown = grown.write(i, tf.reduce_sum(x[i]) + 1.0)
    read = tf.TensorArray(tf.float32, size=n).unstack(x)
    return written.stack(), grown.stack(), read.read(2), written.size()


write("tensor_lists", tensor_lists, {"x": np.arange(15, dtype=np.float32).reshape(5, 3)})
