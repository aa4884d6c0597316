#!/usr/bin/env bash
# Emulated machines for the cluster tests: N network namespaces ("hosts") joined by a bridge
# in a namespace of its own, host I at 198.18.0.I/24 (the benchmarking range, RFC 2544: the
# addresses exist only inside these namespaces), each host's link shaped by tbf to a rate.
# Root only.
#   emulated_hosts.sh up NAME N [RATE]        namespaces NAME-br and NAME-h1 .. NAME-hN
#                                             (RATE as tc takes it, default 10gbit)
#   emulated_hosts.sh link NAME I down|up     takes host I's link down or brings it back
#   emulated_hosts.sh netem NAME DELAY LOSS   adds latency and loss to every link ("5ms",
#                                             "1%"); exits 3 where the kernel has no netem
#   emulated_hosts.sh down NAME               removes every namespace NAME-*, and so every
#                                             link in them
# `up` removes what it made when it fails. A test calls `down` when it ends, failed or not;
# `down` is safe to repeat.
set -euo pipefail

command=$1 name=$2

namespaces() { ip netns list | awk '{print $1}' | grep -E "^${name}-(br|h[0-9]+)$" || true; }

down() {
  for ns in $(namespaces); do ip netns del "$ns" 2>/dev/null || true; done
}

case "$command" in
  up)
    hosts=$3 rate=${4:-10gbit}
    trap down ERR
    ip netns add "$name-br"
    ip -n "$name-br" link set lo up
    ip -n "$name-br" link add br0 type bridge
    ip -n "$name-br" link set br0 up
    for i in $(seq "$hosts"); do
      host="$name-h$i"
      ip netns add "$host"
      ip -n "$host" link set lo up
      # One end in the bridge's namespace, the other the host's eth0.
      ip -n "$name-br" link add "v$i" type veth peer name eth0 netns "$host"
      ip -n "$name-br" link set "v$i" master br0 up
      ip -n "$host" addr add "198.18.0.$i/24" dev eth0
      ip -n "$host" link set eth0 up
      # What the host sends, at the link's rate; a burst of 1 ms of it.
      tc -n "$host" qdisc add dev eth0 root handle 1: tbf rate "$rate" burst 2mb latency 20ms
    done
    ;;
  link)
    ip -n "$name-br" link set "v$3" "$4"
    ;;
  netem)
    for host in $(namespaces | grep -- "-h"); do
      if ! tc -n "$host" qdisc add dev eth0 parent 1:1 handle 10: netem delay "$3" loss "$4" 2>/dev/null; then
        echo "emulated_hosts: this kernel has no netem (sch_netem): latency and loss cannot be emulated" >&2
        exit 3
      fi
    done
    ;;
  down)
    down
    ;;
  *)
    echo "emulated_hosts: unknown command '$command'" >&2
    exit 2
    ;;
esac
