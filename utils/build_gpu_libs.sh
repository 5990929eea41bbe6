#!/usr/bin/env bash
# Compiles the libraries utils/gpu_e2e.sh runs on the GPU machine (which has
# no MLIR), into OUT_DIR (default build/gpu):
#   - golden cases of test/Integration/Inputs, the hf_* ones included
#     (te-compile --train, with the case's --recipe): compared there with
#     the PyTorch goldens;
#   - small FP8 modules (fp8_tiny_<module>_<MxKxN>_<recipe>.so, entry @step)
#     whose GEMMs are large enough for cuBLASLt's FP8 kernels (per-tensor:
#     dims % 16; fp8-block: % 128): compared there between cuda and cpu.
# Runs where te-compile is.  usage: utils/build_gpu_libs.sh [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/gpu}
tc=${TE_COMPILE:-$root/build/bin/te-compile}
ins=$root/test/Integration/Inputs
mkdir -p "$out" "$out/src"
compile() { # name input flags...
  local name=$1 in=$2; shift 2
  if "$tc" "$in" --train "$@" -o "$out/$name.so" 2>"$out/$name.log"; then
    echo "compiled $name"
  else
    echo "FAILED $name:" >&2; cat "$out/$name.log" >&2; exit 1
  fi
}
for c in ln_mlp_gelu_bf16 rms_swiglu_f32 ln_mlp_gelu_dyn_f32 \
         ln_mlp_gelu_bf16_fp8_current ln_mlp_gelu_bf16_fp8_delayed \
         ln_linear_f32_fp8_current rms_swiglu_f32_fp8_current rms_swiglu_f32_fp8_delayed \
         ln_mlp_gelu_bf16_fp8_block ln_linear_f32_fp8_block; do
  recipe=$(python3 -c "import json; print(json.load(open('$ins/$c/config.json')).get('recipe', ''))")
  flags=(); [[ -n $recipe ]] && flags=(--recipe "$recipe")
  compile "$c" "$ins/$c/model.mlir" ${flags[@]+"${flags[@]}"}
done
# Real Hugging Face blocks (test/Integration/hf/hf_models.py): bf16 and f32 norm + MLP and
# norm + linear of GPT-2, LLaMA, Gemma, Qwen3, T5, BLOOM, Phi-3.
for d in "$ins"/hf_*/; do
  c=$(basename "$d")
  compile "$c" "$d/model.mlir"
done
# The GELU GEMM epilogues forced on (cuBLASLt GELU_AUX_BIAS / DGELU on
# cuda; the default, auto, leaves these few-token models unfused): compared
# there with the unfused goldens.
compile ln_mlp_gelu_bf16_act_epilogues "$ins/ln_mlp_gelu_bf16/model.mlir" --gemm-act-epilogues=on
compile ln_mlp_gelu_dyn_f32_act_epilogues "$ins/ln_mlp_gelu_dyn_f32/model.mlir" --gemm-act-epilogues=on
# MXFP8 and NVFP4 are Blackwell recipes: on the H200 their libraries must
# fail cleanly (the cpu backend runs them).
compile ln_linear_f32_mxfp8 "$ins/ln_linear_f32_mxfp8/model.mlir" --recipe mxfp8 --arch sm_100a
compile ln_mlp_gelu_bf16_nvfp4 "$ins/ln_mlp_gelu_bf16_nvfp4/model.mlir" --recipe nvfp4 --arch sm_100a
# Tiny modules: T = bf16; LayerNorm-Linear, LayerNorm-MLP (GELU) and
# RMSNorm-MLP (SwiGLU) at M tokens, hidden K, N out/ffn features.
tiny() { # module M K N recipe
  local mod=$1 m=$2 k=$3 n=$4 r=$5 f=$out/src/fp8_tiny_${1}_${2}x${3}x${4}.mlir
  case $mod in
  ln_linear) cat >"$f" <<MLIR
func.func @step(%x: tensor<${m}x${k}xbf16>, %g: tensor<${k}xbf16>, %b: tensor<${k}xbf16>, %w: tensor<${n}x${k}xbf16>, %bias: tensor<${n}xbf16>) -> tensor<${m}x${n}xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) : (tensor<${m}x${k}xbf16>, tensor<${k}xbf16>, tensor<${k}xbf16>, tensor<${n}x${k}xbf16>, tensor<${n}xbf16>) -> tensor<${m}x${n}xbf16>
  return %y : tensor<${m}x${n}xbf16>
}
MLIR
  ;;
  ln_mlp) cat >"$f" <<MLIR
func.func @step(%x: tensor<${m}x${k}xbf16>, %g: tensor<${k}xbf16>, %b: tensor<${k}xbf16>, %w1: tensor<${n}x${k}xbf16>, %b1: tensor<${n}xbf16>, %w2: tensor<${k}x${n}xbf16>, %b2: tensor<${k}xbf16>) -> tensor<${m}x${k}xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<${m}x${k}xbf16>, tensor<${k}xbf16>, tensor<${k}xbf16>, tensor<${n}x${k}xbf16>, tensor<${n}xbf16>, tensor<${k}x${n}xbf16>, tensor<${k}xbf16>) -> tensor<${m}x${k}xbf16>
  return %y : tensor<${m}x${k}xbf16>
}
MLIR
  ;;
  swiglu) local n2=$((2 * n)); cat >"$f" <<MLIR
func.func @step(%x: tensor<${m}x${k}xbf16>, %g: tensor<${k}xbf16>, %w1: tensor<${n2}x${k}xbf16>, %w2: tensor<${k}x${n}xbf16>) -> tensor<${m}x${k}xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) : (tensor<${m}x${k}xbf16>, tensor<${k}xbf16>, tensor<${n2}x${k}xbf16>, tensor<${k}x${n}xbf16>) -> tensor<${m}x${k}xbf16>
  return %y : tensor<${m}x${k}xbf16>
}
MLIR
  ;;
  esac
  compile "fp8_tiny_${mod}_${m}x${k}x${n}_${r//fp8-/}" "$f" --recipe "$r"
}
for r in fp8-current fp8-delayed; do
  tiny ln_linear 64 128 256 "$r"
  tiny ln_mlp 16 128 256 "$r"
  tiny swiglu 64 128 256 "$r"
done
tiny ln_linear 256 128 384 fp8-block
tiny ln_mlp 128 256 512 fp8-block
tiny swiglu 256 128 256 fp8-block
