#!/usr/bin/env bash
# A Slurm of one node, this machine, for the launcher tests: munged, slurmctld and slurmd as
# root, everything they write under DIR, their ports given (so that tests running at once do
# not meet).
#   one_node_slurm.sh start DIR CTLD_PORT SLURMD_PORT   prints the SLURM_CONF to use
#   one_node_slurm.sh stop DIR                          stops them; removes DIR
# Processes are tracked by linuxproc and bound to nothing (task/none): what a container
# without cgroups allows. srun --overcommit runs more tasks than the node's cores.
set -euo pipefail

command=$1 dir=$2

stop() {
  SLURM_CONF="$dir/slurm.conf" scontrol shutdown >/dev/null 2>&1 || true
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    pid=$(cat "$pidfile" 2>/dev/null) || continue  # gone: the daemon removed it on its way out
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; kill "$pid" 2>/dev/null || true; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$dir"
}

if [ "$command" = stop ]; then
  stop
  exit 0
fi

ctld_port=$3 slurmd_port=$4
mkdir -p "$dir"/{state,spool,log,munge}
# A start that fails shows the daemons' logs before it removes them.
trap 'tail -20 "$dir"/log/*.log >&2 2>/dev/null || true; stop' ERR
# munged insists on a private key and a socket directory others may enter.
head -c 128 /dev/urandom >"$dir/munge/munge.key"
chmod 600 "$dir/munge/munge.key"
chmod 755 "$dir/munge"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
host=$(hostname -s)
cat >"$dir/slurm.conf" <<EOF
ClusterName=tessera
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=localhost NodeHostname=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=main Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
export SLURM_CONF="$dir/slurm.conf"
slurmctld
slurmd
# Up once the node is idle; bounded.
for _ in $(seq 100); do
  if sinfo -h -o %t 2>/dev/null | grep -q idle; then
    echo "$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
echo "one_node_slurm: the node did not come up; slurmctld's log:" >&2
tail -20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
stop
exit 1
