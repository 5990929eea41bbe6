// RUN: te-opt %s --te-generate-backward="arch=blackwell" --te-thread-recipe-state --te-decompose="arch=blackwell" | FileCheck %s
// RUN: te-opt %s --te-generate-backward="arch=blackwell" --te-thread-recipe-state --te-decompose="arch=blackwell" --te-lower-to-runtime | FileCheck %s --check-prefix=LLVM
//
// Row-scaled NVFP4 (NVFP4BlockScaling's row_scaled_activation): the
// forward's activations are quantized rowwise with one amax per row (the
// row_scaled qtensor, te_rt_quantize_nvfp4_row_scaled), the weights as
// plain NVFP4 (16x16 tiles, one amax), and the GEMM applies each row's
// scale (te_rt_gemm_nvfp4_row_scaled); the saved tensors are high precision
// and the backward has no quantization (TE's high-precision backward).

// CHECK-LABEL: func.func @lnl_fwd(
// CHECK:       %[[LN:.*]], %[[RS:.*]], %[[MU:.*]] = te.norm_fwd %arg0
// CHECK-NEXT:  %[[Q:.*]] = te.quantize %[[LN]] : tensor<?x64xbf16> -> !te.qtensor<?x64xe2m1, #te.nvfp4<row_scaled = true>, rowwise, blackwell, swizzled, row_scaled>
// CHECK-NEXT:  %[[W:.*]] = te.quantize %arg3 {weight} : tensor<32x64xbf16> -> !te.qtensor<32x64xe2m1, #te.nvfp4<row_scaled = true>, rowwise, blackwell, block_2d, swizzled>
// CHECK-NEXT:  %[[Y:.*]] = te.gemm tn %[[Q]], %[[W]] bias(%arg4)
// CHECK-NEXT:  return %[[Y]], %[[LN]], %[[MU]], %[[RS]] : tensor<?x32xbf16>, tensor<?x64xbf16>, tensor<?xf32>, tensor<?xf32>
// CHECK-LABEL: func.func @lnl_bwd(
// CHECK-NOT:   te.quantize
// CHECK:       te.gemm nt %arg6, %arg3 : (tensor<?x32xbf16>, tensor<?x64xbf16>)
// CHECK-NOT:   te.quantize
// CHECK:       return

// LLVM-LABEL: llvm.func @te_entry_lnl_fwd(
// LLVM:       llvm.call @te_rt_norm_fwd(
// LLVM:       llvm.call @te_rt_quantize_nvfp4_row_scaled(
// LLVM:       llvm.call @te_rt_quantize_nvfp4(
// LLVM:       llvm.call @te_rt_gemm_nvfp4_row_scaled(
// LLVM-LABEL: llvm.func @te_entry_lnl_bwd(
// LLVM-NOT:   nvfp4
// LLVM:       llvm.call @te_rt_gemm_wgrad(
// LLVM-NOT:   nvfp4
// LLVM:       llvm.return
func.func @lnl(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %b0: tensor<64xbf16>, %w: tensor<32x64xbf16>, %b: tensor<32xbf16>) -> tensor<?x32xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b0) weight(%w, %b) recipe(#te.nvfp4<row_scaled = true>) {eps = 1.0e-05 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// LayerNormMLP: FC2's input (the activation) is row-scaled too.
// CHECK-LABEL: func.func @mlp_fwd(
// CHECK:       te.quantize %{{.*}} : tensor<?x64xbf16> -> !te.qtensor<?x64xe2m1, #te.nvfp4<row_scaled = true>, rowwise, blackwell, swizzled, row_scaled>
// CHECK:       te.quantize %{{.*}} : tensor<?x128xbf16> -> !te.qtensor<?x128xe2m1, #te.nvfp4<row_scaled = true>, rowwise, blackwell, swizzled, row_scaled>
// CHECK-LABEL: func.func @mlp_bwd(
// CHECK-NOT:   te.quantize
// CHECK:       return
func.func @mlp(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %w2: tensor<64x128xbf16>) -> tensor<?x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) recipe(#te.nvfp4<row_scaled = true>) {eps = 1.0e-05 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// save_rowwise (TE's backward_override="dequantized"): the forward also
// returns the GEMM's row-scaled activation and its weight as quantized,
// rowwise (te.saved ln_out_rowwise / weight_rowwise, what the dequantized
// backward reads); the library's own backward stays high precision on the
// HP tensors.
// CHECK-LABEL: func.func @lnl_rowwise_fwd(
// CHECK-SAME:  row_scaled> {te.saved = "layernorm_linear_0.ln_out_rowwise"}, !te.qtensor<32x64xe2m1, {{.*}}, block_2d, swizzled> {te.saved = "layernorm_linear_0.weight_rowwise"}
// CHECK:       %[[LN:.*]], %[[RS:.*]], %[[MU:.*]] = te.norm_fwd %arg0
// CHECK-NEXT:  %[[Q:.*]] = te.quantize %[[LN]] : tensor<?x64xbf16> -> !te.qtensor<?x64xe2m1, #te.nvfp4<row_scaled = true>, rowwise, blackwell, swizzled, row_scaled>
// CHECK-NEXT:  %[[W:.*]] = te.quantize %arg3 {weight} : tensor<32x64xbf16> -> !te.qtensor<32x64xe2m1, #te.nvfp4<row_scaled = true>, rowwise, blackwell, block_2d, swizzled>
// CHECK-NEXT:  %[[Y:.*]] = te.gemm tn %[[Q]], %[[W]] bias(%arg4)
// CHECK-NEXT:  return %[[Y]], %[[LN]], %[[Q]], %[[W]], %[[MU]], %[[RS]] :
// CHECK-LABEL: func.func @lnl_rowwise_bwd(
// CHECK-NOT:   te.quantize
// CHECK:       te.gemm nt %{{.*}}, %arg3 : (tensor<?x32xbf16>, tensor<?x64xbf16>)
// LLVM-LABEL: llvm.func @te_entry_lnl_rowwise_fwd(
// LLVM:       llvm.call @te_rt_quantize_nvfp4_row_scaled(
// LLVM:       llvm.call @te_rt_gemm_nvfp4_row_scaled(
func.func @lnl_rowwise(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %b0: tensor<64xbf16>, %w: tensor<32x64xbf16>, %b: tensor<32xbf16>) -> tensor<?x32xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b0) weight(%w, %b) recipe(#te.nvfp4<row_scaled = true>) {eps = 1.0e-05 : f64, save_rowwise} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// CHECK-LABEL: func.func @lin_rowwise_fwd(
// CHECK-SAME:  row_scaled> {te.saved = "linear_0.input_rowwise"}, !te.qtensor<32x64xe2m1, {{.*}}, block_2d, swizzled> {te.saved = "linear_0.weight_rowwise"}
// CHECK:       %[[Q:.*]] = te.quantize %arg0 : tensor<?x64xbf16> -> !te.qtensor<?x64xe2m1, #te.nvfp4<row_scaled = true>, rowwise, blackwell, swizzled, row_scaled>
// CHECK-NEXT:  %[[W:.*]] = te.quantize %arg1 {weight}
// CHECK-NEXT:  %[[Y:.*]] = te.gemm tn %[[Q]], %[[W]]
// CHECK-NEXT:  return %[[Y]], %[[Q]], %[[W]] :
func.func @lin_rowwise(%x: tensor<?x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<?x32xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.nvfp4<row_scaled = true>) {save_rowwise} : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}
