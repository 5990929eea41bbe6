// RUN: te-opt %s --te-generate-backward --te-thread-recipe-state --te-decompose --te-lower-to-runtime --split-input-file | FileCheck %s
// RUN: te-opt %s --te-generate-backward --te-thread-recipe-state --te-decompose --te-lower-to-runtime --cse --split-input-file | FileCheck %s --check-prefix=FAST
//
// te-lower-to-runtime for per-tensor FP8: te.quantize -> te_rt_quantize_fp8,
// FP8 te.gemm -> te_rt_gemm_fp8 (every layout as TN on the inner buffers),
// te.amax_update -> te_rt_amax_update (te_rt_amax_update_unused for an
// amax vector with slots no op records); a qtensor is one buffer (scale_inv,
// transpose, data), listed with its inner tensors in the module info.

// LayerNormLinear under current scaling. Forward: norm, quantize the norm
// output (both copies: its scale and columnwise copy straight into result
// 2, the saved columnwise tensor, its rowwise copy into the arena: a split
// result) and the weight (both, straight into result 1), FP8 fprop into
// result 0; nothing is copied out.
// CHECK-LABEL: llvm.func @te_entry_lnl_fwd(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr
// CHECK:      llvm.call @te_rt_norm_fwd(
// CHECK:      %[[NULLSCALE:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:      llvm.call @te_rt_quantize_fp8(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NULLSCALE]],
// CHECK:      llvm.call @te_rt_quantize_fp8(
// CHECK:      llvm.call @te_rt_gemm_fp8(
// CHECK-NOT:  llvm.call @te_rt_quantize_fp8
// CHECK-NOT:  llvm.call @te_rt_copy(
// CHECK-NOT:  llvm.call @te_rt_gemm
// CHECK:      llvm.call @te_rt_arena_release(
// Backward: quantize dy once (E5M2, both copies), the dgrad FP8 GEMM, the
// bias gradient from the high-precision dy, the norm backward, then the
// wgrad FP8 GEMM (last: the dgrad's output is placed in the weight
// gradient's buffer before the wgrad writes it).
// CHECK-LABEL: llvm.func @te_entry_lnl_bwd(
// CHECK:      llvm.call @te_rt_quantize_fp8(
// CHECK-NOT:  llvm.call @te_rt_quantize_fp8
// CHECK:      llvm.call @te_rt_gemm_fp8(
// CHECK:      llvm.call @te_rt_bias_grad(
// CHECK:      llvm.call @te_rt_norm_bwd(
// CHECK:      llvm.call @te_rt_gemm_fp8(
// The module info: inner tensors in buffer order, each 256-byte aligned:
// the weight [32, 64] both (256 + 2048 + 2048), the norm output [16, 64]
// columnwise (256 + 1024).
// CHECK:      @te_module_info.json(
// (The inference entry's arena: rsigma and the amaxes, dead before the
// GEMM, are placed in the output's buffer before it is written.)
// CHECK-SAME: \22arena_bytes\22:3840,\22arena_slots\22:3
// CHECK-SAME: {\22alignment\22:256,\22dtype\22:\22qtensor\22,\22inner\22:[{\22dtype\22:\22float32\22,\22name\22:\22scale_inv\22,\22shape\22:[1]},{\22dtype\22:\22uint8\22,\22name\22:\22transpose\22,\22shape\22:[64,32]},{\22dtype\22:\22uint8\22,\22name\22:\22data\22,\22shape\22:[32,64]}],\22shape\22:[32,64],\22te.saved\22:\22layernorm_linear_0.weight\22,\22type\22:\22!te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>\22}
// CHECK-SAME: {\22alignment\22:256,\22dtype\22:\22qtensor\22,\22inner\22:[{\22dtype\22:\22float32\22,\22name\22:\22scale_inv\22,\22shape\22:[1]},{\22dtype\22:\22uint8\22,\22name\22:\22transpose\22,\22shape\22:[64,16]}],\22shape\22:[16,64],\22te.saved\22:\22layernorm_linear_0.ln_out\22
// The last two arguments of te_rt_gemm_fp8 are accumulate and
// fast_accumulate: the fprop accumulates fast (TE's default), dgrad and
// wgrad split. (--cse leaves one constant of each value.)
// FAST-LABEL: llvm.func @te_entry_lnl_fwd(
// FAST-DAG:   %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// FAST-DAG:   %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// FAST:       llvm.call @te_rt_gemm_fp8({{.*}}, %[[ZERO]], %[[ONE]]) :
// FAST-LABEL: llvm.func @te_entry_lnl_bwd(
// FAST-DAG:   %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// FAST:       llvm.call @te_rt_gemm_fp8({{.*}}, %[[ZERO]], %[[ZERO]]) :
// FAST:       llvm.call @te_rt_gemm_fp8({{.*}}, %[[ZERO]], %[[ZERO]]) :
func.func @lnl(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w: tensor<32x64xbf16>, %bias: tensor<32xbf16>) -> tensor<16x32xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) recipe(#te.fp8_current<>) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// Delayed scaling with a dynamic token count: the scale is element `slot`
// of the scales argument (byte offset 4 * slot), the qtensor buffers are
// sized from d0 at run time, and the state update uses E4M3's 448 forward;
// the GEMM output's slot (2) records no amax: the update's mask, 0b100,
// marks it instead of a memset of the slot.
// CHECK-LABEL: llvm.func @te_entry_lin(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr, %[[ARGS:[^:]*]]: !llvm.ptr
// CHECK:      %[[SP:.*]] = llvm.getelementptr %[[ARGS]][3]
// CHECK-NEXT: %[[S:.*]] = llvm.load %[[SP]] : !llvm.ptr -> !llvm.ptr
// CHECK:      %[[S0:.*]] = llvm.getelementptr %[[S]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:      llvm.call @te_rt_quantize_fp8(%[[CTX]], {{.*}}, %[[S0]],
// CHECK:      %[[S1:.*]] = llvm.getelementptr %[[S]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:      llvm.call @te_rt_quantize_fp8(%[[CTX]], {{.*}}, %[[S1]],
// CHECK:      llvm.call @te_rt_gemm_fp8(
// CHECK-NOT:  llvm.call @te_rt_zero
// CHECK:      %[[MAX:.*]] = llvm.mlir.constant(4.480000e+02 : f32) : f32
// CHECK:      %[[MASK:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-NEXT: llvm.call @te_rt_amax_update_unused(%[[CTX]], {{.*}}, %[[MAX]], %{{.*}}, %{{.*}}, %[[MASK]],
// CHECK:      @te_module_info.json(
// CHECK-SAME: \22arena_bytes\22:\22dynamic\22
// CHECK-SAME: \22te.state\22:\22linear_0.amax_history_fwd\22
func.func @lin(%x: tensor<?x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<?x32xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_delayed<amax_history_len = 4>) : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}
