"""train.replica_device_setter and ClusterSpec, with the devices TensorFlow 2.21 gives;
train.Server tasks in this process, stepped through grpc:// sessions."""

import socket

import numpy as np
import pytest

import tessera
import tessera.compat.v1 as tf


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def test_a_local_server_runs_steps_through_its_target():
    server = tf.train.Server.create_local_server()
    assert server.target.startswith("grpc://127.0.0.1:")
    x = tf.placeholder(tf.float32, [2])
    y = x * 2 + 1
    with tf.Session(server.target) as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [1, 2]}), [3, 5])
        assert {p["device"] for p in tessera.placement(sess)} == {"/job:localhost/replica:0/task:0/device:CPU:0"}


def test_between_graph_training_keeps_variables_on_the_ps():
    cluster = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{free_port()}"], "worker": [f"127.0.0.1:{free_port()}"]})
    ps = tf.train.Server(cluster, job_name="ps", task_index=0)
    worker = tf.train.Server(cluster, job_name="worker", task_index=0)
    with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device="/job:worker/task:0")):
        w = tf.Variable(4.0, name="w")
        loss = tf.square(w - 1.0)
        train = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
    with tf.Session(worker.target) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        assert sess.run(w) == pytest.approx(1.375)  # w - 1 halves each step: 3, 1.5, 0.75, 0.375
        devices = {p["node"]: p["device"] for p in tessera.placement(sess)}
    assert devices["w"] == "/job:ps/replica:0/task:0/device:CPU:0"
    assert devices["Square"] == "/job:worker/replica:0/task:0/device:CPU:0"
    # The variable lives in the ps task: a new session through the ps's target sees it.
    with tf.Session(ps.target) as again:
        assert again.run(w) == pytest.approx(1.375)


def test_a_server_needs_its_job_and_task():
    cluster = {"ps": ["127.0.0.1:1", "127.0.0.1:2"], "worker": ["127.0.0.1:3"]}
    with pytest.raises(ValueError, match="job_name"):
        tf.train.Server(cluster, start=False)
    with pytest.raises(ValueError, match="task_index"):
        tf.train.Server(cluster, job_name="ps", start=False)
    assert tf.train.Server(cluster, job_name="worker", start=False).target == "grpc://127.0.0.1:3"
    with pytest.raises(ValueError, match="No task with index 3 in job 'ps'"):
        tf.train.Server({"ps": ["127.0.0.1:1"]}, job_name="ps", task_index=3)
