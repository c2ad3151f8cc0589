#!/usr/bin/env bash
# Dispatch while unauthenticated peers flood the client port with refused CURVE handshakes:
# a real coordinator and 2 workers (2 slots each, keys on), a noop job of TASKS tasks timed by
# the coordinator (submitted -> finished), alone and during FLOOD refused handshakes with fresh
# keys (handshake_flood.py), ROUNDS times each, alternated. Prints each round's tasks/s, the
# median ratio, and how many lines the coordinator's log grew by during the floods.
# Usage: bench/security/handshake_flood.sh [TASKS=1000000] [FLOOD=20000] [ROUNDS=2]
# PIN=1: the flood on CPU 1 and the pool (coordinator, workers, the timing client) on CPU 0, in
# every run, alone or flooded: as a flood from another host, whose own CPU is not the pool's.
# What the flood still costs the pool is then the coordinator's own work for each refusal.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
COUPLER="${COUPLER:-$ROOT/build/bin/coupler}"
TASKS="${1:-1000000}"
FLOOD="${2:-20000}"
ROUNDS="${3:-2}"
PY=/usr/bin/python3  # Debian's, with python3-zmq
POOL_CPU=(); FLOOD_CPU=()
if [[ "${PIN:-0}" == 1 ]]; then POOL_CPU=(taskset -c 0); FLOOD_CPU=(taskset -c 1); fi
DIR="$(mktemp -d /tmp/coupler-flood-XXXXXX)"
PORT=$((20000 + RANDOM % 10000))
EP="tcp://127.0.0.1:$PORT"
CLIENTS="tcp://127.0.0.1:$((PORT + 1))"
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT

"${POOL_CPU[@]}" "$COUPLER" coordinator --listen "$EP" --state "$DIR/state" --http off \
  --ready-file "$DIR/ready" 2> "$DIR/coordinator.log" &
pids+=($!)
for _ in $(seq 100); do [[ -s "$DIR/ready" ]] && break; sleep 0.1; done
for w in 1 2; do
  "${POOL_CPU[@]}" "$COUPLER" worker --coordinator "$EP" --slots 2 --id "w$w" \
    --keys "$DIR/state/keys/local-worker" 2> "$DIR/worker$w.log" &
  pids+=($!)
done
printf 'name: flood\nnodes:\n  - {id: n, op: noop, params: {tasks: %s}}\n' "$TASKS" > "$DIR/job.yaml"
KEYS="$DIR/state/keys/local-client"
sleep 1

# Runs the job; prints its tasks/s from the coordinator's own times.
run_job() {
  local id
  id=$("${POOL_CPU[@]}" "$COUPLER" submit "$DIR/job.yaml" --coordinator "$EP" --keys "$KEYS")
  while :; do
    "${POOL_CPU[@]}" "$COUPLER" status "$id" --json --coordinator "$EP" --keys "$KEYS" > "$DIR/status.json"
    grep -q '"state": *"\(succeeded\|failed\|cancelled\)"' "$DIR/status.json" && break
    sleep 0.2
  done
  "$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); j=j['jobs'][0] if 'jobs' in j else j; print('%.0f' % (j['tasks']['done'] / ((j['finished_ms'] - j['submitted_ms']) / 1000.0)))" "$DIR/status.json"
}

alone=(); flooded=(); grown=()
for r in $(seq "$ROUNDS"); do
  alone+=("$(run_job)")
  before=$(wc -l < "$DIR/coordinator.log")
  "${FLOOD_CPU[@]}" "$PY" "$ROOT/bench/security/handshake_flood.py" "$CLIENTS" "$DIR/state/keys/coordinator.pub" "$FLOOD" > "$DIR/flood.out" &
  flood=$!
  sleep 0.5
  flooded+=("$(run_job)")
  wait "$flood"
  sleep 11  # the refused-handshake summary comes once per 10 s window
  grown+=($(( $(wc -l < "$DIR/coordinator.log") - before )))
  echo "round $r: alone ${alone[-1]} tasks/s, during the flood ${flooded[-1]} tasks/s ($(cat "$DIR/flood.out")), log +${grown[-1]} lines" >&2
done
"$PY" - "${alone[*]}" "${flooded[*]}" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
f = [float(x) for x in sys.argv[2].split()]
print(f"alone: median {statistics.median(a):.0f} tasks/s; during the flood: median {statistics.median(f):.0f} tasks/s; ratio {statistics.median(f) / statistics.median(a):.2f}")
PY
