#!/bin/bash
# CPU per task of a noop job: a real coordinator and 2 `coupler worker` × 2 slots (keys on, the
# default) on loopback, one job of TASKS noop tasks submitted with --wait; the coordinator's and
# the workers' CPU (utime + stime from /proc/PID/stat) and the coordinator's minor page faults
# over the job, per task. Steadier than a rate on a shared VM: alternate two builds with it.
# Usage: bench/dispatch_cpu.sh COUPLER [TASKS=1000000] [ENV=VALUE ...]   (ENV: for every process)
set -euo pipefail
[ -x "${1:-}" ] || { echo "usage: $0 COUPLER [TASKS] [ENV=VALUE ...]" >&2; exit 2; }
C=$1; N=${2:-1000000}; shift; [ $# -gt 0 ] && shift
[ $# -eq 0 ] && set -- COUPLER_BENCH=1
D=$(mktemp -d /var/tmp/coupler-cpu-XXXXXX)
P=$((20000 + RANDOM % 20000))
trap 'kill $W1 $W2 $CP 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
cat > "$D/job.yaml" <<EOT
name: cpu
workdir: $D/work
nodes:
  - {id: n, op: noop, params: {tasks: $N}}
EOT
env "$@" "$C" coordinator --state "$D/state" --listen tcp://127.0.0.1:$P --http off >"$D/c.log" 2>&1 & CP=$!
sleep 0.7
env "$@" "$C" worker --coordinator tcp://127.0.0.1:$P --slots 2 --id a >"$D/w1.log" 2>&1 & W1=$!
env "$@" "$C" worker --coordinator tcp://127.0.0.1:$P --slots 2 --id b >"$D/w2.log" 2>&1 & W2=$!
sleep 1
cpu() { awk '{print $14 + $15, $10}' /proc/$1/stat; }
read -r c0 f0 < <(cpu $CP); read -r a0 _ < <(cpu $W1); read -r b0 _ < <(cpu $W2)
t0=$(date +%s.%N)
"$C" submit "$D/job.yaml" --coordinator tcp://127.0.0.1:$P --wait >/dev/null 2>"$D/submit.log" \
  || { cat "$D/submit.log" >&2; exit 1; }
t1=$(date +%s.%N)
read -r c1 f1 < <(cpu $CP); read -r a1 _ < <(cpu $W1); read -r b1 _ < <(cpu $W2)
python3 -c "
n, dt, tck = $N, $t1 - $t0, $(getconf CLK_TCK)
print(f'tasks/s {n / dt:,.0f}  coordinator CPU {($c1 - $c0) / tck / n * 1e6:.2f} us/task  '
      f'minor faults/task {($f1 - $f0) / n:.3f}  workers CPU {(($a1 - $a0) + ($b1 - $b0)) / tck / n * 1e6:.2f} us/task')"
