#!/usr/bin/env python3
"""Runs the same Google Benchmark binaries from two build trees, round by round (A, B, A, B,
...: the machine's speed drifts), and prints each benchmark's median real time in both and
the ratio B/A of the medians with its spread over the rounds. What a change that must not
move performance (a refactoring) is checked with:

  scripts/compare_builds.py --rounds 5 OLD_BUILD NEW_BUILD executor_bench session_bench

Extra arguments for every binary go after --, e.g. -- --benchmark_min_time=0.2.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(binary, extra):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([binary, f"--benchmark_out={out.name}", "--benchmark_out_format=json", *extra],
                       check=True, stdout=subprocess.DEVNULL)
        rows = json.load(open(out.name))["benchmarks"]
    return {r["name"]: r["real_time"] for r in rows if r.get("run_type", "iteration") == "iteration"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("benches", nargs="+")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    times = {}  # (bench, name) -> {"old": [...], "new": [...]}
    for r in range(args.rounds):
        for side, root in (("old", args.old), ("new", args.new)):
            for bench in args.benches:
                for name, t in run(os.path.join(root, "bench", bench), extra).items():
                    times.setdefault((bench, name), {"old": [], "new": []})[side].append(t)
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    print(f"{'benchmark':60} {'old':>12} {'new':>12} {'new/old':>8} {'per round':>16}")
    for (bench, name), t in times.items():
        if len(t["old"]) != len(t["new"]) or not t["old"]:
            continue
        old, new = statistics.median(t["old"]), statistics.median(t["new"])
        ratios = sorted(n / o for o, n in zip(t["old"], t["new"]))
        print(f"{bench + ':' + name:60.60} {old:12.4g} {new:12.4g} {new / old:8.3f} "
              f"{ratios[0]:7.3f}-{ratios[-1]:.3f}")


if __name__ == "__main__":
    main()
