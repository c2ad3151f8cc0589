#!/bin/bash
# Restart to full dispatch: WORKERS workers x 1 slot each run one long task (exec sleep) and
# hold one more queued; the coordinator is killed (SIGKILL) and started again on the same state.
# Measured from the restarted process's start: when it is ready (bound, jobs resumed), when
# every worker has registered again, and when it holds every slot busy again (all running
# attempts adopted: `status` counts WORKERS running). Each worker's own queued attempt is
# adopted too. Then one worker is stopped: the time until its tasks' replacement starts
# elsewhere is not measured here (see the scheduler's tests).
#
#   bench/state/restart_dispatch_bench.sh [build/bin/coupler] [WORKERS=4] [ROUNDS=3]
set -euo pipefail
BIN=$(realpath "${1:-build/bin/coupler}")
WORKERS=${2:-4}
ROUNDS=${3:-3}
PORT=${PORT:-7395}
WORK=$(mktemp -d /tmp/coupler-restart-dispatch.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; pkill -f "sleep 600" || true; rm -rf "$WORK"' EXIT
EP="tcp://127.0.0.1:$PORT"
ms() { date +%s%3N; }

coordinator() {  # coordinator DIR
  rm -f "$1/ready"
  "$BIN" coordinator --state "$1/state" --listen "$EP" --http off --ready-file "$1/ready" \
    >> "$1/coordinator.log" 2>&1 &
  CPID=$!
  while [ ! -f "$1/ready" ]; do sleep 0.005; done
}

running() {  # tasks the coordinator counts running in job $1
  COUPLER_KEYS="$DIR/state/keys/local-client" "$BIN" status "$1" --coordinator "$EP" --json 2>/dev/null |
    python3 -c 'import json,sys
try: j=json.load(sys.stdin)
except Exception: print(0); sys.exit()
print(j.get("tasks",{}).get("running",0))'
}

alive() {
  COUPLER_KEYS="$DIR/state/keys/local-client" "$BIN" workers --coordinator "$EP" 2>/dev/null | grep -c alive || true
}

round() {  # round N: prints "ready_ms registered_ms full_ms adopted abandoned"
  DIR="$WORK/r$1"
  mkdir -p "$DIR"
  python3 -c "print('a,b'); [print('%d,%d' % (i, i)) for i in range(4 * $WORKERS)]" > "$DIR/in.csv"
  cat > "$DIR/job.yaml" <<YAML
name: restart-dispatch
workdir: work
nodes:
  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: $((2 * WORKERS))}}
  - id: run
    op: exec
    inputs: [import]
    params: {command: "sleep 600"}
YAML
  coordinator "$DIR"
  local pids=()
  for i in $(seq "$WORKERS"); do
    "$BIN" worker --coordinator "$EP" --slots 1 --prefetch 1 --id "w$i" \
      --keys "$DIR/state/keys/local-worker" > "$DIR/worker$i.log" 2>&1 &
    pids+=($!)
  done
  until [ "$(alive)" -ge "$WORKERS" ]; do sleep 0.1; done
  local job
  job=$(cd "$DIR" && COUPLER_KEYS="$DIR/state/keys/local-client" "$BIN" submit job.yaml --coordinator "$EP" | grep -o 'j-[0-9]*' | head -1)
  until [ "$(running "$job")" -ge "$WORKERS" ]; do sleep 0.1; done
  sleep 1  # the sent rows are flushed within 50 ms; a status writes them too
  kill -9 "$CPID"; wait "$CPID" 2>/dev/null || true
  local t0 t_ready t_reg t_full
  t0=$(ms)
  coordinator "$DIR"
  t_ready=$(ms)
  until [ "$(alive)" -ge "$WORKERS" ]; do sleep 0.02; done
  t_reg=$(ms)
  until [ "$(running "$job")" -ge "$WORKERS" ]; do sleep 0.02; done
  t_full=$(ms)
  echo "$((t_ready - t0)) $((t_reg - t0)) $((t_full - t0)) $(grep -c attempt_adopted "$DIR/state/events.jsonl" || true) $(grep -c attempt_abandoned "$DIR/state/events.jsonl" || true)"
  # The workers would drain (finish their 600 s tasks) on SIGTERM: killed, with their tasks.
  kill -9 "${pids[@]}" "$CPID" 2>/dev/null || true
  wait 2>/dev/null || true
  pkill -f "sleep 600" 2>/dev/null || true
}

echo "loadavg before: $(cut -d' ' -f1-3 /proc/loadavg); workers: $WORKERS x 1 slot"
echo "| round | ready | all registered | all slots busy | attempt_adopted | attempt_abandoned |"
echo "|---|---:|---:|---:|---:|---:|"
for r in $(seq "$ROUNDS"); do
  read -r a b c d e <<< "$(round "$r")"
  echo "| $r | $a ms | $b ms | $c ms | $d | $e |"
done
