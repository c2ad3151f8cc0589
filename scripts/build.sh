#!/usr/bin/env bash
# Configures and builds coupler into build/ (or $BUILD_DIR). Extra arguments go to cmake's
# configure step, e.g. scripts/build.sh -DCOUPLER_WITH_CUDA=OFF
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
JOBS="${JOBS:-$(nproc)}"
cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "$@"
cmake --build "$BUILD_DIR" -j "$JOBS"
