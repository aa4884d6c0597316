#!/usr/bin/env bash
# The all-reduce between machines, on emulated hosts (tests/tools/emulated_hosts.sh: network
# namespaces on a bridge, each link shaped by tbf): Tessera's AllReduce by its own ring over
# gRPC and by its Gloo backend (bench/cluster_all_reduce [--gloo]) and Gloo's own rings
# (bench/peers/gloo_all_reduce), one rank per host, in interleaved rounds; prints each run's
# JSON line and then a table of medians, with the ring's predicted time for the link and the
# seed's efficiency model P = Ts / (Ts + Tt) for a step computing --compute-ms (Ts) beside
# an all-reduce taking Tt: as predicted, and as measured. Root only (namespaces); the Gloo
# parts are built where libgloo-dev is (scripts/setup.sh installs it).
#
#   bench/cluster_hosts.sh [--hosts 3] [--gbit 10] [--bytes 67108864] [--rounds 3] [--iterations 10]
#                          [--compute-ms 100]
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=3 gbit=10 bytes=$((64 << 20)) rounds=3 iterations=10 compute_ms=100
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) hosts=$2 ;;
    --gbit) gbit=$2 ;;
    --bytes) bytes=$2 ;;
    --rounds) rounds=$2 ;;
    --iterations) iterations=$2 ;;
    --compute-ms) compute_ms=$2 ;;
    *) echo "cluster_hosts: unknown flag $1" >&2; exit 2 ;;
  esac
  shift 2
done
hosts_script=tests/tools/emulated_hosts.sh
name=tsb$$
store=$(mktemp -d)
out=$(mktemp)
trap '"$hosts_script" down "$name"; rm -rf "$store" "$out"' EXIT
# The tasks check a token, as a cluster between machines should.
export TESSERA_CLUSTER_TOKEN=${TESSERA_CLUSTER_TOKEN:-bench-$$}
"$hosts_script" up "$name" "$hosts" "${gbit}gbit"
on() { local host=$1; shift; ip netns exec "$name-h$host" "$@"; }

addresses=()
for h in $(seq "$hosts"); do addresses+=("\"198.18.0.$h:2222\""); done
cluster="{\"worker\": [$(IFS=,; echo "${addresses[*]}")]}"

# $1: "" (the engine's ring) or --gloo
tessera() {
  for r in $(seq 1 $((hosts - 1))); do
    on $((r + 1)) build/bench/cluster_all_reduce --cluster "$cluster" --rank "$r" --bytes "$bytes" \
      --iterations "$iterations" $1 2>/dev/null &
  done
  # No netem here: the links add no latency to model.
  on 1 build/bench/cluster_all_reduce --cluster "$cluster" --rank 0 --bytes "$bytes" --iterations "$iterations" \
    --link-gbit "$gbit" --link-latency-us 0 $1 2>/dev/null | tee -a "$out"
  wait
}

gloo() {
  [ -x build/bench/gloo_all_reduce ] || return 0
  rm -rf "${store:?}"/*
  for r in $(seq 1 $((hosts - 1))); do
    on $((r + 1)) build/bench/gloo_all_reduce --ranks "$hosts" --rank "$r" --hostname "198.18.0.$((r + 1))" \
      --store "$store" --bytes "$bytes" --iterations "$iterations" >/dev/null &
  done
  on 1 build/bench/gloo_all_reduce --ranks "$hosts" --rank 0 --hostname 198.18.0.1 --store "$store" \
    --bytes "$bytes" --iterations "$iterations" | tee -a "$out"
  wait
}

for round in $(seq "$rounds"); do
  echo "round $round of $rounds: $hosts hosts, ${gbit} Gbit/s links, $bytes bytes" >&2
  tessera ""
  [ -x build/bench/gloo_all_reduce ] && tessera --gloo
  gloo
done

python3 - "$out" "$bytes" "$hosts" "$gbit" "$compute_ms" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
size, hosts, gbit, ts = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]) / 1e3
predicted = 2 * (hosts - 1) / hosts * size / (gbit * 1e9 / 8)
medians = {}
for run in runs:
    medians.setdefault(run["impl"], []).append(run["median_s"])
best_gloo = min((statistics.median(v) for k, v in medians.items() if k.startswith("gloo")), default=None)
print(f"\n{hosts} hosts, {gbit:g} Gbit/s links, {size / 2**20:g} MiB; the ring's predicted time "
      f"{predicted * 1e3:.1f} ms; P = Ts / (Ts + Tt) for Ts = {ts * 1e3:g} ms: {ts / (ts + predicted):.0%} predicted")
print(f"{'impl':<20} {'median ms':>10} {'of predicted':>13} {'vs best Gloo':>13} {'P measured':>11}")
for impl, values in medians.items():
    m = statistics.median(values)
    vs = f"{best_gloo / m:.2f}x" if best_gloo else "-"
    print(f"{impl:<20} {m * 1e3:>10.1f} {predicted / m:>12.0%} {vs:>13} {ts / (ts + m):>10.0%}")
PY
