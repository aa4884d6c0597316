#!/usr/bin/env python3
"""TensorFlow's executor overhead per node, on the same three graphs of 100,000 NoOps joined
by control edges that bench/executor_bench.cc runs (bench/graphs.h builds the same shapes
with the same generator rules), in tf.compat.v1 graph mode with one Session.run per graph
run so Python is not in the per-node path, and graph optimizations off so every NoOp runs.
Prints one JSON line per (shape, threads)."""
import argparse, json, os, random, sys, time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1


def chain(n):
    return [(i - 1, i) for i in range(1, n)]


def fan_out_fan_in(n):
    edges = []
    for i in range(1, n - 1):
        edges += [(0, i), (i, n - 1)]
    return edges


class Mt19937:
    """std::mt19937 (32-bit), so the random DAG is the one the C++ benchmark builds."""

    def __init__(self, seed):
        self.mt = [0] * 624
        self.index = 624
        self.mt[0] = seed
        for i in range(1, 624):
            self.mt[i] = (1812433253 * (self.mt[i - 1] ^ (self.mt[i - 1] >> 30)) + i) & 0xFFFFFFFF

    def __call__(self):
        if self.index >= 624:
            for i in range(624):
                y = (self.mt[i] & 0x80000000) | (self.mt[(i + 1) % 624] & 0x7FFFFFFF)
                self.mt[i] = self.mt[(i + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
            self.index = 0
        y = self.mt[self.index]
        self.index += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        y ^= y >> 18
        return y


def random_dag(n, fan_in=4, seed=42):
    rng = Mt19937(seed)
    edges = []
    for i in range(1, n):
        srcs = []
        while len(srcs) < min(i, fan_in):
            src = rng() % i
            if src not in srcs:
                srcs.append(src)
        edges += [(s, i) for s in srcs]
    return edges


def graph_def(n, edges):
    deps = [[] for _ in range(n)]
    has_out = [False] * n
    for s, d in edges:
        deps[d].append(s)
        has_out[s] = True
    gd = tf1.GraphDef()
    for i in range(n):
        node = gd.node.add()
        node.name = f"n{i}"
        node.op = "NoOp"
        node.input.extend(f"^n{s}" for s in deps[i])
    sinks = [i for i in range(n) if not has_out[i]]
    return gd, [f"n{i}" for i in sinks]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    shapes = {"chain": chain(a.nodes), "fanout": fan_out_fan_in(a.nodes), "dag": random_dag(a.nodes)}
    for name, edges in shapes.items():
        gd, sinks = graph_def(a.nodes, edges)
        for threads in (1, 2):
            g = tf1.Graph()
            with g.as_default():
                tf1.import_graph_def(gd, name="")
                with tf1.control_dependencies([g.get_operation_by_name(s) for s in sinks]):
                    target = tf1.no_op(name="all_sinks")
            config = tf1.ConfigProto(inter_op_parallelism_threads=threads, intra_op_parallelism_threads=1)
            # Grappler's dependency optimizer deletes NoOps joined by control edges, which
            # would leave TensorFlow nothing to execute: keep the graph as written.
            config.graph_options.rewrite_options.disable_meta_optimizer = True
            config.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
            with tf1.Session(graph=g, config=config) as sess:
                sess.run(target)  # builds and caches the executor
                times = []
                for _ in range(a.runs):
                    t = time.perf_counter()
                    sess.run(target)
                    times.append(time.perf_counter() - t)
            times.sort()
            print(json.dumps({"peer": "tensorflow", "tf": tf.__version__, "shape": name, "threads": threads,
                              "ns_per_node_median": times[len(times) // 2] / a.nodes * 1e9,
                              "ns_per_node_best": times[0] / a.nodes * 1e9}))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
