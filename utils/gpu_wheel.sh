#!/usr/bin/env bash
# The te-mlir wheel on the H200 (no MLIR, no torch-mlir, no network; its own torch,
# 2.11, Python 3.12, CUDA 13), compiling live with the wheel's te-compile:
#   here:       scripts/build_wheel.sh .whl       # .whl/te_mlir-*.whl (git-ignored)
#   on the GPU: utils/gpu_wheel.sh OUT [WHEEL]    # device run with carry [".whl"]
# Installs WHEEL (default .whl/te_mlir-*.whl) with the machine's pip
# (--no-deps --no-index) into a fresh site-packages directory outside the
# checkout, then, from an empty directory with an empty TE_MLIR_CACHE and no
# TE_MLIR_BUILD (nothing compiled here travels):
#   1. test/wheel/check_installed.py --device cuda --hf: the package finds its
#      binaries, te-compile needs no LLVM; LayerNormLinear fwd + bwd on cuda vs
#      torch; backend="te_mlir" on a LLaMA-style block and a 2-layer
#      LlamaForCausalLM (transformers is on the machine), losses vs eager;
#   2. examples/train_hf.py --device cuda (llama and gpt2, 6 steps, bf16) from a
#      copy outside the checkout, so that it imports the installed package.
# Logs go to OUT (gpu_wheel.log); the exit status is non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: utils/gpu_wheel.sh OUT [WHEEL]}
mkdir -p "$out"
out=$(cd "$out" && pwd)
whl=${2:-$(ls "$root"/.whl/te_mlir-*.whl 2>/dev/null | head -1)}
[[ -f $whl ]] || { echo "gpu_wheel: no wheel (${whl:-.whl/te_mlir-*.whl})" >&2; exit 1; }
# NVLink multicast stays off on the shared hosts.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset TE_MLIR_BUILD TE_RUNTIME_DIR TE_MLIR_TORCH_OPS
py=$(command -v python3)
work=$(mktemp -d /tmp/te-wheel.XXXXXX)
site=$work/site-packages
mkdir -p "$site" "$work/run" "$work/cache"
status=0
{
  echo "== $(date -u +%FT%TZ) $($py -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")')"
  echo "== install $(basename "$whl") ($(du -h "$whl" | cut -f1))"
  "$py" -m pip install --no-deps --no-index --disable-pip-version-check --target "$site" "$whl" || status=1
  cp "$root/test/wheel/check_installed.py" "$root/examples/train_hf.py" "$work/run/"
  cd "$work/run"
  export PYTHONPATH=$site TE_MLIR_CACHE=$work/cache
  echo "== check_installed.py --device cuda --hf"
  start=$(date +%s)
  "$py" check_installed.py --device cuda --hf || status=1
  echo "   ($(( $(date +%s) - start )) s)"
  echo "== train_hf.py --device cuda --models llama,gpt2 --steps 6"
  start=$(date +%s)
  "$py" train_hf.py --device cuda --models llama,gpt2 --steps 6 || status=1
  echo "   ($(( $(date +%s) - start )) s)"
  echo "== libraries compiled live: $(ls "$work"/cache/*.so 2>/dev/null | wc -l)"
  echo "gpu_wheel: $([[ $status == 0 ]] && echo PASS || echo FAIL)"
  exit "$status"
} 2>&1 | tee "$out/gpu_wheel.log"
exit "${PIPESTATUS[0]}"
