#!/usr/bin/env bash
# Installs what is missing, builds, fetches the digits data, shows the example pipeline's plan
# (which nodes run loose over shards, which as a tight MPI group), runs the preprocessing-only
# pipeline on a local coordinator and 2 worker processes, then the whole mixed graph: loose
# preprocessing, training as one gang of 2 MPI ranks, loose evaluation on the held-out rows.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/fetch-digits.sh"
# The CSV example's data (examples/csv-pipeline.yaml), generated: seeded, plain Python.
[[ -f "$ROOT/data/measurements.csv" ]] ||
  /usr/bin/python3 "$ROOT/examples/csv/make_measurements.py" "$ROOT/data/measurements.csv"
BUILD_DIR="$BUILD_DIR" "$ROOT/scripts/build.sh"

COUPLER="$BUILD_DIR/bin/coupler"
echo
echo "== coupler plan examples/digits-pipeline.yaml"
"$COUPLER" plan "$ROOT/examples/digits-pipeline.yaml"
echo
echo "== the same plan as JSON (for scripts)"
"$COUPLER" plan --json "$ROOT/examples/digits-pipeline.yaml"
echo
echo "== a spec with mistakes is rejected with file:line:column, node and field (exit 2)"
set +e
"$COUPLER" plan "$ROOT/tests/specs/invalid/unknown-op.yaml"
echo "exit code: $?"
set -e
echo
echo "== coupler run examples/preprocess-only.yaml --workers 2"
echo "   (import -> stats -> standardize -> clip -> cast, and filter_map: every node loose)"
"$COUPLER" run "$ROOT/examples/preprocess-only.yaml" --workers 2 --slots 1
# Each run has its own directory (runs/JOB); `latest` points at the newest (docs/runs.md).
OUT_DIR="$ROOT/coupler-work/preprocess-only/latest"
echo
echo "== outputs: one .npz shard per task (one .npy per column), readable with numpy.load"
# Each shard's columns and their types, read from the members' .npy headers (Python's zipfile).
for node in import stats standardize clipped half features; do
  files=$(ls "$OUT_DIR/$node" 2>/dev/null | grep -c '^part-' || true)
  if [ "$files" -eq 0 ]; then
    # Fused into the next node's task (docs/ops.md, "Fused chains"): no shard of it is written.
    printf '  %-12s %3d files  %s\n' "$node" 0 "(fused into the next node: its shards stay in memory)"
    continue
  fi
  printf '  %-12s %3d files  %s\n' "$node" "$files" \
    "$(/usr/bin/python3 -c '
import ast, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
cols = []
for name in z.namelist():
    with z.open(name) as f:
        head = f.read(256)
    if name.endswith(".npy"):
        cols.append(name[:-4] + ":" + ast.literal_eval(head[10 if head[6] == 1 else 12:head.index(b"}") + 1].decode())["descr"])
print(" ".join(cols[:6]) + (" ... (%d columns)" % len(cols) if len(cols) > 6 else ""))
' "$OUT_DIR/$node/part-00000.npz")"
done
echo
echo "== the mixed graph: coupler run examples/digits-pipeline.yaml --workers 2"
echo "   (import -> stats -> standardize loose over 8 shards; train tight as one group of 2 MPI"
echo "    ranks, which the coordinator reserves on both workers at once; evaluate loose on the"
echo "    rows training held out)"
"$COUPLER" run "$ROOT/examples/digits-pipeline.yaml" --workers 2
echo "metrics: $(cat "$ROOT/coupler-work/digits-pipeline/latest/train/metrics.json")"
echo
echo "== the same graph again with --reuse: every node is unchanged, so no task runs"
"$COUPLER" run "$ROOT/examples/digits-pipeline.yaml" --workers 2 --reuse
