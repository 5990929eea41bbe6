// RUN: te-opt %s --split-input-file --te-fuse-norm-quantize --verify-diagnostics | FileCheck %s
// RUN: te-opt %s --split-input-file --te-fuse-norm-quantize --te-lower-to-runtime --cse 2>/dev/null | FileCheck %s --check-prefix=LLVM
//
// te-fuse-norm-quantize: a per-tensor FP8 quantization (current scaling
// without amax(...), or delayed scaling) of te.norm_fwd's output that is
// that output's only use becomes one te.norm_quantize (the high-precision
// output is never stored); users of the norm's rsigma and mu and of the
// quantization's amax get the fused op's. Where the output has other users:
// a remark naming one. Block-scaled recipes and quantizations that already
// take a producer's amax: left alone, no remark.

// LayerNorm under current scaling: the fused op replaces both, at the
// norm's place.
// CHECK-LABEL: func.func @ln_current(
// CHECK-NOT:   te.norm_fwd
// CHECK:       %[[Q:.*]], %[[RS:.*]], %[[A:.*]], %[[MU:.*]] = te.norm_quantize %arg0 norm layer_norm(%arg1, %arg2) {eps = 1.000000e-05 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<64xf32>, tensor<1xf32>, tensor<64xf32>){{$}}
// CHECK-NOT:   te.quantize
// CHECK:       return %[[Q]], %[[A]], %[[RS]], %[[MU]]
// (ctx, kind = 0 (LayerNorm), dtype = 1 (bf16), x, gamma, beta, eps,
// zero_centered = 0, rows, cols, mu, rsigma, format = 0 (E4M3), scale =
// null (current scaling), pow2_scale = 0, data, transpose, scale_inv, amax):
// 19 arguments (constants merged by cse).
// LLVM-LABEL: llvm.func @te_entry_ln_current(
// LLVM-DAG:   %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// LLVM-DAG:   %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// LLVM-DAG:   %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// LLVM-NOT:   llvm.call @te_rt_norm_fwd(
// LLVM-NOT:   llvm.call @te_rt_quantize_fp8(
// LLVM:       llvm.call @te_rt_norm_quantize_fp8(%arg0, %[[ZERO]], %[[ONE]], {{(%[0-9a-z]+, ){3}%[0-9a-z]+}}, %[[ZERO]], {{(%[0-9a-z]+, ){3}%[0-9a-z]+}}, %[[ZERO]], %[[NULL]], %[[ZERO]], {{(%[0-9a-z]+, ){3}%[0-9a-z]+}}) : (!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, f64, i32, i64, i64, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// LLVM-NOT:   llvm.call @te_rt_quantize_fp8(
func.func @ln_current(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>, tensor<64xf32>, tensor<64xf32>) {
  %z, %rs, %mu = te.norm_fwd %x norm layer_norm(%g, %b) {eps = 1.0e-05 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> (tensor<64x128xbf16>, tensor<64xf32>, tensor<64xf32>)
  %q, %a = te.quantize %z : tensor<64x128xbf16> -> !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  return %q, %a, %rs, %mu : !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// RMSNorm (zero-centered gamma) under current scaling with power-of-two
// scales, dynamic rows: no mu (null in the call), pow2_scale 1.
// CHECK-LABEL: func.func @rms_current_pow2(
// CHECK:       %[[Q:.*]], %[[RS:.*]], %[[A:.*]] = te.norm_quantize %arg0 norm rms_norm(%arg1) {eps = 9.9999999999999995E-7 : f64, zero_centered_gamma} : (tensor<?x128xbf16>, tensor<128xbf16>) -> (!te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, rowwise, hopper>, tensor<?xf32>, tensor<1xf32>){{$}}
// CHECK-NOT:   te.quantize
// CHECK:       return %[[Q]], %[[RS]], %[[A]]
// (kind = 1 (RMSNorm), beta, mu and the transposed copy (rowwise only)
// null, zero_centered = 1, pow2_scale = 1.)
// LLVM-LABEL: llvm.func @te_entry_rms_current_pow2(
// LLVM-DAG:   %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// LLVM-DAG:   %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// LLVM-DAG:   %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// LLVM:       llvm.call @te_rt_norm_quantize_fp8(%arg0, %[[ONE]], %[[ONE]], %{{[0-9]+}}, %{{[0-9]+}}, %[[NULL]], %{{[0-9]+}}, %[[ONE]], %{{[0-9]+}}, %{{[0-9]+}}, %[[NULL]], %{{[0-9]+}}, %[[ZERO]], %[[NULL]], %[[ONE]], %{{[0-9]+}}, %[[NULL]], %{{[0-9]+}}, %{{[0-9]+}}) :
func.func @rms_current_pow2(%x: tensor<?x128xbf16>, %g: tensor<128xbf16>) -> (!te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, rowwise, hopper>, tensor<?xf32>, tensor<1xf32>) {
  %z, %rs = te.norm_fwd %x norm rms_norm(%g) {eps = 1.0e-06 : f64, zero_centered_gamma} : (tensor<?x128xbf16>, tensor<128xbf16>) -> (tensor<?x128xbf16>, tensor<?xf32>)
  %q, %a = te.quantize %z : tensor<?x128xbf16> -> !te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, rowwise, hopper>, tensor<1xf32>
  return %q, %rs, %a : !te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, rowwise, hopper>, tensor<?xf32>, tensor<1xf32>
}

// -----

// LayerNorm under delayed scaling: the scale is element 2 of the state
// (byte offset 8).
// CHECK-LABEL: func.func @ln_delayed(
// CHECK:       %[[Q:.*]], %[[RS:.*]], %[[A:.*]], %[[MU:.*]] = te.norm_quantize %arg0 norm layer_norm(%arg1, %arg2) scale(%arg3[2]) {eps = 1.000000e-05 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<6xf32>) -> (!te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<64xf32>, tensor<1xf32>, tensor<64xf32>){{$}}
// CHECK-NOT:   te.quantize
// CHECK:       return %[[Q]], %[[A]], %[[MU]], %[[RS]]
// LLVM-LABEL: llvm.func @te_entry_ln_delayed(
// LLVM:       %[[OFF:.*]] = llvm.mlir.constant(8 : i64) : i64
// LLVM:       %[[SCALE:.*]] = llvm.getelementptr %{{.*}}[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// LLVM:       llvm.call @te_rt_norm_quantize_fp8({{(%[0-9a-z]+, ){12}%[0-9a-z]+}}, %[[SCALE]], {{(%[0-9a-z]+, ){4}%[0-9a-z]+}}) : (!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, f64, i32, i64, i64, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// LLVM-NOT:   llvm.call @te_rt_quantize_fp8(
func.func @ln_delayed(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) -> (!te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<64xf32>, tensor<64xf32>) {
  %z, %rs, %mu = te.norm_fwd %x norm layer_norm(%g, %b) {eps = 1.0e-05 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> (tensor<64x128xbf16>, tensor<64xf32>, tensor<64xf32>)
  %q, %a = te.quantize %z scale(%s[2]) : tensor<64x128xbf16>, tensor<6xf32> -> !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return %q, %a, %mu, %rs : !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// RMSNorm under delayed scaling whose scales are computed after the norm:
// the fused op goes at the quantization (where the scales are available).
// CHECK-LABEL: func.func @rms_delayed_late_scales(
// CHECK:       %[[S:.*]] = arith.addf %arg2, %arg2 : tensor<4xf32>
// CHECK-NEXT:  %[[Q:.*]], %[[RS:.*]], %[[A:.*]] = te.norm_quantize %arg0 norm rms_norm(%arg1) scale(%[[S]][3]) {eps = 1.000000e-05 : f64} : (tensor<32x64xf32>, tensor<64xf32>, tensor<4xf32>) -> (!te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<32xf32>, tensor<1xf32>){{$}}
// CHECK-NEXT:  return %[[Q]], %[[RS]]
// LLVM-LABEL: llvm.func @te_entry_rms_delayed_late_scales(
// LLVM:       llvm.call @te_rt_norm_quantize_fp8(
func.func @rms_delayed_late_scales(%x: tensor<32x64xf32>, %g: tensor<64xf32>, %s0: tensor<4xf32>) -> (!te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<32xf32>) {
  %z, %rs = te.norm_fwd %x norm rms_norm(%g) {eps = 1.0e-05 : f64} : (tensor<32x64xf32>, tensor<64xf32>) -> (tensor<32x64xf32>, tensor<32xf32>)
  %s = arith.addf %s0, %s0 : tensor<4xf32>
  %q, %a = te.quantize %z scale(%s[3]) : tensor<32x64xf32>, tensor<4xf32> -> !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>
  return %q, %rs : !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<32xf32>
}

// -----

// ... unless the statistics are read before the scales exist: a remark,
// the IR unchanged.
// CHECK-LABEL: func.func @stats_read_early(
// CHECK:       te.norm_fwd
// CHECK:       te.quantize
// CHECK-NOT:   te.norm_quantize
func.func @stats_read_early(%x: tensor<32x64xf32>, %g: tensor<64xf32>, %s0: tensor<4xf32>) -> (!te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<32xf32>) {
  %z, %rs = te.norm_fwd %x norm rms_norm(%g) {eps = 1.0e-05 : f64} : (tensor<32x64xf32>, tensor<64xf32>) -> (tensor<32x64xf32>, tensor<32xf32>)
  %r2 = arith.addf %rs, %rs : tensor<32xf32>
  %s = arith.addf %s0, %s0 : tensor<4xf32>
  // expected-remark @+1 {{te-fuse-norm-quantize: not fused with te.norm_fwd: its statistics are read before the scales are computed}}
  %q, %a = te.quantize %z scale(%s[3]) : tensor<32x64xf32>, tensor<4xf32> -> !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>
  return %q, %r2 : !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<32xf32>
}

// -----

// The norm output is also returned (LayerNormLinear's
// return_layernorm_output) or quantized twice: it must be stored, remarks
// naming the other user, the IR unchanged.
// CHECK-LABEL: func.func @not_fused(
// CHECK:       %[[Z:.*]], %{{.*}}, %{{.*}} = te.norm_fwd %arg0
// CHECK:       te.quantize %[[Z]] :
// CHECK:       %[[Z2:.*]], %{{.*}} = te.norm_fwd %arg0
// CHECK:       te.quantize %[[Z2]] scale(%arg3[0])
// CHECK:       te.quantize %[[Z2]] scale(%arg3[1])
// CHECK-NOT:   te.norm_quantize
func.func @not_fused(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<64x128xbf16>, !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, columnwise, hopper>) {
  %z, %rs, %mu = te.norm_fwd %x norm layer_norm(%g, %b) {eps = 1.0e-05 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> (tensor<64x128xbf16>, tensor<64xf32>, tensor<64xf32>)
  // expected-remark @+1 {{te-fuse-norm-quantize: not fused with te.norm_fwd: the high-precision output is also read by func.return (it must be stored)}}
  %q, %a = te.quantize %z : tensor<64x128xbf16> -> !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  %z2, %rs2 = te.norm_fwd %x norm rms_norm(%g) {eps = 1.0e-05 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>) -> (tensor<64x128xbf16>, tensor<64xf32>)
  // expected-remark @+1 {{te-fuse-norm-quantize: not fused with te.norm_fwd: the high-precision output is also read by te.quantize (it must be stored)}}
  %q1, %a1 = te.quantize %z2 scale(%s[0]) : tensor<64x128xbf16>, tensor<6xf32> -> !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>
  // expected-remark @+1 {{te-fuse-norm-quantize: not fused with te.norm_fwd: the high-precision output is also read by te.quantize (it must be stored)}}
  %q2, %a2 = te.quantize %z2 scale(%s[1]) : tensor<64x128xbf16>, tensor<6xf32> -> !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, columnwise, hopper>, tensor<1xf32>
  return %q, %z, %q1, %q2 : !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<64x128xbf16>, !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, columnwise, hopper>
}

// -----

// Block scaling (fp8-block, mxfp8) has no per-tensor scale, and a
// quantization that already takes an amax (te-fuse-quantize-amax's form) or
// of another value is not a candidate: nothing to fuse, no remark.
// CHECK-LABEL: func.func @other_recipes(
// CHECK:       te.quantize %{{.*}} : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>{{$}}
// CHECK:       te.quantize %{{.*}} : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.mxfp8, rowwise, blackwell, swizzled>{{$}}
// CHECK:       te.quantize %{{.*}} amax(%arg3) : tensor<128x128xbf16> amax tensor<1xf32> -> !te.qtensor<128x128xe4m3, #te.fp8_current<>, rowwise, hopper>{{$}}
// CHECK:       te.quantize %arg0 : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<1xf32>{{$}}
// CHECK-NOT:   te.norm_quantize
func.func @other_recipes(%x: tensor<128x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %amax: tensor<1xf32>) -> (!te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>, !te.qtensor<128x128xe4m3, #te.mxfp8<>, rowwise, blackwell, swizzled>, !te.qtensor<128x128xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<128x128xe4m3, #te.fp8_current<>, rowwise, hopper>) {
  %z, %rs, %mu = te.norm_fwd %x norm layer_norm(%g, %b) {eps = 1.0e-05 : f64} : (tensor<128x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> (tensor<128x128xbf16>, tensor<128xf32>, tensor<128xf32>)
  %qb = te.quantize %z : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>
  %z2, %rs2 = te.norm_fwd %x norm rms_norm(%g) {eps = 1.0e-05 : f64} : (tensor<128x128xbf16>, tensor<128xbf16>) -> (tensor<128x128xbf16>, tensor<128xf32>)
  %qm = te.quantize %z2 : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.mxfp8<>, rowwise, blackwell, swizzled>
  %z3, %rs3 = te.norm_fwd %x norm rms_norm(%g) {eps = 1.0e-05 : f64} : (tensor<128x128xbf16>, tensor<128xbf16>) -> (tensor<128x128xbf16>, tensor<128xf32>)
  %qa = te.quantize %z3 amax(%amax) : tensor<128x128xbf16> amax tensor<1xf32> -> !te.qtensor<128x128xe4m3, #te.fp8_current<>, rowwise, hopper>
  %qx, %ax = te.quantize %x : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<1xf32>
  return %qb, %qm, %qa, %qx : !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>, !te.qtensor<128x128xe4m3, #te.mxfp8<>, rowwise, blackwell, swizzled>, !te.qtensor<128x128xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<128x128xe4m3, #te.fp8_current<>, rowwise, hopper>
}
