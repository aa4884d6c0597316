#!/usr/bin/env python3
"""Trains the demo's CNN for two epochs with Tessera, PyTorch and Keras on the same data,
batch and thread counts, and prints one table: training images/s (epoch 2), inference
images/s at batch 128, test accuracy and peak RSS. Run from the repository root after a
Release build (scripts/bench.sh does both); PEERS=0 runs Tessera alone.

  python3 bench/cnn_side_by_side.py [--threads 1 2] [--torch-pythons PY...] [--keras-python PY]

PyTorch runs under each given Python that has it: by default Debian's python3-torch
(/usr/bin/python3) and a virtualenv with PyPI's torch (~/.cache/tessera-torch, made by
`python3 -m venv ~/.cache/tessera-torch && ~/.cache/tessera-torch/bin/pip install torch numpy`).

Where the environment sets OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE, PyTorch runs once as the
environment has it and once with both unset."""
import argparse, json, os, re, subprocess, sys


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--torch-pythons", nargs="+",
                    default=["/usr/bin/python3", os.path.expanduser("~/.cache/tessera-torch/bin/python")])
    ap.add_argument("--keras-python", default=os.path.expanduser("~/.cache/tessera-peers/bin/python"))
    a = ap.parse_args()
    peers = os.environ.get("PEERS", "1") != "0"
    unset = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    rows = []
    for t in a.threads:
        threads_env = {"OMP_NUM_THREADS": str(t), "OPENBLAS_NUM_THREADS": str(t)}
        rows.append(tessera(t, 1))
        rows.append(tessera(t, 2))
        if peers:
            for py in a.torch_pythons:
                if subprocess.run([py, "-c", "import torch, numpy"], capture_output=True).returncode != 0:
                    continue
                r = peer(py, "bench/torch_cnn.py", t, env={**os.environ, **threads_env})
                r["peer"] = f"pytorch {r.pop('version')}"
                rows.append(r)
                if len(unset) == len(os.environ):
                    continue  # neither variable is set here: the second run would be the first
                r = peer(py, "bench/torch_cnn.py", t, env={**unset, **threads_env})
                r["peer"] = f"pytorch {r.pop('version')}, OPENBLAS_* unset"
                rows.append(r)
            for extra in ([], ["--mirrored"]):
                r = peer(a.keras_python, "bench/keras_cnn.py", t, extra=extra)
                r["peer"] = f"{r['peer']} {r.pop('version')}"
                rows.append(r)
        print(json.dumps(rows[-1]), file=sys.stderr)
    print(f"{'':36} {'threads':>7} {'train img/s':>12} {'infer img/s':>12} {'test acc':>9} {'peak RSS MiB':>13}")
    for r in rows:
        print(f"{r['peer']:36} {r['threads']:>7} {r['train']:>12.0f} {r['infer']:>12.0f} {r['accuracy']:>9.4f} "
              f"{r['rss']:>13.0f}")
    json.dump(rows, open("build/cnn_side_by_side.json", "w"), indent=1)


if __name__ == "__main__":
    main()
