"""TensorFlow's peer of cluster_bench's BM_RemoteStepRoundTrip and of bench/cluster_step: a ps
and a worker server (tf.distribute.Server over gRPC), a tf.compat.v1 Session whose target is
the worker, and the same graphs: x = 1 on the ps, y = x + 1 on the worker, y fetched; and a
64 MiB variable on the ps of which the worker keeps one element, so that each step brings the
whole tensor over. Graph rewrites are off, so the constant is not folded away. Prints one JSON
line: the median of several rounds' mean step time.

By default both servers run in this process over loopback. With --serve JOB the process is
that job's task of --cluster and serves until killed; with --target it is the client of such
servers (bench/cluster_hosts_step.sh runs them on emulated hosts).

  tf_cluster_step.py [--rounds 5] [--runs 500]
  tf_cluster_step.py --cluster JSON --serve ps|worker
  tf_cluster_step.py --cluster JSON --target grpc://HOST:PORT [--rounds 5] [--runs 300] [--pulls 10]
"""
import argparse
import json
import socket
import statistics
import time

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2

PS_CPU = "/job:ps/replica:0/task:0/device:CPU:0"
WORKER_CPU = "/job:worker/replica:0/task:0/device:CPU:0"
PULL_ELEMENTS = (64 << 20) // 4


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mean_steps(session, fetch, rounds, runs, want):
    for _ in range(3):
        session.run(fetch)
    means = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(runs):
            assert np.asarray(session.run(fetch)).flat[0] == want
        means.append((time.perf_counter() - start) / runs)
    return means


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster")
    parser.add_argument("--serve", choices=["ps", "worker"])
    parser.add_argument("--target")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--pulls", type=int, default=0)
    args = parser.parse_args()

    tf.compat.v1.disable_eager_execution()
    if args.serve:
        server = tf.distribute.Server(tf.train.ClusterSpec(json.loads(args.cluster)), job_name=args.serve,
                                      task_index=0)
        print(f"Started server with target: {server.target}", flush=True)
        server.join()
        return
    target = args.target
    if target is None:
        cluster = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{free_port()}"],
                                        "worker": [f"127.0.0.1:{free_port()}"]})
        servers = [tf.distribute.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
        target = servers[1].target
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(PS_CPU):
            x = tf.constant(1.0, name="x")
            big = tf.compat.v1.Variable(tf.fill([PULL_ELEMENTS], 3.0), name="big")
            value = tf.identity(big, name="value")
        with tf.device(WORKER_CPU):
            y = tf.add(x, 1.0, name="y")
            pulled = tf.slice(value, [0], [1], name="pulled")
        init = tf.compat.v1.global_variables_initializer()
    config = tf.compat.v1.ConfigProto(graph_options=tf.compat.v1.GraphOptions(
        optimizer_options=tf.compat.v1.OptimizerOptions(opt_level=tf.compat.v1.OptimizerOptions.L0),
        rewrite_options=rewriter_config_pb2.RewriterConfig(disable_meta_optimizer=True)))
    with tf.compat.v1.Session(target, graph=graph, config=config) as session:
        steps = mean_steps(session, y, args.rounds, args.runs, 2.0)
        result = {"impl": "tensorflow", "tf": tf.__version__, "step_us_median": statistics.median(steps) * 1e6,
                  "step_us_min": min(steps) * 1e6, "step_us_max": max(steps) * 1e6}
        if args.pulls:
            session.run(init)
            pulls = mean_steps(session, pulled, args.rounds, args.pulls, 3.0)
            result.update(pull_64mib_ms_median=statistics.median(pulls) * 1e3, pull_64mib_ms_min=min(pulls) * 1e3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
