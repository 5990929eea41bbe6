// RUN: te-opt %s "--te-apply-recipe=recipe='#te.nvfp4<rht = false, four_over_six = all, four_over_six_e4m3_use_256 = weights>'" | FileCheck %s
// RUN: not te-opt %s "--te-apply-recipe=recipe='#te.nvfp4<four_over_six = some>'" 2>&1 | FileCheck %s --check-prefix=VALUE
// RUN: not te-opt %s "--te-apply-recipe=recipe='#te.nvfp4<four_over_six = all>'" 2>&1 | FileCheck %s --check-prefix=RHT
// RUN: not te-opt %s "--te-import-torch=recipe='#te.nvfp4<four_over_six_err_mode = mxe>'" 2>&1 | FileCheck %s --check-prefix=IMPORT
//
// NVFP4's 4-over-6 fields as te-compile's --recipe text: printed when not at
// their defaults; an invalid attribute is reported with the reason.
//
// CHECK-LABEL: func.func @linear(
// CHECK: recipe(#te.nvfp4<rht = false, four_over_six = all, four_over_six_e4m3_use_256 = weights>)
// VALUE: error: te-apply-recipe: invalid recipe '#te.nvfp4<four_over_six = some>': expected one of [none, weights, activations, all] for NVFP4 tensor scope, got: some
// RHT: error: te-apply-recipe: invalid recipe '#te.nvfp4<four_over_six = all>': nvfp4 four_over_six = all needs rht = false (4-over-6 activations cannot be Hadamard-transformed, as in TE)
// IMPORT: error: te-import-torch: invalid recipe '#te.nvfp4<four_over_six_err_mode = mxe>': expected one of [mae, mse] for NVFP4 4-over-6 error mode, got: mxe
func.func @linear(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<32x32xbf16> {
  %y = te.linear %x weight(%w) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return %y : tensor<32x32xbf16>
}
