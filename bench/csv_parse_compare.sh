#!/usr/bin/env bash
# CSV parse speed, a revision's kernel against the working tree's, in one run (see
# bench/csv_parse_compare.cc). Usage: bench/csv_parse_compare.sh [REV] [REPS]  (REV default HEAD)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REV="${1:-HEAD}"
REPS="${2:-7}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/old/kernels/cpu"
git -C "$ROOT" show "$REV:kernels/csv_import.h" > "$WORK/old/kernels/csv_import.h"
git -C "$ROOT" show "$REV:kernels/cpu/csv_import_cpu.cc" > "$WORK/old/kernels/cpu/csv_import_cpu.cc"
COMMON=("$ROOT/runtime/io/table.cc" "$ROOT/runtime/io/dtype.cc" "$ROOT/runtime/status.cc"
        "$ROOT/runtime/precision/element_type.cc")
# The old kernel may already use the dialect files; link them when the tree has them.
DIALECT=()
for f in runtime/io/csv_dialect.cc runtime/io/csv_schema.cc; do
  [[ -f "$ROOT/$f" ]] && DIALECT+=("$ROOT/$f")
done
FLAGS=(-std=c++20 -O2 -DNDEBUG)
c++ "${FLAGS[@]}" -I"$WORK/old" -I"$ROOT" "$ROOT/bench/csv_parse_compare.cc" \
    "$WORK/old/kernels/cpu/csv_import_cpu.cc" "${COMMON[@]}" "${DIALECT[@]}" -o "$WORK/old_parse"
c++ "${FLAGS[@]}" -DNEW_KERNEL -I"$ROOT" "$ROOT/bench/csv_parse_compare.cc" \
    "$ROOT/kernels/cpu/csv_import_cpu.cc" "${COMMON[@]}" "${DIALECT[@]}" -o "$WORK/new_parse"
cat /proc/loadavg
for round in 1 2; do
  echo "round $round"
  "$WORK/old_parse" "$REPS"
  "$WORK/new_parse" "$REPS"
done
