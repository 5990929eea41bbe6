// RUN: te-opt %s --split-input-file --te-fuse-dbias-quantize --te-lower-to-runtime 2>/dev/null | FileCheck %s --check-prefix=LLVM
//
// te-fuse-dbias-quantize then te-lower-to-runtime: the fused op is one
// te_rt_dbias_quantize_fp8 call, with no te_rt_bias_grad or
// te_rt_quantize_fp8 left.

// Delayed scaling: the bias gradient, then the cast.
// (ctx, dtype, x, rows, cols, format, scale, pow2_scale, data, transpose,
// scale_inv, amax, dbias); the scale is element 2 (byte offset 8).
// LLVM-LABEL: llvm.func @te_entry_delayed(
// LLVM-NOT:   llvm.call @te_rt_bias_grad(
// LLVM-NOT:   llvm.call @te_rt_quantize_fp8(
// LLVM:       %[[OFF:.*]] = llvm.mlir.constant(8 : i64) : i64
// LLVM-NEXT:  %[[SCALE:.*]] = llvm.getelementptr %{{.*}}[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// LLVM:       llvm.call @te_rt_dbias_quantize_fp8({{([^,]*, ){5}[^,]*}}, %[[SCALE]], {{([^,]*, ){5}[^,]*}}) : (!llvm.ptr, i32, !llvm.ptr, i64, i64, i32, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// LLVM-NOT:   llvm.call @te_rt_bias_grad(
// LLVM-NOT:   llvm.call @te_rt_quantize_fp8(
func.func @delayed(%dy: tensor<64x256xbf16>, %s: tensor<6xf32>) -> (!te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>) {
  %db = te.bias_grad %dy : (tensor<64x256xbf16>) -> tensor<256xbf16>
  %q, %a = te.quantize %dy scale(%s[2]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return %q, %a, %db : !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>
}

// -----

// Current scaling (power-of-2 scales), a dynamic leading dim, the cast
// first.
// LLVM-LABEL: llvm.func @te_entry_current(
// LLVM:       llvm.call @te_rt_dbias_quantize_fp8(
// LLVM-NOT:   llvm.call @te_rt_bias_grad(
func.func @current(%dy: tensor<?x128xbf16>) -> (tensor<128xbf16>, !te.qtensor<?x128xe5m2, #te.fp8_current<power_2_scales = true>, both, hopper>) {
  %q, %a = te.quantize %dy : tensor<?x128xbf16> -> !te.qtensor<?x128xe5m2, #te.fp8_current<power_2_scales = true>, both, hopper>, tensor<1xf32>
  %db = te.bias_grad %dy : (tensor<?x128xbf16>) -> tensor<128xbf16>
  return %db, %q : tensor<128xbf16>, !te.qtensor<?x128xe5m2, #te.fp8_current<power_2_scales = true>, both, hopper>
}

