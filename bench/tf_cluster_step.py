"""TensorFlow's peer of cluster_bench's BM_RemoteStepRoundTrip: a ps and a worker server in
this process (tf.distribute.Server over loopback gRPC), a tf.compat.v1 Session whose target is
the worker, and the same graph: x = 1 on the ps, y = x + 1 on the worker, y fetched. Graph
rewrites are off, so the constant is not folded away. Prints one JSON line: the median of
several rounds' mean step time."""
import json
import socket
import statistics
import time

import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


tf.compat.v1.disable_eager_execution()
cluster = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{free_port()}"], "worker": [f"127.0.0.1:{free_port()}"]})
ps = tf.distribute.Server(cluster, job_name="ps", task_index=0)
worker = tf.distribute.Server(cluster, job_name="worker", task_index=0)
graph = tf.Graph()
with graph.as_default():
    with tf.device("/job:ps/replica:0/task:0/device:CPU:0"):
        x = tf.constant(1.0, name="x")
    with tf.device("/job:worker/replica:0/task:0/device:CPU:0"):
        y = tf.add(x, 1.0, name="y")
config = tf.compat.v1.ConfigProto(graph_options=tf.compat.v1.GraphOptions(
    optimizer_options=tf.compat.v1.OptimizerOptions(opt_level=tf.compat.v1.OptimizerOptions.L0),
    rewrite_options=rewriter_config_pb2.RewriterConfig(disable_meta_optimizer=True)))
with tf.compat.v1.Session(worker.target, graph=graph, config=config) as session:
    for _ in range(200):
        assert session.run(y) == 2.0
    rounds = []
    for _ in range(5):
        runs = 500
        start = time.perf_counter()
        for _ in range(runs):
            session.run(y)
        rounds.append((time.perf_counter() - start) / runs)
print(json.dumps({"tf": tf.__version__, "step_us_median": statistics.median(rounds) * 1e6,
                  "step_us_min": min(rounds) * 1e6, "step_us_max": max(rounds) * 1e6}))
