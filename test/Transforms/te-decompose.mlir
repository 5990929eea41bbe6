// RUN: te-opt %s --te-generate-backward --te-decompose --split-input-file --verify-diagnostics | FileCheck %s
//
// te-decompose: module ops and their backward ops become primitives in
// TransformerEngine's kernel order; saved intermediates are the primitive
// values; a recompute region is inlined without its (dead) FC2.

// LayerNormLinear returning its norm output: forward = norm + fprop GEMM
// with the bias; backward = dgrad (nn) and wgrad (nt) GEMMs, the bias
// gradient, the returned norm output's gradient added, then the norm
// backward (with dbeta).
// CHECK-LABEL: func.func @lnl(
// CHECK:      %[[LN:.*]], %[[RS:.*]], %[[MU:.*]] = te.norm_fwd %arg0 norm layer_norm(%arg1, %arg2) {eps = 1.000000e-05 : f64}
// CHECK-NEXT: %[[Y:.*]] = te.gemm tn %[[LN]], %arg3 bias(%arg4) : (tensor<8x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT: return %[[Y]], %[[LN]]
// CHECK-LABEL: func.func @lnl_fwd(
// CHECK:      return %{{.*}}, %[[FLN:[^,]*]], %[[FMU:[^,]*]], %[[FRS:[^ ]*]] :
// CHECK-LABEL: func.func @lnl_bwd(
// CHECK:      %[[DW:.*]] = te.gemm nt %arg6, %arg3 : (tensor<8x32xf32>, tensor<8x64xf32>) -> tensor<32x64xf32>
// CHECK-NEXT: %[[DLN:.*]] = te.gemm nn %arg6, %arg2 : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
// CHECK-NEXT: %[[DB:.*]] = te.bias_grad %arg6 : (tensor<8x32xf32>) -> tensor<32xf32>
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[DLN]], %arg7 : tensor<8x64xf32>
// CHECK-NEXT: %[[DX:.*]], %[[DG:.*]], %[[DBETA:.*]] = te.norm_bwd %[[SUM]] input(%arg0) norm layer_norm(%arg1) rsigma(%arg5) mu(%arg4) {with_beta}
// CHECK-NEXT: return %[[DX]], %[[DG]], %[[DBETA]], %[[DW]], %[[DB]]
// CHECK-NOT: te.layernorm_linear
func.func @lnl(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %w: tensor<32x64xf32>, %bias: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x64xf32>) {
  %y, %ln = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) {return_layernorm_output} : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x64xf32>)
  return %y, %ln : tensor<8x32xf32>, tensor<8x64xf32>
}

// -----

// A checkpointed RMSNorm + SwiGLU MLP (3-D input, biases, zero-centered
// gamma): the backward recomputes norm, FC1 and the activation (the
// inlined te.recompute) but not FC2, then runs FC2 dgrad/wgrad, dbias, the
// SwiGLU derivative on the recomputed pre-activation, FC1 dbias, FC1
// dgrad/wgrad and the norm backward with the recomputed rsigma.
// CHECK-LABEL: func.func @mlp_bwd(
// CHECK:      %[[LN:.*]], %[[RS:.*]] = te.norm_fwd %arg0 norm rms_norm(%arg1) {eps = 1.000000e-05 : f64, zero_centered_gamma}
// CHECK-NEXT: %[[F1:.*]] = te.gemm tn %[[LN]], %arg2 bias(%arg3)
// CHECK-NEXT: %[[A:.*]] = te.act swiglu %[[F1]] : (tensor<2x4x256xbf16>) -> tensor<2x4x128xbf16>
// CHECK-NOT:  te.gemm tn
// CHECK-NEXT: %[[DW2:.*]] = te.gemm nt %arg6, %[[A]] : (tensor<2x4x64xbf16>, tensor<2x4x128xbf16>) -> tensor<64x128xbf16>
// CHECK-NEXT: %[[DA:.*]] = te.gemm nn %arg6, %arg4
// CHECK-NEXT: %[[DB2:.*]] = te.bias_grad %arg6
// CHECK-NEXT: %[[DF1:.*]] = te.dact swiglu %[[DA]], %[[F1]] : (tensor<2x4x128xbf16>, tensor<2x4x256xbf16>) -> tensor<2x4x256xbf16>
// CHECK-NEXT: %[[DB1:.*]] = te.bias_grad %[[DF1]]
// CHECK-NEXT: %[[DW1:.*]] = te.gemm nt %[[DF1]], %[[LN]]
// CHECK-NEXT: %[[DLN:.*]] = te.gemm nn %[[DF1]], %arg2
// CHECK-NEXT: %[[DX:.*]], %[[DG:.*]] = te.norm_bwd %[[DLN]] input(%arg0) norm rms_norm(%arg1) rsigma(%[[RS]]) {zero_centered_gamma}
// CHECK-NEXT: return %[[DX]], %[[DG]], %[[DW1]], %[[DB1]], %[[DW2]], %[[DB2]]
// CHECK-NOT: te.recompute
func.func @mlp(%x: tensor<2x4x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<256x64xbf16>, %b1: tensor<256xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<2x4x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1, %b1) act swiglu fc2(%w2, %b2) {checkpoint, zero_centered_gamma} : (tensor<2x4x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<256xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<2x4x64xbf16>
  return %y : tensor<2x4x64xbf16>
}

// -----

// A plain Linear: fprop; dgrad, wgrad, bias gradient.
// CHECK-LABEL: func.func @lin_bwd(
// CHECK:      %[[DX:.*]] = te.gemm nn %arg2, %arg1
// CHECK-NEXT: %[[DW:.*]] = te.gemm nt %arg2, %arg0
// CHECK-NEXT: %[[DB:.*]] = te.bias_grad %arg2
// CHECK-NEXT: return %[[DX]], %[[DW]], %[[DB]]
func.func @lin(%x: tensor<?x64xf32>, %w: tensor<32x64xf32>, %b: tensor<32xf32>) -> tensor<?x32xf32> {
  %y = te.linear %x weight(%w, %b) : (tensor<?x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// An op that falls back to bf16 (alignment not met) decomposes.
// CHECK-LABEL: func.func @fallback(
// CHECK: te.gemm tn
func.func @fallback(%x: tensor<3x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<3x32xbf16> {
  // expected-remark @+2 {{te-generate-backward: recipe mxfp8 needs the rows of every GEMM operand divisible by 32; input has 3: this op runs unquantized (bf16 path)}}
  // expected-warning @+1 {{te-decompose: recipe mxfp8 needs the rows of every GEMM operand divisible by 32; input has 3: this op runs unquantized (bf16 path) (strict-recipe makes this an error)}}
  %y = te.linear %x weight(%w) recipe(#te.mxfp8) : (tensor<3x64xbf16>, tensor<32x64xbf16>) -> tensor<3x32xbf16>
  return %y : tensor<3x32xbf16>
}

// -----

// Delayed scaling without its state: te-generate-backward threads it into
// @f_fwd, but @f keeps none (te-thread-recipe-state not run).
func.func @no_state(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<32x32xbf16> {
  // expected-error @+1 {{te-decompose: an fp8-delayed op needs its scales (the recipe state); run te-thread-recipe-state or te-generate-backward first (te-compile does)}}
  %y = "te.linear"(%x, %w) <{recipe = #te.fp8_delayed<>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return %y : tensor<32x32xbf16>
}

// -----

// te.normalization (TE's LayerNorm / RMSNorm modules): one norm forward and
// one norm backward, high precision under an FP8 recipe (no quantize, no
// fallback warning); mu and rsigma are the forward's statistics.
// CHECK-LABEL: func.func @norm_ln(
// CHECK:      %[[Y:.*]], %{{.*}}, %{{.*}} = te.norm_fwd %arg0 norm layer_norm(%arg1, %arg2) {eps = 1.000000e-03 : f64, zero_centered_gamma} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?xf32>, tensor<?xf32>)
// CHECK-NEXT: return %[[Y]]
// CHECK-LABEL: func.func @norm_ln_fwd(
// CHECK:      %[[FY:.*]], %[[FRS:.*]], %[[FMU:.*]] = te.norm_fwd
// CHECK-NEXT: return %[[FY]], %[[FMU]], %[[FRS]]
// CHECK-LABEL: func.func @norm_ln_bwd(
// CHECK:      %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = te.norm_bwd %arg4 input(%arg0) norm layer_norm(%arg1) rsigma(%arg3) mu(%arg2) {with_beta, zero_centered_gamma} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>, tensor<?xf32>, tensor<?xf32>) -> (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
// CHECK-NEXT: return %[[DX]], %[[DG]], %[[DB]]
// CHECK-NOT: te.quantize
// CHECK-NOT: te.normalization
func.func @norm_ln(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = te.normalization %x norm layer_norm(%g, %b) recipe(#te.fp8_current<>) {eps = 1.0e-3 : f64, zero_centered_gamma} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// RMSNorm on [batch, seq, hidden]: rsigma only, dx and dgamma.
// CHECK-LABEL: func.func @norm_rms_bwd(
// CHECK:      %[[DX:.*]], %[[DG:.*]] = te.norm_bwd %arg3 input(%arg0) norm rms_norm(%arg1) rsigma(%arg2) : (tensor<2x4x64xf32>, tensor<2x4x64xf32>, tensor<64xf32>, tensor<8xf32>) -> (tensor<2x4x64xf32>, tensor<64xf32>)
// CHECK-NEXT: return %[[DX]], %[[DG]]
func.func @norm_rms(%x: tensor<2x4x64xf32>, %g: tensor<64xf32>) -> tensor<2x4x64xf32> {
  %y = te.normalization %x norm rms_norm(%g) : (tensor<2x4x64xf32>, tensor<64xf32>) -> tensor<2x4x64xf32>
  return %y : tensor<2x4x64xf32>
}
