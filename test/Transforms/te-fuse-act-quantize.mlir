// RUN: te-opt %s --split-input-file --te-fuse-act-quantize --verify-diagnostics | FileCheck %s
// RUN: te-opt %s --split-input-file --te-fuse-act-quantize --te-lower-to-runtime 2>/dev/null | FileCheck %s --check-prefix=LLVM
//
// te-fuse-act-quantize: a delayed-scaling FP8 quantization of the result of
// te.act, te.dact or te.dbias_dact that is that result's only use becomes
// one te.act_quantize / te.dact_quantize (the high-precision tensor is never
// stored); users of the quantization's amax get the fused op's. Where the
// high-precision result has other users: a remark naming one. Other inputs,
// current and block scaling: left alone, no remark.

// CHECK-LABEL: func.func @act(
// CHECK-NOT:   te.act gelu
// CHECK:       %[[Q:.*]], %[[A:.*]] = te.act_quantize gelu %arg0 scale(%arg1[3]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>{{$}}
// CHECK-NOT:   te.quantize
// CHECK:       return %[[Q]], %[[A]]
// (ctx, act, dtype, x, rows, cols, limit, alpha, offset, format, scale,
// data, transpose, scale_inv, amax); the scale is element 3 of the scales
// (byte offset 12).
// LLVM-LABEL: llvm.func @te_entry_act(
// LLVM-NOT:   llvm.call @te_rt_act_fwd(
// LLVM-NOT:   llvm.call @te_rt_quantize_fp8(
// LLVM:       %[[OFF:.*]] = llvm.mlir.constant(12 : i64) : i64
// LLVM-NEXT:  %[[SCALE:.*]] = llvm.getelementptr %{{.*}}[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// LLVM-NEXT:  llvm.call @te_rt_act_quantize_fp8({{([^,]*, ){9}[^,]*}}, %[[SCALE]], {{([^,]*, ){3}[^,]*}}) : (!llvm.ptr, i32, i32, !llvm.ptr, i64, i64, f32, f32, f32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// LLVM-NOT:   llvm.call @te_rt_quantize_fp8(
func.func @act(%x: tensor<64x256xbf16>, %s: tensor<6xf32>) -> (!te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>) {
  %y = te.act gelu %x : (tensor<64x256xbf16>) -> tensor<64x256xbf16>
  %q, %a = te.quantize %y scale(%s[3]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return %q, %a : !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
}

// -----

// A gated activation halves the last dim; the clamped-SwiGLU parameters
// carry over.
// CHECK-LABEL: func.func @gated(
// CHECK:       te.act_quantize clamped_swiglu<limit = 5.0{{.*}}, alpha = 1.5{{.*}}> %arg0 scale(%arg1[0]) : tensor<?x256xbf16>, tensor<3xf32> -> !te.qtensor<?x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>{{$}}
// CHECK-NOT:   te.act
// LLVM-LABEL: llvm.func @te_entry_gated(
// LLVM:       llvm.call @te_rt_act_quantize_fp8(
func.func @gated(%x: tensor<?x256xbf16>, %s: tensor<3xf32>) -> !te.qtensor<?x128xe4m3, #te.fp8_delayed<>, rowwise, hopper> {
  %y = te.act clamped_swiglu<limit = 5.0, alpha = 1.5> %x : (tensor<?x256xbf16>) -> tensor<?x128xbf16>
  %q, %a = te.quantize %y scale(%s[0]) : tensor<?x128xbf16>, tensor<3xf32> -> !te.qtensor<?x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>
  return %q : !te.qtensor<?x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>
}

// -----

// A gated activation's derivative: no bias gradient.
// CHECK-LABEL: func.func @dact(
// CHECK:       %[[Q:.*]], %[[A:.*]] = te.dact_quantize swiglu %arg0, %arg1 scale(%arg2[4]) : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>{{$}}
// CHECK-NOT:   te.dact swiglu
// CHECK-NOT:   te.quantize
// CHECK:       return %[[Q]], %[[A]]
// (ctx, act, dtype, dy, x, dbias = null, rows, cols, limit, alpha, offset,
// format, scale, data, transpose, scale_inv, amax)
// LLVM-LABEL: llvm.func @te_entry_dact(
// LLVM-NOT:   llvm.call @te_rt_act_bwd(
// LLVM:       llvm.call @te_rt_dact_quantize_fp8({{([^,]*, ){16}[^,]*}}) : (!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, f32, f32, f32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// LLVM-NOT:   llvm.call @te_rt_quantize_fp8(
func.func @dact(%dy: tensor<64x128xbf16>, %x: tensor<64x256xbf16>, %s: tensor<6xf32>) -> (!te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>) {
  %d = te.dact swiglu %dy, %x : (tensor<64x128xbf16>, tensor<64x256xbf16>) -> tensor<64x256xbf16>
  %q, %a = te.quantize %d scale(%s[4]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return %q, %a : !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
}

// -----

// dbias + dact keeps its bias gradient (the fused op's last result).
// CHECK-LABEL: func.func @dbias_dact(
// CHECK:       %[[Q:.*]], %[[A:.*]], %[[DB:.*]] = te.dact_quantize gelu %arg0, %arg1 scale(%arg2[1]) : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>{{$}}
// CHECK-NOT:   te.dbias_dact
// CHECK-NOT:   te.quantize
// CHECK:       return %[[Q]], %[[DB]], %[[A]]
// LLVM-LABEL: llvm.func @te_entry_dbias_dact(
// LLVM-NOT:   llvm.call @te_rt_dbias_dact(
// LLVM:       llvm.call @te_rt_dact_quantize_fp8(
func.func @dbias_dact(%dy: tensor<64x256xbf16>, %x: tensor<64x256xbf16>, %s: tensor<6xf32>) -> (!te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<256xbf16>, tensor<1xf32>) {
  %d, %db = te.dbias_dact gelu %dy, %x : (tensor<64x256xbf16>, tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<256xbf16>)
  %q, %a = te.quantize %d scale(%s[1]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return %q, %db, %a : !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<256xbf16>, tensor<1xf32>
}

// -----

// The high-precision activation is also returned (or quantized twice): it
// must be stored, remarks, the IR unchanged. A quantization of an argument
// or of another kernel's result: no remark.
// CHECK-LABEL: func.func @not_fused(
// CHECK:       %[[Y:.*]] = te.act gelu %arg0
// CHECK:       te.quantize %[[Y]] scale(%arg1[0])
// CHECK:       %[[D:.*]] = te.dact relu %arg2, %arg0
// CHECK:       te.quantize %[[D]] scale(%arg1[1])
// CHECK:       te.quantize %[[D]] scale(%arg1[2])
// CHECK:       te.quantize %arg0 scale(%arg1[3])
// CHECK-NOT:   te.act_quantize
// CHECK-NOT:   te.dact_quantize
func.func @not_fused(%x: tensor<64x256xbf16>, %s: tensor<6xf32>, %dy: tensor<64x256xbf16>) -> (!te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<64x256xbf16>, !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, rowwise, hopper>, !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>) {
  %y = te.act gelu %x : (tensor<64x256xbf16>) -> tensor<64x256xbf16>
  // expected-remark @+1 {{te-fuse-act-quantize: not fused with te.act: the high-precision result is also read by func.return (it must be stored)}}
  %q, %a = te.quantize %y scale(%s[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %d = te.dact relu %dy, %x : (tensor<64x256xbf16>, tensor<64x256xbf16>) -> tensor<64x256xbf16>
  // expected-remark @+1 {{te-fuse-act-quantize: not fused with te.dact: the high-precision result is also read by te.quantize (it must be stored)}}
  %q1, %a1 = te.quantize %d scale(%s[1]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  // expected-remark @+1 {{te-fuse-act-quantize: not fused with te.dact: the high-precision result is also read by te.quantize (it must be stored)}}
  %q2, %a2 = te.quantize %d scale(%s[2]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>
  %q3, %a3 = te.quantize %x scale(%s[3]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return %q, %y, %q1, %q2, %q3 : !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<64x256xbf16>, !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, rowwise, hopper>, !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>
}

// -----

// The producer's amax result is read (te-fuse-quantize-amax gave it one for
// another quantization): a remark, the IR unchanged.
// CHECK-LABEL: func.func @amax_used(
// CHECK:       %[[Y:.*]], %[[A:.*]] = te.act gelu %arg0
// CHECK-NEXT:  te.quantize %[[Y]] scale(%arg1[0])
func.func @amax_used(%x: tensor<64x256xbf16>, %s: tensor<6xf32>) -> (!te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>) {
  %y, %ya = te.act gelu %x : (tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<1xf32>)
  // expected-remark @+1 {{te-fuse-act-quantize: not fused with te.act: its amax result is used by func.return}}
  %q, %a = te.quantize %y scale(%s[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return %q, %ya : !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
}

// -----

// Current scaling computes its scale from the amax first (that is
// te-fuse-quantize-amax's); block scaling has no per-tensor scale: nothing
// to fuse, no remark.
// CHECK-LABEL: func.func @other_recipes(
// CHECK:       te.act gelu %arg0 : (tensor<128x128xbf16>) -> tensor<128x128xbf16>
// CHECK:       te.quantize %{{.*}} : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<1xf32>{{$}}
// CHECK:       te.act gelu %arg0 : (tensor<128x128xbf16>) -> tensor<128x128xbf16>
// CHECK:       te.quantize %{{.*}} : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>{{$}}
// CHECK-NOT:   te.act_quantize
func.func @other_recipes(%x: tensor<128x128xbf16>) -> (!te.qtensor<128x128xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>) {
  %y = te.act gelu %x : (tensor<128x128xbf16>) -> tensor<128x128xbf16>
  %q, %a = te.quantize %y : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<1xf32>
  %y2 = te.act gelu %x : (tensor<128x128xbf16>) -> tensor<128x128xbf16>
  %qb = te.quantize %y2 : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>
  return %q, %qb : !te.qtensor<128x128xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>
}

