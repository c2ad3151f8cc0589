#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for tests and for trying scripts/slurm/ by hand:
#   one_node_cluster.sh start DIR   generates DIR/slurm.conf, starts munged, slurmctld and slurmd
#                                   with everything (keys, sockets, spool, logs) under DIR, waits
#                                   until the node is idle, prints `export SLURM_CONF=...`
#   one_node_cluster.sh stop DIR    stops every daemon it started there (by pid file) and waits
# Needs root (slurmd runs jobs as their users) and Debian's slurm-wlm and munge
# (scripts/install-deps.sh with COUPLER_SLURM=1). Nothing outside DIR is touched: the daemons
# use their own munge socket and key and ports found free, so a real cluster on the machine is
# left alone. Settings seen working on this kind of machine: proctrack/pgid, task/none, no
# accounting (sacct is therefore unavailable; steps show in `scontrol show step`).
set -euo pipefail

die() { echo "one_node_cluster: $*" >&2; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    (( SECONDS < deadline )) || return 1
    sleep 0.2
  done
}

start() {
  local dir=$1
  [[ $(id -u) -eq 0 ]] || die "must run as root (slurmd starts jobs as their users)"
  for p in munged mungekey slurmctld slurmd sinfo scontrol; do
    command -v "$p" >/dev/null || die "$p not found: run COUPLER_SLURM=1 scripts/install-deps.sh"
  done
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  chmod 0700 "$dir"
  mkdir -p "$dir"/{munge,state,spool,log}
  chmod 0700 "$dir/munge"
  mungekey --create --keyfile="$dir/munge/munge.key" --force >/dev/null
  chmod 0400 "$dir/munge/munge.key"
  munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" --force \
    || die "munged did not start: $(tail -3 "$dir/log/munged.log" 2>/dev/null)"

  local node cpus mem ctld_port slurmd_port
  node=$(hostname -s)
  cpus=$(nproc)
  # Slurm wants RealMemory in MiB at most what the node has; leave some for the system.
  mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  cat >"$dir/slurm.conf" <<CONF
ClusterName=coupler-test
SlurmctldHost=${node}(127.0.0.1)
SlurmctldPort=${ctld_port}
SlurmdPort=${slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${dir}/munge/munge.socket
StateSaveLocation=${dir}/state
SlurmdSpoolDir=${dir}/spool
SlurmctldPidFile=${dir}/slurmctld.pid
SlurmdPidFile=${dir}/slurmd.pid
SlurmctldLogFile=${dir}/log/slurmctld.log
SlurmdLogFile=${dir}/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# What a drain has to finish in after scancel or the time limit sends SIGTERM.
KillWait=60
InactiveLimit=0
MinJobAge=300
SlurmdTimeout=300
NodeName=${node} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${mem} State=UNKNOWN
PartitionName=debug Nodes=${node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
  export SLURM_CONF="$dir/slurm.conf"
  slurmctld -f "$SLURM_CONF" -i || die "slurmctld did not start: $(tail -5 "$dir/log/slurmctld.log")"
  slurmd -f "$SLURM_CONF" -N "$node" || die "slurmd did not start: $(tail -5 "$dir/log/slurmd.log")"
  wait_for 60 "the node" sh -c "sinfo -h -N -o %T | grep -qx idle" \
    || die "node $node not idle after 60 s: $(sinfo -N 2>&1 | tail -2); $(tail -5 "$dir/log/slurmctld.log")"
  echo "export SLURM_CONF=$SLURM_CONF"
}

stop_pid_file() {  # stop_pid_file FILE NAME
  [[ -f $1 ]] || return 0
  local pid
  pid=$(cat "$1")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait_for 30 "$2 to stop" sh -c "! kill -0 $pid" || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$1"
}

stop() {
  local dir=$1
  [[ -d $dir ]] || return 0
  dir=$(cd "$dir" && pwd)
  if [[ -f $dir/slurm.conf && -f $dir/slurmctld.pid ]]; then
    # Jobs first, while slurmd still runs to end their steps (slurmstepd outlives slurmd).
    export SLURM_CONF="$dir/slurm.conf"
    scancel --quiet --user="$(id -un)" 2>/dev/null || true
    wait_for 90 "the jobs to end" sh -c '[ -z "$(squeue -h -o %i 2>/dev/null)" ]' ||
      echo "one_node_cluster: jobs still listed after 90 s: $(squeue -h 2>&1)" >&2
  fi
  stop_pid_file "$dir/slurmd.pid" slurmd
  stop_pid_file "$dir/slurmctld.pid" slurmctld
  stop_pid_file "$dir/munge/munged.pid" munged
}

case ${1:-} in
  start) [[ $# -eq 2 ]] || die "usage: $0 start DIR"; start "$2" ;;
  stop) [[ $# -eq 2 ]] || die "usage: $0 stop DIR"; stop "$2" ;;
  *) die "usage: $0 start|stop DIR" ;;
esac
