"""train.replica_device_setter and ClusterSpec, with the devices TensorFlow 2.21 gives."""

import tessera.compat.v1 as tf


def test_replica_device_setter_places_as_tensorflow():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:1")):
        a = tf.Variable(1.0, name="a")
        b = tf.Variable(2.0, name="b")
        c = a + b
        with tf.device("/cpu:0"):
            d = tf.Variable(3.0, name="d")
            e = a * 2
    assert [x.device for x in (a, b, c, d, e)] == [
        "/job:ps/task:0", "/job:ps/task:1", "/job:worker/task:1", "/job:ps/task:0/device:CPU:0",
        "/job:worker/task:1/device:CPU:0"]
    assert a.op.node_def.op == "VariableV2"


def test_a_cluster_without_ps_sets_nothing():
    assert tf.train.replica_device_setter(cluster={"worker": ["w:1"]}) is None
    spec = tf.train.ClusterSpec({"ps": ["h:1", "h:2"], "worker": {1: "w:1"}})
    assert spec.as_dict() == {"ps": ["h:1", "h:2"], "worker": {1: "w:1"}}
    assert spec.jobs == ["ps", "worker"] and spec.num_tasks("ps") == 2
    assert spec.task_address("worker", 1) == "w:1"
    setter = tf.train.replica_device_setter(cluster=spec)
    with tf.device(setter):
        v = tf.Variable(0.0)
    assert v.device == "/job:ps/task:0"
