#!/usr/bin/env python3
"""Trains the demo's CNN for two epochs with Tessera, PyTorch and Keras on the same data,
batch and thread counts, and prints one table: training images/s (epoch 2), inference
images/s at batch 128, test accuracy, peak RSS, and the training rate's share of this
machine's float32 FMA peak (bench/fma_peak). The machine's speed drifts by tens of percent
within an hour, so every contender runs once per round, the rounds interleave them, and the
table gives each figure's median over the rounds with its spread (min-max). Run from the
repository root after a Release build (scripts/bench.sh does both); PEERS=0 runs Tessera
alone.

  python3 bench/cnn_side_by_side.py [--rounds 3] [--threads 1 2] [--torch-pythons PY...] [--keras-python PY]

PyTorch runs under each given Python that has it: by default Debian's python3-torch
(/usr/bin/python3) and a virtualenv with PyPI's torch (~/.cache/tessera-torch, made by
`python3 -m venv ~/.cache/tessera-torch && ~/.cache/tessera-torch/bin/pip install torch numpy`).

Where the environment sets OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE, PyTorch runs once as the
environment has it and once with both unset."""
import argparse, json, os, re, statistics, subprocess, sys


# Runs the command in a fresh Python whose only child it is, so that RUSAGE_CHILDREN's peak
# is this command's own.
WRAP = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]).returncode; "
        "sys.stderr.write('\\npeak_rss_kib %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "sys.exit(r)")


def run(cmd, env=None):
    """Runs cmd; returns its stdout and its peak RSS in MiB."""
    p = subprocess.run([sys.executable, "-c", WRAP, *cmd], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-2000:])
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return p.stdout, int(re.findall(r"peak_rss_kib (\d+)", p.stderr)[-1]) / 1024


def tessera(threads, devices):
    out, rss = run(["build/tools/tessera", "train", "--epochs", "2", "--devices", str(devices),
                    "--threads", str(threads), "--no-progress"])
    rates = [float(m) for m in re.findall(r"([0-9.]+) images/s", out.replace("\r", "\n"))]
    accuracy = [float(m) for m in re.findall(r"test accuracy ([0-9.]+)", out)]
    bench, _ = run(["build/bench/cnn_bench", f"--benchmark_filter=BM_CnnInference/threads:{threads}/",
                    "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true",
                    "--benchmark_format=json"])
    infer = [b["images/s"] for b in json.loads(bench)["benchmarks"] if b.get("aggregate_name") == "median"][0]
    name = "tessera" if devices == 1 else f"tessera mirrored x{devices}"
    return {"peer": name, "threads": threads, "train": rates[-1], "infer": infer, "accuracy": accuracy[-1],
            "rss": rss}


def peer(python, script, threads, extra=(), env=None, label=None):
    out, _ = run([python, script, "--threads", str(threads), *extra], env=env)
    r = json.loads(out.strip().splitlines()[-1])
    return {"peer": label or r["peer"], "version": r["version"], "threads": threads,
            "train": r["epochs"][-1]["images_per_s"], "infer": r["inference_images_per_s"],
            "accuracy": r["epochs"][-1]["test_accuracy"], "rss": r["peak_rss_mib"]}


# The CNN's float32 work per training image, a multiply-add counted as two FLOPs: the
# forward pass, the weight gradients, and the input gradients of every layer but the first.
def training_flops_per_image():
    convs = [(26 * 26, 32, 3 * 3 * 1), (11 * 11, 64, 3 * 3 * 32)]  # (output pixels, filters, taps)
    dense = [(64 * 5 * 5, 64), (64, 10)]
    forward = [2 * p * f * k for p, f, k in convs] + [2 * i * o for i, o in dense]
    return sum(forward) * 2 + sum(forward[1:])


def fma_peak():
    """GFLOP/s by thread count, as bench/fma_peak measures it now."""
    out, _ = run(["build/bench/fma_peak", "--benchmark_format=json"])
    return {b["threads"]: b["GFLOP/s"] for b in json.loads(out)["benchmarks"]}


def contenders(a, peers):
    """(label, threads, function running it once) in the order a round runs them."""
    unset = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    out = []
    for t in a.threads:
        threads_env = {"OMP_NUM_THREADS": str(t), "OPENBLAS_NUM_THREADS": str(t)}
        out.append(("tessera", t, lambda t=t: tessera(t, 1)))
        out.append(("tessera mirrored x2", t, lambda t=t: tessera(t, 2)))
        if not peers:
            continue
        for py in a.torch_pythons:
            if subprocess.run([py, "-c", "import torch, numpy"], capture_output=True).returncode != 0:
                continue
            version = subprocess.run([py, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                                     text=True).stdout.strip()
            out.append((f"pytorch {version}", t,
                        lambda py=py, t=t, e=threads_env: peer(py, "bench/torch_cnn.py", t, env={**os.environ, **e})))
            if len(unset) != len(os.environ):  # only where a variable is set does a second run differ
                out.append((f"pytorch {version}, OPENBLAS_* unset", t,
                            lambda py=py, t=t, e=threads_env: peer(py, "bench/torch_cnn.py", t, env={**unset, **e})))
        for extra, label in (([], "keras"), (["--mirrored"], "keras mirrored x2")):
            out.append((label, t, lambda t=t, extra=extra: peer(a.keras_python, "bench/keras_cnn.py", t, extra=extra)))
    return out


def median(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--torch-pythons", nargs="+",
                    default=["/usr/bin/python3", os.path.expanduser("~/.cache/tessera-torch/bin/python")])
    ap.add_argument("--keras-python", default=os.path.expanduser("~/.cache/tessera-peers/bin/python"))
    a = ap.parse_args()
    runs = {}   # (label, threads) -> [row of one round]
    peaks = {}  # threads -> [GFLOP/s of one round]
    for r in range(a.rounds):
        for t, gflops in fma_peak().items():
            peaks.setdefault(t, []).append(gflops)
        for label, t, once in contenders(a, os.environ.get("PEERS", "1") != "0"):
            row = once()
            runs.setdefault((label, t), []).append(row)
            print(json.dumps({"round": r, "label": label, **row}), file=sys.stderr)
    flops = training_flops_per_image()
    peak = {t: median(v) for t, v in peaks.items()}
    print(f"{a.rounds} interleaved rounds, medians (spread min-max); training: {flops / 1e6:.1f} MFLOP per image; "
          "FMA peak " + ", ".join(f"{peak[t]:.0f} GFLOP/s at {t} thread{'s' if t > 1 else ''}" for t in sorted(peak)))
    print(f"{'':36} {'threads':>7} {'train img/s':>20} {'of peak':>8} {'infer img/s':>20} {'test acc':>9} "
          f"{'peak RSS MiB':>13}")
    summary = []
    for (label, t), rows in runs.items():
        train = [r["train"] for r in rows]
        infer = [r["infer"] for r in rows]
        m = {"peer": label, "threads": t, "train": median(train), "train_min": min(train), "train_max": max(train),
             "infer": median(infer), "infer_min": min(infer), "infer_max": max(infer),
             "accuracy": median([r["accuracy"] for r in rows]), "rss": max(r["rss"] for r in rows)}
        m["peak_share"] = m["train"] * flops / (peak[t] * 1e9) if t in peak else float("nan")
        summary.append(m)
        if rows[0].get("version") and rows[0]["version"] not in label:
            label = f"{label} {rows[0]['version']}"
        print(f"{label:36} {t:>7} {m['train']:>7.0f} ({m['train_min']:.0f}-{m['train_max']:.0f}) "
              f"{100 * m['peak_share']:>7.1f}% {m['infer']:>7.0f} ({m['infer_min']:.0f}-{m['infer_max']:.0f}) "
              f"{m['accuracy']:>9.4f} {m['rss']:>13.0f}")
    for t in a.threads:
        mine = next(m for m in summary if m["peer"] == "tessera" and m["threads"] == t)
        others = [m for m in summary if m["threads"] == t and not m["peer"].startswith("tessera")]
        if others:
            best_train = max(others, key=lambda m: m["train"])
            best_infer = max(others, key=lambda m: m["infer"])
            print(f"{t} thread{'s' if t > 1 else ''}: Tessera / best peer: training {mine['train'] / best_train['train']:.2f}x "
                  f"({best_train['peer']}), inference {mine['infer'] / best_infer['infer']:.2f}x ({best_infer['peer']})")
    by_threads = {m["threads"]: m for m in summary if m["peer"] == "tessera"}
    if 1 in by_threads and 2 in by_threads:
        print(f"Tessera training, 2 threads / 1 thread: {by_threads[2]['train'] / by_threads[1]['train']:.2f}x")
    json.dump({"rounds": a.rounds, "fma_peak_gflops": peaks, "training_flops_per_image": flops, "summary": summary,
               "runs": {f"{label} / {t}": rows for (label, t), rows in runs.items()}},
              open("build/cnn_side_by_side.json", "w"), indent=1)


if __name__ == "__main__":
    main()
