#!/usr/bin/env bash
# te-mlir's main job on a fresh machine: install, build, and run the compiler
# on a shipped model. Today that is te-opt on a GPT-2 style block (set the
# FP8 recipe, verify, canonicalize); it grows into "compile and run a real model" as te-compile/te-run land.
#
# Usage: scripts/main.sh [RECIPE]   (bf16|fp8-delayed|fp8-current|fp8-block|mxfp8|nvfp4; default fp8-delayed)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
recipe=${1:-fp8-delayed}

"$root/scripts/bootstrap.sh"
build=$root/build
if [[ ! -f $build/build.ninja ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >/dev/null
fi
ninja -C "$build" -j "${TE_JOBS:-2}" te-opt

example=$root/examples/gpt_block.mlir
echo
echo "== te-opt examples/gpt_block.mlir --te-apply-recipe=\"recipe=$recipe\" --canonicalize"
"$build/bin/te-opt" "$example" --te-apply-recipe="recipe=$recipe" --canonicalize
echo "ok: the module verifies under recipe $recipe"
