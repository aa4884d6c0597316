#!/usr/bin/env python3
"""Prints scripts/bench.sh's table from the benchmark JSON files in the given folder."""
import json, os, sys

out = sys.argv[1]
ex = json.load(open(os.path.join(out, "executor.json")))["benchmarks"]
se = json.load(open(os.path.join(out, "session.json")))["benchmarks"]
tf = [json.loads(l) for l in open(os.path.join(out, "tensorflow.jsonl")) if l.strip()]
names = {0: "chain", 1: "fanout", 2: "dag"}


def find(rows, prefix):
    """The median aggregate of the benchmark whose name starts with prefix."""
    return next((r for r in rows if r["name"].startswith(prefix) and r.get("aggregate_name") == "median"), None)


tf_version = tf[0]["tf"] if tf else "-"
print("Executor overhead, 100,000 NoOps with control edges (ns/node, median of 5, lower is better)")
print(f"TF: TensorFlow {tf_version}, tf.compat.v1 Session, graph optimizations off")
print(f"{'shape':8} {'threads':>7} {'Tessera':>9} {'oneTBB':>9} {'TF':>9} {'TBB/Tess':>9} {'TF/Tess':>8}")
for kind in range(3):
    for threads in (1, 2):
        key = f"shape:{kind}/threads:{threads}/"
        t = find(ex, f"BM_Tessera/{key}")["ns/node"] * 1e9
        b = find(ex, f"BM_TbbFlowGraph/{key}")["ns/node"] * 1e9
        f = next((r["ns_per_node_median"] for r in tf if r["shape"] == names[kind] and r["threads"] == threads), None)
        fs = f"{f:9.1f}" if f else f"{'-':>9}"
        fr = f"{f / t:8.1f}x" if f else f"{'-':>9}"
        print(f"{names[kind]:8} {threads:>7} {t:9.1f} {b:9.1f} {fs} {b / t:8.2f}x {fr}")
print()
run = find(se, "BM_SessionRunAdd")
print(f"Session::Run round trip (feed, Add, fetch): {run['real_time']:.3f} {run['time_unit']}")
print()
print("MatMul 1024x1024 float32 (GFLOP/s, higher is better)")
for threads in (1, 2):
    s = find(se, f"BM_MatMulSession/threads:{threads}/")["GFLOP/s"] / 1e0
    e = find(se, f"BM_MatMulEigenDirect/threads:{threads}/")["GFLOP/s"]
    print(f"  {threads} thread(s): session {s:6.1f}, Eigen direct {e:6.1f}, ratio {s / e:6.1%}")
