// RUN: te-opt %s --split-input-file --verify-roundtrip | FileCheck %s

// Quantized tensor types of every recipe, usage and architecture class,
// with dynamic leading dims and the optional flags.
// CHECK-LABEL: func.func @types
// CHECK-SAME: !te.qtensor<?x8x64xe4m3, #te.fp8_delayed<>, both, hopper>
// CHECK-SAME: !te.qtensor<32x64xe5m2, #te.fp8_current<>, columnwise, blackwell>
// CHECK-SAME: !te.qtensor<64x64xe4m3, #te.mxfp8, rowwise, hopper, swizzled>
// CHECK-SAME: !te.qtensor<256x128xe4m3, #te.fp8_block<>, both, hopper, block_2d>
// CHECK-SAME: !te.qtensor<?x32xe2m1, #te.nvfp4<>, rowwise, blackwell, swizzled, row_scaled>
// CHECK-SAME: !te.qtensor<64xe4m3, #te.fp8_delayed<format = e4m3>, rowwise, hopper>
// CHECK-SAME: !te.qtensor<64x64xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>
// CHECK-SAME: !te.qtensor<64x64xe2m1, #te.nvfp4<>, both, blackwell, block_2d, swizzled>
func.func @types(
    %a: !te.qtensor<?x8x64xe4m3, #te.fp8_delayed<>, both, hopper>,
    %b: !te.qtensor<32x64xe5m2, #te.fp8_current<>, columnwise, blackwell>,
    %c: !te.qtensor<64x64xe4m3, #te.mxfp8, rowwise, hopper, swizzled>,
    %d: !te.qtensor<256x128xe4m3, #te.fp8_block<>, both, hopper, block_2d>,
    %e: !te.qtensor<?x32xe2m1, #te.nvfp4<>, rowwise, blackwell, row_scaled, swizzled>,
    %f: !te.qtensor<64xe4m3, #te.fp8_delayed<format = e4m3>, rowwise, hopper>,
    %g: !te.qtensor<64x64xe2m1, #te.nvfp4<>, both, blackwell, rht, swizzled>,
    %h: !te.qtensor<64x64xe2m1, #te.nvfp4<>, both, blackwell, block_2d, swizzled>) {
  return
}

// -----

// The quantize forms: a producer's amax (te-fuse-quantize-amax), NVFP4's
// stochastic rounding with its seed; producers with an amax result.
// CHECK-LABEL: func.func @quantize_forms
// CHECK:       %[[Y:.*]], %[[A:.*]] = te.act gelu %arg0 : (tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<1xf32>)
// CHECK-NEXT:  te.quantize %[[Y]] amax(%[[A]]) : tensor<64x256xbf16> amax tensor<1xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_current<>, both, hopper>{{$}}
// CHECK-NEXT:  te.dbias_dact gelu %arg0, %arg0 : (tensor<64x256xbf16>, tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<256xbf16>, tensor<1xf32>)
// CHECK-NEXT:  te.quantize %arg0 {seed = 3 : i64, stochastic_rounding} : tensor<64x256xbf16> -> !te.qtensor<64x256xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>{{$}}
func.func @quantize_forms(%x: tensor<64x256xbf16>) {
  %y, %a = te.act gelu %x : (tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<1xf32>)
  %q = te.quantize %y amax(%a) : tensor<64x256xbf16> amax tensor<1xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_current<>, both, hopper>
  %d, %db, %da = te.dbias_dact gelu %x, %x : (tensor<64x256xbf16>, tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<256xbf16>, tensor<1xf32>)
  %n = te.quantize %x {stochastic_rounding, seed = 3 : i64} : tensor<64x256xbf16> -> !te.qtensor<64x256xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>
  return
}

// -----

// The fused activation + delayed-scaling casts (te-fuse-act-quantize): a
// gated activation, dact, and dact with its bias gradient (the last result).
// CHECK-LABEL: func.func @act_quantize_forms
// CHECK:       te.act_quantize swiglu %arg0 scale(%arg2[3]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>{{$}}
// CHECK-NEXT:  te.act_quantize clamped_swiglu<limit = 5.000000e+00> %arg0 scale(%arg2[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>{{$}}
// CHECK-NEXT:  te.dact_quantize swiglu %arg1, %arg0 scale(%arg2[4]) : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>{{$}}
// CHECK-NEXT:  te.dact_quantize gelu %arg0, %arg0 scale(%arg2[5]) : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, columnwise, hopper>, tensor<1xf32>, tensor<256xbf16>{{$}}
func.func @act_quantize_forms(%x: tensor<64x256xbf16>, %dy: tensor<64x128xbf16>, %s: tensor<6xf32>) {
  %q, %a = te.act_quantize swiglu %x scale(%s[3]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %q1, %a1 = te.act_quantize clamped_swiglu<limit = 5.0> %x scale(%s[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>
  %d, %da = te.dact_quantize swiglu %dy, %x scale(%s[4]) : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %g, %ga, %db = te.dact_quantize gelu %x, %x scale(%s[5]) : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, columnwise, hopper>, tensor<1xf32>, tensor<256xbf16>
  return
}

// -----

// The fused normalization + per-tensor FP8 casts (te-fuse-norm-quantize):
// LayerNorm under delayed scaling (mu last), RMSNorm under current scaling.
// CHECK-LABEL: func.func @norm_quantize_forms
// CHECK:       te.norm_quantize %arg0 norm layer_norm(%arg1, %arg2) scale(%arg3[5]) {eps = 1.000000e-05 : f64} : (tensor<?x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<6xf32>) -> (!te.qtensor<?x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<?xf32>, tensor<1xf32>, tensor<?xf32>){{$}}
// CHECK-NEXT:  te.norm_quantize %arg0 norm rms_norm(%arg1) {eps = 1.000000e-05 : f64, zero_centered_gamma} : (tensor<?x128xbf16>, tensor<128xbf16>) -> (!te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, columnwise, hopper>, tensor<?xf32>, tensor<1xf32>){{$}}
func.func @norm_quantize_forms(%x: tensor<?x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) {
  %q, %rs, %a, %mu = te.norm_quantize %x norm layer_norm(%g, %b) scale(%s[5]) {eps = 1.0e-05 : f64} : (tensor<?x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<6xf32>) -> (!te.qtensor<?x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<?xf32>, tensor<1xf32>, tensor<?xf32>)
  %q1, %rs1, %a1 = te.norm_quantize %x norm rms_norm(%g) {eps = 1.0e-05 : f64, zero_centered_gamma} : (tensor<?x128xbf16>, tensor<128xbf16>) -> (!te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, columnwise, hopper>, tensor<?xf32>, tensor<1xf32>)
  return
}
