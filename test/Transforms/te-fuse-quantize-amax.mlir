// RUN: te-opt %s --split-input-file --te-fuse-quantize-amax --verify-diagnostics | FileCheck %s
// RUN: te-opt %s --split-input-file --te-fuse-quantize-amax --te-lower-to-runtime 2>/dev/null | FileCheck %s --check-prefix=LLVM
//
// te-fuse-quantize-amax: a current-scaling FP8 quantization of an
// activation's, dact's or dbias+dact's result takes the amax that kernel
// computes (a new `amax` result), skips its own amax pass and has no amax
// result; users of the old amax get the producer's. Other inputs keep the
// amax pass and get a remark; delayed and block scaling are left alone.

// CHECK-LABEL: func.func @act(
// CHECK:       %[[Y:.*]], %[[A:.*]] = te.act gelu %arg0 : (tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<1xf32>)
// CHECK-NEXT:  %[[Q:.*]] = te.quantize %[[Y]] amax(%[[A]]) : tensor<64x256xbf16> amax tensor<1xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_current<>, both, hopper>{{$}}
// CHECK-NEXT:  return %[[Q]], %[[A]], %[[Y]]
// The activation's call writes the amax (its last argument); the
// quantization reads it (its last argument, amax_in).
// LLVM-LABEL: llvm.func @te_entry_act(
// LLVM:       llvm.call @te_rt_act_fwd({{.*}}, %[[AMAX:[^)]*]]) :
// LLVM:       llvm.call @te_rt_quantize_fp8({{.*}}, %[[AMAX]]) :
func.func @act(%x: tensor<64x256xbf16>) -> (!te.qtensor<64x256xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>, tensor<64x256xbf16>) {
  %y = te.act gelu %x : (tensor<64x256xbf16>) -> tensor<64x256xbf16>
  %q, %a = te.quantize %y : tensor<64x256xbf16> -> !te.qtensor<64x256xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  return %q, %a, %y : !te.qtensor<64x256xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>, tensor<64x256xbf16>
}

// -----

// A gated activation's derivative (no fused dbias form) and an E5M2
// gradient.
// CHECK-LABEL: func.func @dact(
// CHECK:       %[[D:.*]], %[[A:.*]] = te.dact swiglu %arg0, %arg1 : (tensor<64x128xbf16>, tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<1xf32>)
// CHECK-NEXT:  te.quantize %[[D]] amax(%[[A]]) : tensor<64x256xbf16> amax tensor<1xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_current<>, both, hopper>{{$}}
// LLVM-LABEL: llvm.func @te_entry_dact(
// LLVM:       llvm.call @te_rt_act_bwd({{.*}}, %[[AMAX:[^)]*]]) :
// LLVM:       llvm.call @te_rt_quantize_fp8({{.*}}, %[[AMAX]]) :
func.func @dact(%dy: tensor<64x128xbf16>, %x: tensor<64x256xbf16>) -> !te.qtensor<64x256xe5m2, #te.fp8_current<>, both, hopper> {
  %d = te.dact swiglu %dy, %x : (tensor<64x128xbf16>, tensor<64x256xbf16>) -> tensor<64x256xbf16>
  %q, %a = te.quantize %d : tensor<64x256xbf16> -> !te.qtensor<64x256xe5m2, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  return %q : !te.qtensor<64x256xe5m2, #te.fp8_current<>, both, hopper>
}

// -----

// dbias + dact keeps its bias gradient; two quantizations of one result
// share the one amax.
// CHECK-LABEL: func.func @dbias_dact(
// CHECK:       %[[D:.*]], %[[DB:.*]], %[[A:.*]] = te.dbias_dact gelu %arg0, %arg1 : (tensor<64x256xbf16>, tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<256xbf16>, tensor<1xf32>)
// CHECK-NEXT:  te.quantize %[[D]] amax(%[[A]]) : {{.*}}e5m2
// CHECK-NEXT:  te.quantize %[[D]] amax(%[[A]]) : {{.*}}e4m3
// CHECK-NEXT:  return {{.*}}, %[[DB]] :
// LLVM-LABEL: llvm.func @te_entry_dbias_dact(
// LLVM:       llvm.call @te_rt_dbias_dact({{.*}}, %[[AMAX:[^)]*]]) :
func.func @dbias_dact(%dy: tensor<64x256xbf16>, %x: tensor<64x256xbf16>) -> (!te.qtensor<64x256xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<64x256xe4m3, #te.fp8_current<format = e4m3>, rowwise, hopper>, tensor<256xbf16>) {
  %d, %db = te.dbias_dact gelu %dy, %x : (tensor<64x256xbf16>, tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<256xbf16>)
  %q, %a = te.quantize %d : tensor<64x256xbf16> -> !te.qtensor<64x256xe5m2, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  %q2, %a2 = te.quantize %d : tensor<64x256xbf16> -> !te.qtensor<64x256xe4m3, #te.fp8_current<format = e4m3>, rowwise, hopper>, tensor<1xf32>
  return %q, %q2, %db : !te.qtensor<64x256xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<64x256xe4m3, #te.fp8_current<format = e4m3>, rowwise, hopper>, tensor<256xbf16>
}

// -----

// The norm kernel and arguments (weights, incoming gradients) have no amax
// output: remarks, the IR unchanged.
// CHECK-LABEL: func.func @not_fused(
// CHECK:       te.quantize %output : {{.*}}, tensor<1xf32>{{$}}
// CHECK:       te.quantize %arg3 {weight} : {{.*}}, tensor<1xf32>{{$}}
func.func @not_fused(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %w: tensor<256x128xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<256x128xe4m3, #te.fp8_current<>, rowwise, hopper>) {
  %z, %rs, %mu = te.norm_fwd %x norm layer_norm(%g, %b) {eps = 1.0e-05 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> (tensor<64x128xbf16>, tensor<64xf32>, tensor<64xf32>)
  // expected-remark @+1 {{te-fuse-quantize-amax: amax not fused: the input is the result of te.norm_fwd, which computes no amax (the quantization reads it twice)}}
  %zq, %za = te.quantize %z : tensor<64x128xbf16> -> !te.qtensor<64x128xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<1xf32>
  // expected-remark @+1 {{te-fuse-quantize-amax: amax not fused: the input is an argument (the quantization reads it twice)}}
  %wq, %wa = te.quantize %w {weight} : tensor<256x128xbf16> -> !te.qtensor<256x128xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<1xf32>
  return %zq, %wq : !te.qtensor<64x128xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<256x128xe4m3, #te.fp8_current<>, rowwise, hopper>
}

// -----

// Delayed scaling casts and records the amax in one pass; block scaling
// records none: nothing to fuse, no remark.
// CHECK-LABEL: func.func @other_recipes(
// CHECK:       te.act gelu %arg0 : (tensor<128x128xbf16>) -> tensor<128x128xbf16>
// CHECK:       te.quantize %{{.*}} scale(%arg1[0]) : {{.*}}, tensor<1xf32>{{$}}
// CHECK:       te.quantize %{{.*}} : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>{{$}}
func.func @other_recipes(%x: tensor<128x128xbf16>, %s: tensor<3xf32>) -> (!te.qtensor<128x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>) {
  %y = te.act gelu %x : (tensor<128x128xbf16>) -> tensor<128x128xbf16>
  %q, %a = te.quantize %y scale(%s[0]) : tensor<128x128xbf16>, tensor<3xf32> -> !te.qtensor<128x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>
  %qb = te.quantize %y : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>
  return %q, %qb : !te.qtensor<128x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>
}
