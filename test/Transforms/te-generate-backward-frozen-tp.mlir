// RUN: te-opt %s --te-tensor-parallel="size=2 sequence-parallel=true" --te-generate-backward --te-decompose 2>/dev/null | FileCheck %s
//
// te.frozen under tensor and sequence parallelism: a frozen weight's wgrad
// is left out and so is the all-gather of the saved norm output that only
// that wgrad reads (TE's async gather for the wgrad).

// Column-parallel LayerNormLinear, frozen weight: the dgrad and its
// reduce-scatter only.
// CHECK-LABEL: func.func @lnl_bwd(
// CHECK-NOT: te.all_gather
// CHECK-NOT: te.gemm nt
// CHECK: te.gemm nn
// CHECK-NEXT: te.reduce_scatter
// CHECK-NOT: te.gemm nt
// CHECK-NOT: te.all_gather
// CHECK: return
func.func @lnl(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w: tensor<128x64xbf16> {te.frozen}, %b: tensor<128xbf16>) -> tensor<32x128xbf16> {
  %h = te.layernorm_linear %x norm layer_norm(%g) weight(%w, %b) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<32x128xbf16>
  return %h : tensor<32x128xbf16>
}

// MLP with FC1 frozen: only dy is gathered (FC2's GEMMs), not the norm
// output; FC2's wgrad stays.
// CHECK-LABEL: func.func @mlp_fc1_bwd(
// CHECK: te.all_gather %{{.*}} group(2) : tensor<16x64xbf16>
// CHECK-NOT: te.all_gather
// CHECK: te.gemm nt
// CHECK-NEXT: te.gemm nn
// CHECK: te.gemm nn
// CHECK-NOT: te.gemm nt
// CHECK-NOT: te.all_gather
// CHECK: return
func.func @mlp_fc1(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16> {te.frozen}, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<32x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<32x64xbf16>
  return %y : tensor<32x64xbf16>
}
