// RUN: te-opt %s --te-generate-backward --te-decompose --te-fuse-gemm-epilogues --split-input-file --verify-diagnostics | FileCheck %s
//
// BGRADB: the bias gradients of a LayerNorm + GELU MLP come out of the wgrad
// GEMMs' epilogues (TransformerEngine's bf16 backward); none is left as its
// own kernel.
// CHECK-LABEL: func.func @mlp_bwd(
// CHECK:     %[[DW2:.*]], %[[DB2:.*]] = te.gemm nt %arg9, %arg5 : (tensor<16x64xbf16>, tensor<16x128xbf16>) -> (tensor<64x128xbf16>, tensor<64xbf16>)
// CHECK:     %[[DA:.*]] = te.gemm nn %arg9, %arg6
// CHECK:     %[[DF1:.*]] = te.dact gelu %[[DA]], %arg4
// CHECK:     %[[DW1:.*]], %[[DB1:.*]] = te.gemm nt %[[DF1]], %arg2 : (tensor<16x128xbf16>, tensor<16x64xbf16>) -> (tensor<128x64xbf16>, tensor<128xbf16>)
// CHECK-NOT: te.bias_grad
// CHECK:     return {{.*}}, %[[DW1]], %[[DB1]], %[[DW2]], %[[DB2]]
func.func @mlp(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<16x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// A bias gradient that no wgrad GEMM shares (the weight is a constant, so
// nothing differentiates it) stays, with a remark saying why.
// CHECK-LABEL: func.func @frozen_bwd(
// CHECK: te.bias_grad
func.func @frozen(%x: tensor<16x64xf32>, %b: tensor<32xf32>) -> tensor<16x32xf32> {
  %w = arith.constant dense<0.5> : tensor<32x64xf32>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: bias gradient not fused: no wgrad GEMM reads the same gradient}}
  %y = te.linear %x weight(%w, %b) : (tensor<16x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}
