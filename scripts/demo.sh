#!/usr/bin/env bash
# Installs what is missing, builds, fetches the digits data and shows the example pipeline's
# plan: which nodes run loose over shards and which run as a tight MPI group.
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
