#!/usr/bin/env bash
# te-mlir's main job on a fresh machine: install what is missing, build, and
# compile a real model ahead of time, then train one step with it and check
# the numbers against PyTorch.
#
# The model is a LayerNorm + MLP block (LayerNorm, FC1 with bias, tanh GELU,
# FC2 with bias; hidden 32, FFN 64, 8 tokens) exported by the torch-mlir
# wheel with its parameters as function arguments
# (test/Integration/Inputs/ln_mlp_gelu_<dtype>/model.mlir, made with its
# PyTorch goldens by tools/make_goldens.py). te-compile raises it to
# te.layernorm_mlp, generates the backward, decomposes, plans memory and
# emits a shared library; te-run runs the forward and the backward on the
# default backend (CUDA when there is a GPU and the backend supports the
# recipe, else the CPU reference backend) and the results are compared
# with PyTorch's under TransformerEngine's tolerances.
#
# Usage: scripts/main.sh [DTYPE] [--checkpoint]
#   DTYPE: bf16 (default), f32, or an FP8 variant of a bf16 model:
#   bf16_fp8_current / bf16_fp8_delayed (TE's per-tensor FP8 recipes, on
#   the 8-token model), bf16_fp8_block (Float8 block scaling),
#   bf16_mxfp8 (MXFP8) and bf16_nvfp4 (NVFP4 with the Hadamard transform
#   and stochastic rounding; MXFP8 and NVFP4 are Blackwell layouts: the CPU
#   backend here) on a 128-token, hidden 128, FFN 256 model; quantized
#   results are compared with PyTorch's emulation of the recipe
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dtype=${1:-bf16}
shift || true
extra=("$@")
case=ln_mlp_gelu_$dtype
inputs=$root/test/Integration/Inputs/$case
[[ -d $inputs ]] || { echo "main: no case '$case' (dtype bf16, f32, bf16_fp8_current, bf16_fp8_delayed, bf16_fp8_block, bf16_mxfp8 or bf16_nvfp4)" >&2; exit 1; }
"$root/scripts/bootstrap.sh"
# Debian's Python (with the numpy bootstrap installed), not whatever python3
# comes first on PATH.
source "$root/scripts/python.sh"
te_pick_python
cfg() { "$TE_PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1])).get('$1', ''))" "$inputs/config.json" 2>/dev/null || true; }
recipe=$(cfg recipe)
[[ -n $recipe ]] && extra+=(--recipe "$recipe")
# MXFP8 and NVFP4 are Blackwell recipes: their quantized layout is sm_100a's.
[[ $(cfg arch) == blackwell ]] && extra+=(--arch sm_100a)

build=$root/build
if [[ ! -f $build/build.ninja ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >/dev/null
fi
ninja -C "$build" -j "${TE_JOBS:-2}" te-opt te-compile te-run

work=$build/main/$case
rm -rf "$work" && mkdir -p "$work"
echo
echo "== the export raised to te ops (te-opt --te-import-torch)"
"$build/bin/te-opt" "$inputs/model.mlir" --te-import-torch | grep -E 'func.func|te\.' | sed 's/^ */  /'
echo
echo "== te-compile $case/model.mlir --train ${extra[*]:-} -o $work/model.so"
"$build/bin/te-compile" "$inputs/model.mlir" --train "${extra[@]}" -o "$work/model.so"
"$build/bin/te-run" "$work/model.so" --list | grep -E '^[a-z]|arena' | sed 's/^/  /'
echo
echo "== te-run --step main (forward + backward), 20 timed steps"
"$build/bin/te-run" "$work/model.so" --step main --inputs "$inputs/args" \
  --grads "$inputs/grads_in" --outputs "$work/out" --bench 20 | sed 's/^/  /'
echo
echo "== against PyTorch (TransformerEngine tolerances, from config.json)"
"$TE_PYTHON" - "$inputs" "$work/out" <<'PY'
import json, os, sys
import numpy as np

inputs, out = sys.argv[1], sys.argv[2]
cfg = json.load(open(os.path.join(inputs, "config.json")))

def load(path):
    a = np.load(path)
    if path.endswith(".bf16.npy"):
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float64)

names = ["output"] + [f"grad {n}" for n in cfg["arg_names"]]
ok = True
print(f"  {cfg['description']}; {cfg['module']} {cfg['normalization']} + {cfg['activation']}, dtype {cfg['dtype']}")
for phase in ("fwd", "bwd"):
    atol, rtol = cfg[f"{phase}_atol"], cfg[f"{phase}_rtol"]
    for f in sorted(os.listdir(os.path.join(inputs, "expected", phase))):
        e = load(os.path.join(inputs, "expected", phase, f))
        a = load(os.path.join(out, phase, f))
        if a.shape != e.shape:
            print(f"  MISMATCH {phase}/{f}: shape {a.shape} vs {e.shape}"); ok = False; continue
        err = np.abs(a - e)
        bad = err > atol + rtol * np.abs(e)
        if f.startswith("state."):
            label = f[len("state."):-len(".npy")]  # delayed-scaling state
        else:
            label = names[0] if phase == "fwd" else names[1 + int(f.split('grad_arg')[1].split('.')[0])]
        print(f"  {'ok  ' if not bad.any() else 'FAIL'} {label:18} {str(list(e.shape)):11} max |err| {err.max():.3e}"
              f"  (atol {atol}, rtol {rtol})")
        ok &= not bad.any()
print("main: forward and backward match PyTorch" if ok else "main: MISMATCH against PyTorch")
sys.exit(0 if ok else 1)
PY
