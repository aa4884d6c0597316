#!/usr/bin/env bash
# Builds in Release, runs every benchmark and prints one table with the peers beside
# Tessera: oneTBB's flow graph, Eigen and memcpy in the same binaries, TensorFlow from its own
# script (installed on first use by scripts/peers.sh; TESSERA_BENCH_TF=0 skips it), plain gRPC,
# Gloo and OpenMPI beside the cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --peers
scripts/build.sh release >/dev/null
out=build/bench-results
mkdir -p "$out"
# Medians of five repetitions: single runs on a shared 2-core VM vary by tens of percent.
reps=(--benchmark_repetitions=5 --benchmark_report_aggregates_only=true)
build/bench/executor_bench "${reps[@]}" --benchmark_format=json --benchmark_out="$out/executor.json" \
  --benchmark_out_format=json >/dev/null
build/bench/session_bench "${reps[@]}" --benchmark_format=json --benchmark_out="$out/session.json" \
  --benchmark_out_format=json >/dev/null
build/bench/collective_bench "${reps[@]}" --benchmark_format=json --benchmark_out="$out/collective.json" \
  --benchmark_out_format=json >/dev/null
build/bench/queue_bench "${reps[@]}" --benchmark_format=json --benchmark_out="$out/queue.json" \
  --benchmark_out_format=json >/dev/null
build/bench/dataset_bench "${reps[@]}" --benchmark_format=json --benchmark_out="$out/dataset.json" \
  --benchmark_out_format=json >/dev/null
# Interleaved repetitions: Tessera and its gRPC peers see the same drift of the machine.
build/bench/cluster_bench "${reps[@]}" --benchmark_enable_random_interleaving=true --benchmark_format=json --benchmark_out="$out/cluster.json" \
  --benchmark_out_format=json >/dev/null
# The cross-process all-reduce and its peers, interleaved round by round; OpenMPI both over
# shared memory (its default between processes of one machine) and over loopback TCP.
: > "$out/all_reduce.jsonl"
mpi=(mpirun --allow-run-as-root --oversubscribe -np 2 build/bench/mpi_all_reduce)
for round in 1 2 3; do
  build/bench/cluster_all_reduce >> "$out/all_reduce.jsonl"
  build/bench/cluster_all_reduce --grpc >> "$out/all_reduce.jsonl"
  build/bench/gloo_all_reduce >> "$out/all_reduce.jsonl"
  "${mpi[@]}" --label "openmpi shared memory" >> "$out/all_reduce.jsonl"
  OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=lo "${mpi[@]}" --label "openmpi tcp" >> "$out/all_reduce.jsonl"
done
: > "$out/tensorflow.jsonl"
: > "$out/tf_data.jsonl"
: > "$out/tf_cluster.jsonl"
if [ "${TESSERA_BENCH_TF:-1}" = 1 ]; then
  py=$(scripts/peers.sh)
  "$py" bench/tf_executor_overhead.py > "$out/tensorflow.jsonl" 2> "$out/tensorflow.log"
  "$py" bench/tf_data_pipeline.py > "$out/tf_data.jsonl" 2>> "$out/tensorflow.log"
  "$py" bench/tf_cluster_step.py > "$out/tf_cluster.jsonl" 2>> "$out/tensorflow.log"
fi
python3 bench/report.py "$out"
