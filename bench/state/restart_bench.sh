#!/bin/bash
# A restart mid-job against none, in one run: 4 workers x 1 slot run 8 tasks of T seconds (exec
# sleep), once undisturbed and once with the coordinator killed (SIGKILL) T/2 seconds in and
# started again at once on the same state. Prints each job's time (submitted -> finished, the
# coordinator's clock), how many times the tasks' commands ran, and what the event log says.
#
#   bench/state/restart_bench.sh [build/bin/coupler] [T=20] [WORKERS=4]
set -euo pipefail
BIN=$(realpath "${1:-build/bin/coupler}")
T=${2:-20}
WORKERS=${3:-4}
PORT=${PORT:-7393}
WORK=$(mktemp -d /tmp/coupler-restart.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
EP="tcp://127.0.0.1:$PORT"

coordinator() {  # coordinator DIR
  rm -f "$1/ready"
  "$BIN" coordinator --state "$1/state" --listen "$EP" --http off --ready-file "$1/ready" \
    >> "$1/coordinator.log" 2>&1 &
  CPID=$!
  while [ ! -f "$1/ready" ]; do sleep 0.01; done
}

run() {  # run DIR CRASH(0|1): prints "seconds runs adopted abandoned"
  local dir=$1 crash=$2
  mkdir -p "$dir"
  python3 -c "import sys; [print('%d,%d' % (i, i)) for i in range(64)]" > "$dir/in.csv"
  sed -i '1i a,b' "$dir/in.csv"
  cat > "$dir/job.yaml" <<YAML
name: restart-bench
workdir: work
nodes:
  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: $((2 * WORKERS))}}
  - id: run
    op: exec
    inputs: [import]
    params: {command: "echo {shard} >> $dir/runs.log && sleep $T && cp {input} {output}"}
YAML
  coordinator "$dir"
  export COUPLER_KEYS="$dir/state/keys/local-worker"
  local pids=()
  for i in $(seq "$WORKERS"); do
    "$BIN" worker --coordinator "$EP" --slots 1 --prefetch 1 --id "w$i" \
      --keys "$dir/state/keys/local-worker" > "$dir/worker$i.log" 2>&1 &
    pids+=($!)
  done
  export COUPLER_KEYS="$dir/state/keys/local-client"
  until [ "$("$BIN" workers --coordinator "$EP" 2>/dev/null | grep -c alive)" -ge "$WORKERS" ]; do
    sleep 0.1
  done
  local job
  job=$(cd "$dir" && "$BIN" submit job.yaml --coordinator "$EP" | grep -o 'j-[0-9]*' | head -1)
  if [ "$crash" = 1 ]; then
    sleep "$(awk -v t="$T" 'BEGIN {print t / 2}')"
    kill -9 "$CPID"; wait "$CPID" 2>/dev/null || true
    coordinator "$dir"
  fi
  until "$BIN" status "$job" --coordinator "$EP" --json 2>/dev/null | grep -q '"finished_ms": *[1-9]'; do
    sleep 0.2
  done
  local js
  js=$("$BIN" status "$job" --coordinator "$EP" --json)
  local secs
  secs=$(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print("%.1f" % ((j["finished_ms"]-j["submitted_ms"])/1000))' "$js")
  echo "$secs $(wc -l < "$dir/runs.log") $(grep -c attempt_adopted "$dir/state/events.jsonl" || true) $(grep -c attempt_abandoned "$dir/state/events.jsonl" || true)"
  kill "${pids[@]}" "$CPID" 2>/dev/null || true
  wait 2>/dev/null || true
}

echo "loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| run | job time | commands run | attempt_adopted | attempt_abandoned |"
echo "|---|---:|---:|---:|---:|"
read -r s r a b <<< "$(run "$WORK/plain" 0)"; echo "| no restart | $s s | $r | $a | $b |"; plain=$s
read -r s r a b <<< "$(run "$WORK/crash" 1)"; echo "| coordinator killed at T/2, restarted | $s s | $r | $a | $b |"
echo "restarted / undisturbed: $(awk -v a="$s" -v b="$plain" 'BEGIN{printf "%.2f", a / b}')"
