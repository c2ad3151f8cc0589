#!/usr/bin/env bash
# Installs what is missing, builds, fetches the digits data, shows the example pipeline's plan
# (which nodes run loose over shards, which as a tight MPI group), then runs its preprocessing
# end to end on a local coordinator and 2 worker processes, and trains the digits MLP on its
# output with `mpirun -np 2 coupler train`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/fetch-digits.sh"
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
OUT_DIR="$ROOT/coupler-work/preprocess-only"
echo
echo "== outputs: one .npy shard per task, readable with numpy.load"
for node in import stats standardize clipped half features; do
  printf '  %-12s %3d files  %s\n' "$node" "$(ls "$OUT_DIR/$node" | wc -l)" \
    "$(head -c 256 "$OUT_DIR/$node/part-00000.npy" | tr -d '\000' | grep -ao "{'descr'.\{0,60\}" | head -n1)..."
done
echo
echo "== the tight path: mpirun -np 2 coupler train examples/train-digits.yaml"
echo "   (2 ranks, micro_batch 16 x accumulate 2, one fused all-reduce per step; here on the"
echo "    standardized shards the pipeline just wrote, in bf16; progress on stderr)"
MPIRUN_FLAGS=(--oversubscribe)
[[ "$(id -u)" == 0 ]] && MPIRUN_FLAGS+=(--allow-run-as-root)
mpirun "${MPIRUN_FLAGS[@]}" --timeout 300 -np 2 "$COUPLER" train "$ROOT/examples/train-digits.yaml" \
  --set "data=$OUT_DIR/clipped" --set precision=bf16 --set epochs=15 \
  --set "checkpoint_dir=$ROOT/coupler-work/checkpoints/digits" \
  --metrics-out "$ROOT/coupler-work/train-metrics.json" \
  --weights-out "$ROOT/coupler-work/train-weights.npy"
echo "metrics: $(cat "$ROOT/coupler-work/train-metrics.json")"
