#!/usr/bin/env bash
# Builds te-mlir's PyTorch op library (python/csrc: the C++ kernels of the ops
# te_mlir.torch defines, on PyTorch's stable ABI) next to the runtime:
#   scripts/build_torch_ops.sh [BUILD_DIR] [PYTHON]
# BUILD_DIR (default build/) must hold lib/libte_runtime.so; PYTHON (default
# $TE_VENV_PYTHON, else python3) must import torch (>= 2.10 headers). Writes
# BUILD_DIR/lib/libte_torch_ops.so, which runs with every torch from
# TE_TORCH_TARGET_VERSION (default 2.11) on. No MLIR needed (the H200 builds it
# too).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
py=${2:-${TE_VENV_PYTHON:-python3}}
ops=$build/torch-ops
if [[ ! -f $ops/build.ninja ]]; then
  cmake -S "$root/python/csrc" -B "$ops" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DTE_TORCH_PYTHON="$py" -DTE_RUNTIME_DIR="$build/lib" \
    -DTE_TORCH_TARGET_VERSION="${TE_TORCH_TARGET_VERSION:-2.11}" >/dev/null
fi
ninja -C "$ops" -j "${TE_JOBS:-2}"
