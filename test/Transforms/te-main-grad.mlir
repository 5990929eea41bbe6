// RUN: te-opt %s --te-generate-backward --split-input-file 2>/dev/null | FileCheck %s
// RUN: te-opt %s --te-generate-backward --te-decompose --te-fuse-gemm-epilogues --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=FUSED
// RUN: te-opt %s --te-apply-recipe=recipe=fp8-current --te-generate-backward --te-decompose --te-fuse-gemm-epilogues --split-input-file 2>/dev/null | FileCheck %s --check-prefix=FP8
//
// te.main_grad (TE's fuse_wgrad_accumulation, Megatron's fp32 main_grad):
// @f_bwd takes an fp32 main_grad per marked weight (te.main_grad_of, after
// the backward recipe state) and returns main_grad + the weight gradient in
// fp32 (te.grad_of and te.main_grad_of); te-fuse-gemm-epilogues folds the
// add into the wgrad GEMM (te.gemm nt ... accumulate(%main)), so the
// gradient is never rounded to bf16. A bias gradient the wgrad GEMM would
// have produced (BGRADB) gets its own reduction.

// CHECK-LABEL: func.func @lin_bwd(
// CHECK-SAME: %[[DY:[^:]*]]: tensor<16x32xbf16> {te.grad_of = "output:0"}
// CHECK-SAME: %[[MAIN:[^:]*]]: tensor<32x64xf32> {te.main_grad_of = "input:1"})
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<32x64xf32> {te.grad_of = "input:1", te.main_grad_of = "input:1"}, tensor<32xbf16> {te.grad_of = "input:2"})
// CHECK: %[[D:.*]]:3 = te.linear_bwd
// CHECK: %[[EXT:.*]] = arith.extf %[[D]]#1 : tensor<32x64xbf16> to tensor<32x64xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[MAIN]], %[[EXT]] : tensor<32x64xf32>
// CHECK: return %[[D]]#0, %[[SUM]], %[[D]]#2
// FUSED-LABEL: func.func @lin_bwd(
// FUSED-NOT: arith.addf
// FUSED: te.bias_grad
// FUSED-NEXT: te.gemm nt %{{.*}}, %{{.*}} accumulate(%{{.*}}) : (tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<32x64xf32>) -> tensor<32x64xf32>
// FUSED-NOT: arith.addf
// FUSED: return
// FP8-LABEL: func.func @lin_bwd(
// FP8-NOT: arith.addf
// FP8: te.gemm nt %{{.*}}, %{{.*}} accumulate(%{{.*}}) : (!te.qtensor<16x32x{{.*}}>, !te.qtensor<16x64x{{.*}}>, tensor<32x64xf32>) -> tensor<32x64xf32>
// FP8-NOT: arith.addf
// FP8: return
func.func @lin(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16> {te.main_grad}, %b: tensor<32xbf16>) -> tensor<16x32xbf16> {
  // expected-remark @+1 {{te-fuse-gemm-epilogues: bias gradient not fused: the wgrad GEMM accumulates into main_grad}}
  %y = te.linear %x weight(%w, %b) : (tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// Both MLP weights: two main_grad arguments, in argument order.
// CHECK-LABEL: func.func @mlp_bwd(
// CHECK-SAME: tensor<128x64xf32> {te.main_grad_of = "input:2"}, %{{.*}}: tensor<64x128xf32> {te.main_grad_of = "input:3"})
// FUSED-LABEL: func.func @mlp_bwd(
// FUSED-COUNT-2: accumulate(
// FUSED-NOT: arith.addf
func.func @mlp(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16> {te.main_grad}, %w2: tensor<64x128xbf16> {te.main_grad}) -> tensor<16x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

