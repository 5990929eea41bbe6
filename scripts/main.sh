#!/usr/bin/env bash
# te-mlir's main job on a fresh machine: build the compiler and the runtime,
# set up the Python environment, and train real Hugging Face models through
# torch.compile(model, backend="te_mlir", fullgraph=True) beside an eager
# copy (examples/train_hf.py, docs/torch-compile.md).
#
# The models are a LLaMA-style LlamaForCausalLM and a GPT-2 GPT2LMHeadModel
# built from transformers configs (hidden 64, 2 layers, vocab 256, 4 heads,
# seeded random init, bf16). The te_mlir backend finds every norm ->
# linear(s) [-> activation -> linear] block of the Dynamo graph, writes it
# as torch-dialect text from the FX graph (te-mlir's own writer, no
# torch-mlir; parameters as arguments, dynamic batch and sequence),
# compiles it with te-compile --train into a shared library (cached), and
# replaces it by the library's function (custom ops with their backward);
# Inductor compiles the rest. Each step prints the eager and the te_mlir
# loss, their difference and both step times; the end says how many blocks
# te-mlir took, why it refused any, the graph breaks (0) and PASS / FAIL
# (exit status 1 on FAIL). The CPU reference backend without a GPU, CUDA
# with one.
#
# Usage: scripts/main.sh [train_hf.py options]   e.g. --steps 20, --dtype f32,
#                                                 --models llama, --recipe fp8-current
#        scripts/main.sh --block [DTYPE] [--checkpoint]
#   --block: the single-module check instead (a LayerNorm + MLP block exported
#   by torch-mlir, test/Integration/Inputs/ln_mlp_gelu_<DTYPE>/model.mlir,
#   compiled with te-compile --train and run by te-run, forward and backward
#   compared with PyTorch's goldens under TransformerEngine's tolerances; DTYPE
#   bf16 (default), f32, bf16_fp8_current, bf16_fp8_delayed, bf16_fp8_block,
#   bf16_mxfp8, bf16_nvfp4). It needs no torch.
#
# TE_MAIN_BUILD=DIR uses an existing build instead of building ./build.
# Python: $TE_VENV_PYTHON when set (an interpreter with torch 2.14.1,
# torch-mlir, transformers 5.24), else the virtual environment of
# scripts/venv.sh (te_venv: made once per machine from scripts/requirements.txt).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=train
if [[ ${1:-} == --block ]]; then
  mode=block
  shift
fi

"$root/scripts/bootstrap.sh"
if [[ -n ${TE_MAIN_BUILD:-} ]]; then
  # an existing build (bin/te-compile, lib/libte_runtime.so), used as it is
  build=$(cd "$TE_MAIN_BUILD" && pwd)
  echo "main: using the build in $build (TE_MAIN_BUILD)"
else
  build=$root/build
  if [[ ! -f $build/build.ninja ]]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >/dev/null
  fi
  ninja -C "$build" -j "${TE_JOBS:-2}" te-opt te-compile te-run TERuntime
fi

if [[ $mode == train ]]; then
  if [[ -z ${TE_VENV_PYTHON:-} ]]; then
    # shellcheck source=/dev/null
    source "$root/scripts/venv.sh"
    te_venv
  fi
  export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
  export TE_MLIR_BUILD=$build
  # the ops' C++ kernels (PyTorch's stable ABI) for this venv's torch
  "$root/scripts/build_torch_ops.sh" "$build" "$TE_VENV_PYTHON" >/dev/null
  echo
  echo "== examples/train_hf.py $* (python: $TE_VENV_PYTHON)"
  exec "$TE_VENV_PYTHON" "$root/examples/train_hf.py" "$@"
fi

# --block: the single-module check
dtype=${1:-bf16}
shift || true
extra=("$@")
case=ln_mlp_gelu_$dtype
inputs=$root/test/Integration/Inputs/$case
[[ -d $inputs ]] || { echo "main: no case '$case' (dtype bf16, f32, bf16_fp8_current, bf16_fp8_delayed, bf16_fp8_block, bf16_mxfp8 or bf16_nvfp4)" >&2; exit 1; }
# Debian's Python (with the numpy bootstrap installed), not whatever python3
# comes first on PATH.
source "$root/scripts/python.sh"
te_pick_python
cfg() { "$TE_PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1])).get('$1', ''))" "$inputs/config.json" 2>/dev/null || true; }
recipe=$(cfg recipe)
[[ -n $recipe ]] && extra+=(--recipe "$recipe")
# MXFP8 and NVFP4 are Blackwell recipes: their quantized layout is sm_100a's.
[[ $(cfg arch) == blackwell ]] && extra+=(--arch sm_100a)

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
