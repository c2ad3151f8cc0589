#!/bin/bash
# A coordinator over a long history: its start time, resident memory and `coupler status`
# round trips with N jobs that finished before its start, against the same with none, in one
# run. The jobs are inserted into a real state directory (made by a first start) with Python's
# sqlite3, the way years of nightly runs would have left them.
#
#   bench/state/history_bench.sh [build/bin/coupler] [N=100000]
set -euo pipefail
BIN=${1:-build/bin/coupler}
N=${2:-100000}
PORT=${PORT:-7391}
WORK=$(mktemp -d /tmp/coupler-history.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

start() {  # start DIR: the coordinator's pid; prints the start time
  rm -f "$1/ready"
  local t0 t1
  t0=$(date +%s%N)
  "$BIN" coordinator --state "$1/state" --listen "tcp://127.0.0.1:$PORT" --http off \
    --ready-file "$1/ready" > "$1/coordinator.log" 2>&1 &
  PID=$!
  while [ ! -f "$1/ready" ]; do
    kill -0 $PID 2>/dev/null || { cat "$1/coordinator.log"; exit 1; }
    sleep 0.002
  done
  t1=$(date +%s%N)
  START_MS=$(( (t1 - t0) / 1000000 ))
}

status_ms() {  # status_ms DIR ARGS...: the median of 5 `coupler status ARGS` round trips
  local dir=$1; shift
  local times=()
  for _ in 1 2 3 4 5; do
    local s e
    s=$(date +%s%N)
    COUPLER_KEYS="$dir/state/keys/local-client" "$BIN" status "$@" \
      --coordinator "tcp://127.0.0.1:$PORT" > /dev/null 2>&1 || true  # j-000077: none when empty
    e=$(date +%s%N)
    times+=($(( (e - s) / 1000000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n 3p
}

measure() {  # measure DIR LABEL
  start "$1"
  local list one rss
  list=$(status_ms "$1" --limit 20)
  one=$(status_ms "$1" j-000077)
  rss=$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/$PID/status)
  printf '| %s | %d ms | %s MiB | %d ms | %d ms |\n' "$2" "$START_MS" "$rss" "$list" "$one"
  kill $PID; wait $PID 2>/dev/null || true
}

for dir in "$WORK/empty" "$WORK/full"; do
  mkdir -p "$dir"
  start "$dir"; kill $PID; wait $PID 2>/dev/null || true
done
python3 - "$WORK/full/state/coupler.db" "$N" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); n = int(sys.argv[2])
spec = "name: nightly\nnodes:\n" + "".join(
    "  - {id: n%d, op: noop, params: {tasks: 4}}\n" % i for i in range(8))
# The columns this build's state has (an older one has no run_dir: its rows keep it in extra).
has_run_dir = any(c[1] == "run_dir" for c in db.execute("PRAGMA table_info(jobs)"))
cols = ("id, number, name, spec_text, spec_path, base_dir, priority, state, error, submitted_ms,"
        " finished_ms, extra, submitted_by, tasks_total, tasks_done, tasks_failed, attempts,"
        " submission_id" + (", run_dir" if has_run_dir else ""))
def row(i):
    run_dir = "/home/u/work/runs/j-%06d" % i
    r = ("j-%06d" % i, i, "nightly-%d" % i, spec, "/home/u/nightly.yaml", "/home/u", 0,
         "failed" if i % 10 == 0 else "succeeded", "exit 1" if i % 10 == 0 else "",
         1765000000000 + i * 1000, 1765000000500 + i * 1000,
         b"" if has_run_dir else ("workdir\t%s\n" % run_dir).encode(), "alice", 32, 32, 0, 33,
         "nightly-%d" % i)
    return r + (run_dir,) if has_run_dir else r
db.executemany("INSERT INTO jobs (%s) VALUES (%s)" % (cols, ",".join("?" * len(cols.split(",")))),
               (row(i) for i in range(1, n + 1)))
db.commit()
PY
echo "loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| state | start (to ready file) | RSS after start and 10 status calls | status --limit 20 (median of 5) | status j-000077 (median of 5) |"
echo "|---|---:|---:|---:|---:|"
measure "$WORK/empty" "empty"
measure "$WORK/full" "$N finished jobs"
measure "$WORK/empty" "empty, again"
