"""Graph building as TensorFlow 1.x's Python does it: names, scopes, devices, dependencies,
and the op functions made from the engine's registry. Expected names are what TensorFlow
2.21's tf.compat.v1 gives for the same calls."""

import numpy as np
import pytest

import tessera.compat.v1 as tf
from tessera import gen_ops


def test_names_are_tensorflows():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    made = [tf.add(x, 1.0), x + 1.0, tf.matmul(x, tf.ones([2, 3])), x * 2]
    with tf.name_scope("outer"):
        made.append(tf.identity(x))
        with tf.name_scope("inner"):
            made.append(tf.negative(x))
    with tf.name_scope("outer"):
        made.append(tf.identity(x))
    made += [tf.reduce_sum(x), tf.reduce_mean(x, axis=1, keepdims=True), x[:, 1]]
    assert [t.name for t in made] == ["Add:0", "add_1:0", "MatMul:0", "mul:0", "outer/Identity:0",
                                      "outer/inner/Neg:0", "outer_1/Identity:0", "Sum:0", "Mean:0",
                                      "strided_slice:0"]
    v, v2 = tf.Variable(1.0, name="v"), tf.Variable(2.0, name="v")
    assert (v.name, v2.name, v.initializer.name) == ("v:0", "v_1:0", "v/Assign")


def test_static_shapes_and_dtypes_come_from_the_engine():
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.matmul(x, tf.ones([2, 3]))
    assert y.shape.as_list() == [None, 3]
    assert str(y.shape) == "(None, 3)"
    assert y.dtype == tf.float32
    assert tf.reduce_mean(x, axis=1, keepdims=True).shape.as_list() == [None, 1]
    assert tf.cast(x, tf.int32).dtype == tf.int32
    assert tf.constant(3).dtype == tf.int32 and tf.constant(3.0).dtype == tf.float32
    assert tf.constant(np.float64(3.0)).dtype == tf.float64


def test_device_scopes_merge_and_functions_decide():
    with tf.device("/job:ps"):
        with tf.device("/cpu:1"):
            a = tf.constant(1.0, name="a")
    assert a.device == "/job:ps/device:CPU:1"
    with tf.device(lambda op: "/cpu:0" if op.type == "Const" else "/cpu:1"):
        b = tf.constant(1.0)
        c = tf.identity(b)
    assert (b.device, c.device) == ("/device:CPU:0", "/device:CPU:1")
    with pytest.raises(ValueError, match="Invalid device specification"):
        with tf.device("/cpu:zero"):
            pass


def test_control_dependencies_and_colocation():
    a = tf.constant(1.0, name="a")
    with tf.control_dependencies([a]):
        b = tf.constant(2.0, name="b")
        with tf.control_dependencies(None):
            c = tf.constant(3.0, name="c")
    assert b.op.control_inputs == [a.op] and c.op.control_inputs == []
    with tf.device("/cpu:1"):
        d = tf.constant(1.0)
    with tf.device("/cpu:0"):
        with tf.colocate_with(d):
            e = tf.identity(d)
    assert e.device == "/device:CPU:1"


def test_every_registered_op_has_a_function():
    names = gen_ops.OP_DEFS
    assert {"MatMul", "Conv2D", "AddV2", "VariableV2"} <= set(names)
    for op in names:
        assert callable(getattr(tf.raw_ops, op))
        if not op.startswith("_"):
            assert callable(getattr(gen_ops, gen_ops.snake_case(op)))
    assert [gen_ops.snake_case(n) for n in ("MatMul", "Conv2D", "AddV2", "Conv2DBackpropInput",
                                             "SparseSoftmaxCrossEntropyWithLogits")] == [
        "mat_mul", "conv2d", "add_v2", "conv2d_backprop_input", "sparse_softmax_cross_entropy_with_logits"]
    y = tf.raw_ops.MatMul(a=tf.ones([2, 3]), b=tf.ones([3, 4]), transpose_a=False)
    assert y.shape.as_list() == [2, 4]


def test_a_bad_node_is_an_error_naming_it_and_the_graph_goes_on():
    x = tf.placeholder(tf.float32, [2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError) as err:
        tf.matmul(x, tf.ones([4, 5]), name="bad")
    assert err.value.node_name == "bad"
    assert tf.matmul(x, tf.ones([3, 5])).shape.as_list() == [2, 5]
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        gen_ops.mat_mul(x, x, nope=1)


def test_missing_tensorflow_names_say_so():
    with pytest.raises(NotImplementedError, match="tf.compat.v1.some_future_api is not supported"):
        tf.some_future_api()
    assert not hasattr(tf, "another_missing_api")
    assert tf.executing_eagerly() is False
    tf.disable_eager_execution()
    tf.disable_v2_behavior()


def test_graphs_are_separate_and_default_per_context():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0)
        assert tf.get_default_graph() is g
    assert a.graph is g and tf.get_default_graph() is not g
    with pytest.raises(ValueError, match="same graph"):
        tf.identity(a)
    assert g.get_tensor_by_name(a.name) is a
    assert g.get_operation_by_name(a.op.name) is a.op
    assert '"Const"' in g.as_json() and len(g.as_graph_def().SerializeToString()) > 0
