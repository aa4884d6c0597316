#!/usr/bin/env bash
# Builds in Release, runs every benchmark and prints one table with the peers beside
# Tessera: oneTBB's flow graph and Eigen in the same binaries, TensorFlow from its own
# script (installed on first use by scripts/peers.sh; TESSERA_BENCH_TF=0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release >/dev/null
out=build/bench-results
mkdir -p "$out"
build/bench/executor_bench --benchmark_format=json --benchmark_out="$out/executor.json" \
  --benchmark_out_format=json >/dev/null
build/bench/session_bench --benchmark_format=json --benchmark_out="$out/session.json" \
  --benchmark_out_format=json >/dev/null
: > "$out/tensorflow.jsonl"
if [ "${TESSERA_BENCH_TF:-1}" = 1 ]; then
  py=$(scripts/peers.sh)
  "$py" bench/tf_executor_overhead.py > "$out/tensorflow.jsonl"
fi
python3 bench/report.py "$out"
