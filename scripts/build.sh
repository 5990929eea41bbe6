#!/usr/bin/env bash
# Configures and builds te-mlir. Usage: scripts/build.sh [BUILD_DIR] [cmake args...]
# BUILD_DIR defaults to build/. Targets: everything (tools, runtime, kernels, tests).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
jobs=${TE_JOBS:-2}

if [[ ! -f $build/build.ninja ]]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    "$@"
fi
ninja -C "$build" -j "$jobs"
