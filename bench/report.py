#!/usr/bin/env python3
"""Prints scripts/bench.sh's table from the benchmark JSON files in the given folder."""
import json, os, statistics, sys

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
print()
co = json.load(open(os.path.join(out, "collective.json")))["benchmarks"]
one = find(co, "BM_Memcpy/67108864/real_time")["bytes_per_second"] / 1e9
two = find(co, "BM_Memcpy/67108864/real_time/threads:2")["bytes_per_second"] / 1e9
print(f"Ring all-reduce, float32 (median of 5); memcpy 64 MiB: {one:.1f} GB/s on one thread, {two:.1f} GB/s on two")
print("  link bound: every device its own link at one thread's memcpy speed (NCCL's convention)")
print("  shared bound: all devices' transfers through this machine's one memory system")
print(f"{'devices':>7} {'size':>8} {'time':>10} {'algbw GB/s':>10} {'% link':>7} {'% shared':>8}")
for devices in (2, 4):
    for size, label in ((1 << 10, "1 KiB"), (1 << 20, "1 MiB"), (64 << 20, "64 MiB")):
        r = find(co, f"BM_RingAllReduce/devices:{devices}/bytes:{size}/")
        print(f"{devices:>7} {label:>8} {r['real_time']:8.1f}{r['time_unit']:>2} {r['bytes_per_second'] / 1e9:10.2f}"
              f" {r['pct_of_link_bound']:6.0f}% {r['pct_of_shared_bound']:7.0f}%")
hop1 = find(co, "BM_IdentityChain/devices:1/")["per_hop_us"]
hop2 = find(co, "BM_IdentityChain/devices:2/")["per_hop_us"]
print(f"Cross-device Send/Recv of a 16-float tensor: {hop2 - hop1:.2f} us per transfer "
      f"(chain of Identity ops: {hop2:.2f} us per hop alternating two devices, {hop1:.2f} on one)")
base = find(co, "BM_DataParallelMlpStep/devices:1/")["real_time"]
steps = ", ".join(
    f"{d} devices {find(co, f'BM_DataParallelMlpStep/devices:{d}/')['real_time']:.2f} ms "
    f"({find(co, f'BM_DataParallelMlpStep/devices:{d}/')['real_time'] / base:.2f}x)" for d in (1, 2, 4))
print(f"Mirrored MLP step (784-256-10, global batch 256, 2 cores): {steps}")
print()
qu = json.load(open(os.path.join(out, "queue.json")))["benchmarks"]
via = find(qu, "BM_FifoQueueThroughSessions")["items_per_second"]
direct = find(qu, "BM_FifoQueueDirect")["items_per_second"]
print(f"FIFOQueue of float32[4], producer and consumer threads (median of 5): "
      f"{via / 1e3:.0f}k dequeues/s through Session::Run, {direct / 1e3:.0f}k/s on the Queue directly")
print()
da = json.load(open(os.path.join(out, "dataset.json")))["benchmarks"]
tfd = [json.loads(l) for l in open(os.path.join(out, "tf_data.jsonl")) if l.strip()]
print("Fashion-MNIST pipeline map(normalise) -> shuffle(10,000) -> batch(128) -> prefetch, "
      "one batch per Session::Run (images/s, median of 5, higher is better)")
print(f"{'threads':>7} {'Tessera':>10} {'tf.data':>10} {'Tess/TF':>8}")
for threads in (1, 2):
    t = find(da, f"BM_FashionMnistPipeline/threads:{threads}/")["items_per_second"]
    f = next((r["images_per_second"] for r in tfd if r["threads"] == threads), None)
    fs = f"{f / 1e3:9.1f}k" if f else f"{'-':>10}"
    fr = f"{t / f:7.1f}x" if f else f"{'-':>8}"
    print(f"{threads:>7} {t / 1e3:9.1f}k {fs} {fr}")
print()
cl = json.load(open(os.path.join(out, "cluster.json")))["benchmarks"]
tfc = [json.loads(l) for l in open(os.path.join(out, "tf_cluster.jsonl")) if l.strip()]
print("Cluster over loopback: two tasks, each a server (median of 5)")
streams = {r["name"].split("/")[1]: r["bytes_per_second"] / 1e9 for r in cl
           if r["name"].startswith("BM_GrpcStreaming/") and r.get("aggregate_name") == "median"}
chunk, best = max(streams.items(), key=lambda kv: kv[1])
unary = find(cl, "BM_GrpcUnaryRoundTrip")["real_time"]
print(f"  plain gRPC streaming, best of {len(streams)} chunk sizes ({int(chunk) >> 10} KiB): {best:.2f} GB/s; "
      f"one plain gRPC unary call: {unary:.0f} us")
for arg, transport in (("1", "direct transport"), ("0", "gRPC only")):
    recv = find(cl, f"BM_RemoteRecv/{arg}/")["bytes_per_second"] / 1e9
    step = find(cl, f"BM_RemoteStepRoundTrip/{arg}/")["real_time"]
    tf_step = f"{tfc[0]['step_us_median']:.0f} us (TensorFlow {tfc[0]['tf']})" if tfc else "-"
    ratio = f", ratio {step / tfc[0]['step_us_median']:.2f}" if tfc else ""
    print(f"  {transport}: 64 MiB tensor from another task {recv:.2f} GB/s, {recv / best:.0%} of plain gRPC; "
          f"step round trip (x on the ps, y = x + 1 on the worker, y fetched) {step:.0f} us; "
          f"TensorFlow's server: {tf_step}{ratio}")
runs = [json.loads(l) for l in open(os.path.join(out, "all_reduce.jsonl")) if l.strip()]
impls = list(dict.fromkeys(r["impl"] for r in runs))
median = {i: statistics.median_low(r["median_s"] for r in runs if r["impl"] == i) for i in impls}
print("All-reduce (sum) of 64 MiB float32 between two processes, in place; median over rounds of each "
      "run's median of 20")
print(f"  {'':24} {'time':>8} {'GB/s':>6} {'peer time / Tessera time':>25}")
for i in impls:
    print(f"  {i:24} {median[i] * 1e3:6.1f}ms {(64 << 20) / median[i] / 1e9:6.2f} {median[i] / median['tessera']:24.2f}x")
