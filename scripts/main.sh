#!/usr/bin/env bash
# te-mlir's main job on a fresh machine: install, build, and compile a real
# model as far as the pipeline goes today. The model is GPT-2's MLP block
# (LayerNorm + transformers' GPT2MLP: Conv1D, gelu_new, Conv1D), exported by
# the torch-mlir wheel with its default options
# (test/Import/Inputs/gpt2_mlp.raw.mlir, made by tools/export_torch.py).
# The job raises it to te ops (te-import-torch),
# sets a quantization recipe, and prints the te IR and the fake-tensor
# report (every tensor the module produces, quantizes and saves for
# backward). It grows into "compile and run" as te-compile/te-run land.
#
# Usage: scripts/main.sh [RECIPE] [ARCH]
#   RECIPE: bf16|fp8-delayed|fp8-current|fp8-block|mxfp8|nvfp4 (default fp8-delayed)
#   ARCH:   hopper|blackwell (default hopper)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
recipe=${1:-fp8-delayed}
arch=${2:-hopper}

"$root/scripts/bootstrap.sh"
build=$root/build
if [[ ! -f $build/build.ninja ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >/dev/null
fi
ninja -C "$build" -j "${TE_JOBS:-2}" te-opt

model=$root/test/Import/Inputs/gpt2_mlp.raw.mlir
report=$(mktemp)
trap 'rm -f "$report"' EXIT
echo
echo "== te-opt gpt2_mlp.raw.mlir --te-import-torch=\"recipe=$recipe\" --canonicalize --te-describe"
"$build/bin/te-opt" "$model" --te-import-torch="recipe=$recipe" --canonicalize \
  --te-describe="out=$report arch=$arch" --mlir-elide-resource-strings-if-larger=32 \
  | sed '/^{-#/,$d'
echo "== fake-tensor report ($arch, training)"
python3 - "$report" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    print(f"{r['op']}: recipe {r['recipe']} (effective {r['effective_recipe']})"
          + (f", fallback: {r['fallback']}" if r['fallback'] else ""))
    for q in r["quantized"]:
        inner = ", ".join(f"{t['name']}{t['shape']}:{t['dtype']}" for t in q["inner"])
        print(f"  quantized {q['name']:16} {q['usage']:8} {inner}")
    for s in r["saved"]:
        print(f"  saved     {s['name']:16} {str(s['shape']):14} {s['dtype']:9} aliases={s['aliases']}")
    print(f"  saved bytes {r['saved_bytes']}, workspace bytes {r['workspace_bytes']}")
PY
echo "ok: imported, verified and described under recipe $recipe"
