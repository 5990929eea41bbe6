// RUN: te-opt %s --split-input-file --te-apply-recipe="recipe=fp8-delayed" | FileCheck %s --check-prefix=DELAYED
// RUN: te-opt %s --split-input-file --te-apply-recipe="recipe=nvfp4 override=true" | FileCheck %s --check-prefix=OVERRIDE
// RUN: te-opt %s --split-input-file --te-apply-recipe | FileCheck %s --check-prefix=DEFAULT
// RUN: not te-opt %s --split-input-file --te-apply-recipe="recipe=fp7" 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// Ops without a recipe get the requested one with TE's defaults; an op that
// already has one keeps it unless override is set.
// DELAYED-LABEL: func.func @apply
// DELAYED: te.layernorm_linear {{.*}} recipe(#te.fp8_delayed<>)
// DELAYED: te.layernorm_mlp {{.*}} recipe(#te.fp8_delayed<>)
// DELAYED: te.linear {{.*}} recipe(#te.mxfp8)
// OVERRIDE-LABEL: func.func @apply
// OVERRIDE: te.layernorm_linear {{.*}} recipe(#te.nvfp4<>)
// OVERRIDE: te.layernorm_mlp {{.*}} recipe(#te.nvfp4<>)
// OVERRIDE: te.linear {{.*}} recipe(#te.nvfp4<>)
// DEFAULT-LABEL: func.func @apply
// DEFAULT: te.layernorm_linear {{.*}} recipe(#te.bf16)
// DEFAULT: te.linear {{.*}} recipe(#te.mxfp8)
// UNKNOWN: error: te-apply-recipe: unknown recipe 'fp7'; expected one of: bf16, fp8-delayed, fp8-current, fp8-block, mxfp8, nvfp4
func.func @apply(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w: tensor<64x64xbf16>, %w1: tensor<256x64xbf16>, %w2: tensor<64x256xbf16>) -> tensor<32x64xbf16> {
  %a = te.layernorm_linear %x norm layer_norm(%g) weight(%w) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>) -> tensor<32x64xbf16>
  %b = te.layernorm_mlp %a norm layer_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x256xbf16>) -> tensor<32x64xbf16>
  %c = te.linear %b weight(%w) recipe(#te.mxfp8) : (tensor<32x64xbf16>, tensor<64x64xbf16>) -> tensor<32x64xbf16>
  return %c : tensor<32x64xbf16>
}
