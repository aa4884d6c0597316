#!/usr/bin/env bash
# A step between machines, on two emulated hosts (tests/tools/emulated_hosts.sh: network
# namespaces on a bridge, each link shaped by tbf): a ps on host 2, a worker on host 1 and a
# client on host 1 whose master is the worker, for Tessera (tessera server, bench/cluster_step)
# and for TensorFlow (bench/tf_cluster_step.py, from scripts/peers.sh's virtualenv), in
# interleaved rounds. Times the round trip of a step with one edge from the ps and a step
# that brings 64 MiB from the ps, the latter beside the link's own time for 64 MiB. Root only.
#
#   bench/cluster_hosts_step.sh [--gbit 10] [--rounds 3]
set -euo pipefail
cd "$(dirname "$0")/.."
gbit=10 rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --gbit) gbit=$2 ;;
    --rounds) rounds=$2 ;;
    *) echo "cluster_hosts_step: unknown flag $1" >&2; exit 2 ;;
  esac
  shift 2
done
py=$(scripts/peers.sh | tail -1)
hosts_script=tests/tools/emulated_hosts.sh
name=tss$$
out=$(mktemp)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$hosts_script" down "$name"
  rm -f "$out"
}
trap cleanup EXIT
export TESSERA_CLUSTER_TOKEN=${TESSERA_CLUSTER_TOKEN:-bench-$$}
"$hosts_script" up "$name" 2 "${gbit}gbit"
on() { local host=$1; shift; ip netns exec "$name-h$host" "$@"; }

tessera_cluster='{"ps": ["198.18.0.2:2222"], "worker": ["198.18.0.1:2222"]}'
tf_cluster='{"ps": ["198.18.0.2:2223"], "worker": ["198.18.0.1:2223"]}'
# Started by ip itself, not through on(): $! is then the server's own pid (ip execs it).
serve() { local host=$1; shift; ip netns exec "$name-h$host" "$@" >/dev/null 2>&1 & pids+=($!); }
serve 2 build/tools/tessera server --cluster "$tessera_cluster" --job ps --task 0
serve 1 build/tools/tessera server --cluster "$tessera_cluster" --job worker --task 0
serve 2 "$py" bench/tf_cluster_step.py --cluster "$tf_cluster" --serve ps
serve 1 "$py" bench/tf_cluster_step.py --cluster "$tf_cluster" --serve worker
sleep 5  # TensorFlow's servers take a few seconds to start

for round in $(seq "$rounds"); do
  echo "round $round of $rounds: 2 hosts, ${gbit} Gbit/s links" >&2
  on 1 build/bench/cluster_step --target grpc://198.18.0.1:2222 --rounds 3 --runs 300 --pulls 10 | tee -a "$out"
  on 1 "$py" bench/tf_cluster_step.py --cluster "$tf_cluster" --target grpc://198.18.0.1:2223 --rounds 3 --runs 300 \
    --pulls 10 2>/dev/null | tee -a "$out"
done

python3 - "$out" "$gbit" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
gbit = float(sys.argv[2])
link_ms = (64 << 20) / (gbit * 1e9 / 8) * 1e3
by = {}
for run in runs:
    by.setdefault(run["impl"], []).append(run)
med = {impl: {k: statistics.median(r[k] for r in rs) for k in ("step_us_median", "pull_64mib_ms_median")}
       for impl, rs in by.items()}
print(f"\n2 hosts, {gbit:g} Gbit/s link; 64 MiB takes the link {link_ms:.1f} ms")
print(f"{'impl':<12} {'step round trip us':>19} {'vs TF':>7} {'64 MiB step ms':>15} {'of the link':>12}")
for impl, m in med.items():
    vs = m["step_us_median"] / med["tensorflow"]["step_us_median"] if "tensorflow" in med else float("nan")
    print(f"{impl:<12} {m['step_us_median']:>19.0f} {vs:>6.2f}x {m['pull_64mib_ms_median']:>15.1f} "
          f"{link_ms / m['pull_64mib_ms_median']:>11.0%}")
PY
