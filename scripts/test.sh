#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest. GPU tests (label
# `gpu`) run only where a GPU is usable; elsewhere they are excluded.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"

# CI also installs the optional Slurm group: its tests need root, which CI has.
if [[ "${CI:-}" == "true" ]]; then export COUPLER_SLURM="${COUPLER_SLURM:-1}"; fi
if [[ "${CI:-}" == "true" ]]; then export COUPLER_PYTHON_EXAMPLES="${COUPLER_PYTHON_EXAMPLES:-1}"; fi
"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/fetch-digits.sh"
# The CSV example's data (examples/csv-pipeline.yaml), generated: seeded, plain Python.
[[ -f "$ROOT/data/measurements.csv" ]] ||
  /usr/bin/python3 "$ROOT/examples/csv/make_measurements.py" "$ROOT/data/measurements.csv"
BUILD_DIR="$BUILD_DIR" "$ROOT/scripts/build.sh" "$@"

CTEST_ARGS=(--test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" --timeout 600)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "test: GPU found, running gpu tests too"
else
  echo "test: no usable GPU, excluding tests labelled gpu"
  CTEST_ARGS+=(-LE gpu)
fi
ctest "${CTEST_ARGS[@]}"
