"""Tessera's Python package beside TensorFlow 2.21's tf.compat.v1, in interleaved rounds:
the sess.run round trip of a tiny graph, the TF1 CNN tutorial (examples/python/
fashion_cnn_tf1.py) at 1 and 2 threads, and a 64 MiB feed and fetch (time and peak RSS as
the tensor grows). Each measurement runs in a fresh process.

    python3 bench/python_peers.py TESSERA_PYTHON TENSORFLOW_PYTHON [--rounds 3] [--steps 200]
        [--session-bench build/bench/session_bench]

where TESSERA_PYTHON has the package installed (scripts/python_package.sh prints it) and
TENSORFLOW_PYTHON has TensorFlow and tf_keras (scripts/peers.sh prints it). With
--session-bench, each round also times the same graph through C++ Session::Run (its
BM_SessionRunAsPythonDoes), for what Python adds to a step.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def import_tf(engine):
    if engine == "tensorflow":
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        return tf
    import tessera.compat.v1 as tf
    return tf


def round_trip(engine):
    """Median seconds of sess.run on a + b (one feed, one fetch, one element)."""
    import numpy as np
    tf = import_tf(engine)
    a = tf.placeholder(tf.float32, [1])
    c = a + tf.constant([1.0])
    v = np.ones(1, np.float32)
    times = []
    with tf.Session() as sess:
        for _ in range(2000):
            sess.run(c, {a: v})
        for _ in range(7):
            start = time.perf_counter()
            for _ in range(5000):
                sess.run(c, {a: v})
            times.append((time.perf_counter() - start) / 5000)
    return {"seconds": statistics.median(times)}


def big_feed(engine, mib):
    """Seconds to feed and fetch a `mib` MiB float32 tensor through Identity, and peak RSS."""
    import numpy as np
    tf = import_tf(engine)
    n = mib << 18
    x = tf.placeholder(tf.float32, [n])
    y = x * 1.0  # computed, so the fetch is the engine's own buffer
    value = np.ones(n, np.float32)
    with tf.Session() as sess:
        sess.run(y, {x: value})
        start = time.perf_counter()
        for _ in range(5):
            out = sess.run(y, {x: value})
        seconds = (time.perf_counter() - start) / 5
    assert out[0] == 1.0
    return {"seconds": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def cnn(engine, threads, steps):
    script = os.path.join(HERE, "..", "examples", "python", "fashion_cnn_tf1.py")
    out = subprocess.run([sys.executable, script, "--engine", engine, "--threads", str(threads), "--steps",
                          str(steps)], capture_output=True, text=True, check=True).stdout
    last = out.strip().splitlines()[-1]  # "<engine>: N images/s (C CPU-seconds), test accuracy A"
    images_per_s = float(last.split(": ")[1].split()[0])
    cpu_seconds = float(last.split("(")[1].split()[0])
    return {"images_per_s": images_per_s, "images_per_cpu_s": steps * 128 / cpu_seconds,
            "accuracy": float(last.split()[-1])}


def cpp_round_trip(session_bench):
    """Seconds of C++ Session::Run on the round trip's graph (Google Benchmark's real time)."""
    out = subprocess.run([session_bench, "--benchmark_filter=^BM_SessionRunAsPythonDoes$",
                          "--benchmark_format=json", "--benchmark_repetitions=7",
                          "--benchmark_report_aggregates_only=true"], capture_output=True, text=True, check=True)
    runs = json.loads(out.stdout)["benchmarks"]
    median = next(b for b in runs if b.get("aggregate_name") == "median")
    return median["real_time"] * {"us": 1e-6, "ns": 1e-9, "ms": 1e-3}[median["time_unit"]]


def measure(python, case, engine, *args):
    cmd = [python, os.path.abspath(__file__), "--case", case, "--engine", engine, *map(str, args)]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    if "--case" in sys.argv:
        p = argparse.ArgumentParser()
        p.add_argument("--case")
        p.add_argument("--engine")
        p.add_argument("rest", nargs="*", type=int)
        a = p.parse_args()
        fn = {"round_trip": round_trip, "big_feed": big_feed, "cnn": cnn}[a.case]
        print(json.dumps(fn(a.engine, *a.rest)))
        return
    p = argparse.ArgumentParser()
    p.add_argument("tessera_python")
    p.add_argument("tensorflow_python")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--session-bench")
    a = p.parse_args()
    pythons = {"tessera": a.tessera_python, "tensorflow": a.tensorflow_python}
    cases = [("round_trip", ()), ("cnn", (1, a.steps)), ("cnn", (2, a.steps)), ("big_feed", (16,)),
             ("big_feed", (64,))]
    results = {}
    for r in range(a.rounds):
        for case, args in cases:
            for engine in ("tessera", "tensorflow"):
                got = measure(pythons[engine], case, engine, *args)
                results.setdefault((case, args, engine), []).append(got)
                print(json.dumps({"round": r, "case": case, "args": args, "engine": engine, **got}), flush=True)
        if a.session_bench:
            got = {"seconds": cpp_round_trip(a.session_bench)}
            results.setdefault(("round_trip", (), "c++"), []).append(got)
            print(json.dumps({"round": r, "case": "round_trip", "engine": "c++", **got}), flush=True)

    def med(case, args, engine, key):
        return statistics.median(x[key] for x in results[(case, args, engine)])

    print("\n| measurement | Tessera | TensorFlow | ratio |\n|---|---|---|---|")
    t, f = med("round_trip", (), "tessera", "seconds"), med("round_trip", (), "tensorflow", "seconds")
    print(f"| sess.run round trip (a + b, one feed, one fetch) | {t * 1e6:.1f} us | {f * 1e6:.1f} us | {t / f:.2f}x |")
    if a.session_bench:
        c = med("round_trip", (), "c++", "seconds")
        print(f"| the same graph through C++ Session::Run | {c * 1e6:.1f} us (Python adds {(t - c) * 1e6:.1f} us) "
              "| | |")
    for threads in (1, 2):
        t = med("cnn", (threads, a.steps), "tessera", "images_per_s")
        f = med("cnn", (threads, a.steps), "tensorflow", "images_per_s")
        print(f"| TF1 CNN tutorial, {a.steps} steps of 128, {threads} thread(s): images/s | {t:.0f} | {f:.0f} | "
              f"{t / f:.2f}x |")
        t = med("cnn", (threads, a.steps), "tessera", "images_per_cpu_s")
        f = med("cnn", (threads, a.steps), "tensorflow", "images_per_cpu_s")
        print(f"| the same, images per CPU-second (all cores the process used) | {t:.0f} | {f:.0f} | {t / f:.2f}x |")
    for mib in (16, 64):
        t, f = med("big_feed", (mib,), "tessera", "seconds"), med("big_feed", (mib,), "tensorflow", "seconds")
        tr, fr = med("big_feed", (mib,), "tessera", "peak_rss_mb"), med("big_feed", (mib,), "tensorflow",
                                                                         "peak_rss_mb")
        print(f"| {mib} MiB feed and fetch: ms, peak RSS MB | {t * 1e3:.1f}, {tr:.0f} | {f * 1e3:.1f}, {fr:.0f} | "
              f"{t / f:.2f}x, {tr / fr:.2f}x |")


if __name__ == "__main__":
    main()
