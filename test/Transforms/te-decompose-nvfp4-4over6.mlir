// RUN: te-opt %s --te-generate-backward="arch=blackwell" --te-thread-recipe-state --te-decompose="arch=blackwell" | FileCheck %s
// RUN: te-opt %s --te-generate-backward="arch=blackwell" --te-thread-recipe-state --te-decompose="arch=blackwell" --te-lower-to-runtime --cse | FileCheck %s --check-prefix=LLVM
// RUN: te-opt %s | te-opt | FileCheck %s --check-prefix=ROUND
//
// NVFP4 with TE's 4-over-6 block scales (nvfp4_4over6): te-decompose marks
// the forward quantizations the recipe names (four_over_six; weights and
// activations for `all`, the weights for `weights`), never the gradients;
// they lower to te_rt_quantize_nvfp4_4over6 (block_2d, err_mode 1 for MSE,
// the global E4M3 bound 256 or 448, swizzled). The recipe prints the fields
// that are not at their defaults.

// ROUND: recipe(#te.nvfp4<rht = false, four_over_six = all, four_over_six_err_mode = mse>)
// ROUND: recipe(#te.nvfp4<four_over_six = weights, four_over_six_e4m3_use_256 = activations>)
// ROUND: recipe(#te.nvfp4<rht = false>)

// CHECK-LABEL: func.func @all(
// CHECK:       te.quantize %arg0 {four_over_six} : tensor<32x64xbf16> -> !te.qtensor<32x64xe2m1, #te.nvfp4<rht = false, four_over_six = all, four_over_six_err_mode = mse>, rowwise, blackwell, swizzled>
// CHECK-NEXT:  te.quantize %arg1 {four_over_six, weight} : tensor<32x64xbf16> -> !te.qtensor<32x64xe2m1, {{.*}}, rowwise, blackwell, block_2d, swizzled>
// CHECK-LABEL: func.func @all_bwd(
// CHECK:       te.quantize %arg2 {seed = 0 : i64, stochastic_rounding} : tensor<32x32xbf16>
// CHECK-LABEL: func.func @weights(
// CHECK:       te.quantize %arg0 : tensor<32x64xbf16> -> !te.qtensor<32x64xe2m1, #te.nvfp4<four_over_six = weights, four_over_six_e4m3_use_256 = activations>, rowwise, blackwell, swizzled>
// CHECK-NEXT:  te.quantize %arg1 {four_over_six, weight} : tensor<32x64xbf16>

// LLVM-LABEL: llvm.func @te_entry_all(
// LLVM-DAG:   %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// LLVM-DAG:   %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// LLVM-DAG:   %[[B256:.*]] = llvm.mlir.constant(256 : i32) : i32
// LLVM:       llvm.call @te_rt_quantize_nvfp4_4over6(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO]], %[[ONE]], %[[B256]], %[[ONE]],
// LLVM:       llvm.call @te_rt_quantize_nvfp4_4over6(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %[[ONE]], %[[B256]], %[[ONE]],
// LLVM-LABEL: llvm.func @te_entry_all_bwd(
// LLVM:       llvm.call @te_rt_quantize_nvfp4(
// LLVM-LABEL: llvm.func @te_entry_weights(
// LLVM:       llvm.call @te_rt_quantize_nvfp4(
// LLVM:       %[[B448:.*]] = llvm.mlir.constant(448 : i32) : i32
// LLVM-NEXT:  llvm.call @te_rt_quantize_nvfp4_4over6(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[B448]],
func.func @all(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<32x32xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.nvfp4<rht = false, four_over_six = all, four_over_six_err_mode = mse>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return %y : tensor<32x32xbf16>
}

func.func @weights(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<32x32xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.nvfp4<four_over_six = weights, four_over_six_e4m3_use_256 = activations>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return %y : tensor<32x32xbf16>
}

// Every field at its default prints as before.
func.func @defaults(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<32x32xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.nvfp4<rht = false, four_over_six = none, four_over_six_e4m3_use_256 = all, four_over_six_err_mode = mae>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return %y : tensor<32x32xbf16>
}
