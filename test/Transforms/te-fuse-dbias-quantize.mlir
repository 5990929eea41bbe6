// RUN: te-opt %s --split-input-file --te-fuse-dbias-quantize --verify-diagnostics | FileCheck %s
//
// te-fuse-dbias-quantize: a te.bias_grad %x and a per-tensor FP8
// te.quantize %x (delayed or current scaling) of the same value become one
// te.dbias_quantize (TE's cast_transpose_dbias); users of the bias gradient,
// the quantized tensor and the amax get the fused op's. Every bias gradient
// left alone gets a remark saying why.

// Delayed scaling: the bias gradient, then the cast.
// CHECK-LABEL: func.func @delayed(
// CHECK-NOT:   te.bias_grad
// CHECK:       %[[Q:.*]], %[[A:.*]], %[[DB:.*]] = te.dbias_quantize %arg0 scale(%arg1[2]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>{{$}}
// CHECK-NOT:   te.quantize
// CHECK-NOT:   te.bias_grad
// CHECK:       return %[[Q]], %[[A]], %[[DB]]
func.func @delayed(%dy: tensor<64x256xbf16>, %s: tensor<6xf32>) -> (!te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>) {
  %db = te.bias_grad %dy : (tensor<64x256xbf16>) -> tensor<256xbf16>
  %q, %a = te.quantize %dy scale(%s[2]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return %q, %a, %db : !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>
}

// -----

// Current scaling (power-of-2 scales), a dynamic leading dim, the cast
// first: no scale operand (null), pow2_scale 1.
// CHECK-LABEL: func.func @current(
// CHECK:       %[[Q:.*]], %[[A:.*]], %[[DB:.*]] = te.dbias_quantize %arg0 : tensor<?x128xbf16> -> !te.qtensor<?x128xe5m2, #te.fp8_current<power_2_scales = true>, both, hopper>, tensor<1xf32>, tensor<128xbf16>{{$}}
// CHECK-NOT:   te.quantize
// CHECK-NOT:   te.bias_grad
// CHECK:       return %[[DB]], %[[Q]]
func.func @current(%dy: tensor<?x128xbf16>) -> (tensor<128xbf16>, !te.qtensor<?x128xe5m2, #te.fp8_current<power_2_scales = true>, both, hopper>) {
  %q, %a = te.quantize %dy : tensor<?x128xbf16> -> !te.qtensor<?x128xe5m2, #te.fp8_current<power_2_scales = true>, both, hopper>, tensor<1xf32>
  %db = te.bias_grad %dy : (tensor<?x128xbf16>) -> tensor<128xbf16>
  return %db, %q : tensor<128xbf16>, !te.qtensor<?x128xe5m2, #te.fp8_current<power_2_scales = true>, both, hopper>
}

// -----

// The scales computed between the bias gradient and the cast: the fused op
// goes at the cast, the bias gradient's users being after it.
// CHECK-LABEL: func.func @late_scales(
// CHECK:       arith.addf
// CHECK-NEXT:  te.dbias_quantize %arg0 scale(
func.func @late_scales(%dy: tensor<64x256xbf16>, %s: tensor<6xf32>, %am: tensor<6xf32>) -> (!te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<256xbf16>) {
  %db = te.bias_grad %dy : (tensor<64x256xbf16>) -> tensor<256xbf16>
  %s2 = arith.addf %s, %am : tensor<6xf32>
  %q, %a = te.quantize %dy scale(%s2[1]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return %q, %db : !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<256xbf16>
}

// -----

// ... unless the bias gradient is read before the scales exist.
// CHECK-LABEL: func.func @read_early(
// CHECK:       te.bias_grad
// CHECK:       te.quantize
func.func @read_early(%dy: tensor<64x256xbf16>, %s: tensor<6xf32>, %am: tensor<6xf32>) -> (!te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<256xbf16>) {
  // expected-remark @+1 {{te-fuse-dbias-quantize: bias gradient not fused: the bias gradient is read before the quantization's scales are computed}}
  %db = te.bias_grad %dy : (tensor<64x256xbf16>) -> tensor<256xbf16>
  %db2 = arith.addf %db, %db : tensor<256xbf16>
  %s2 = arith.addf %s, %am : tensor<6xf32>
  %q, %a = te.quantize %dy scale(%s2[1]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return %q, %db2 : !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<256xbf16>
}

// -----

// Block-scaled recipes keep the separate reduction (as TE sums the
// gradient outside its block-scaled casts).
// CHECK-LABEL: func.func @mxfp8(
// CHECK:       te.bias_grad
// CHECK:       te.quantize
func.func @mxfp8(%dy: tensor<64x256xbf16>) -> (!te.qtensor<64x256xe5m2, #te.mxfp8<>, both, blackwell, swizzled>, tensor<256xbf16>) {
  // expected-remark @+1 {{te-fuse-dbias-quantize: bias gradient not fused: the quantization is mxfp8, which scales blocks (only the per-tensor FP8 cast sums the columns as it goes)}}
  %db = te.bias_grad %dy : (tensor<64x256xbf16>) -> tensor<256xbf16>
  %q = te.quantize %dy : tensor<64x256xbf16> -> !te.qtensor<64x256xe5m2, #te.mxfp8<>, both, blackwell, swizzled>
  return %q, %db : !te.qtensor<64x256xe5m2, #te.mxfp8<>, both, blackwell, swizzled>, tensor<256xbf16>
}

// -----

// CHECK-LABEL: func.func @block(
// CHECK:       te.bias_grad
func.func @block(%dy: tensor<256x256xbf16>) -> (!te.qtensor<256x256xe4m3, #te.fp8_block<>, both, hopper>, tensor<256xbf16>) {
  // expected-remark @+1 {{te-fuse-dbias-quantize: bias gradient not fused: the quantization is fp8-block, which scales blocks}}
  %db = te.bias_grad %dy : (tensor<256x256xbf16>) -> tensor<256xbf16>
  %q = te.quantize %dy : tensor<256x256xbf16> -> !te.qtensor<256x256xe4m3, #te.fp8_block<>, both, hopper>
  return %q, %db : !te.qtensor<256x256xe4m3, #te.fp8_block<>, both, hopper>, tensor<256xbf16>
}

// -----

// CHECK-LABEL: func.func @nvfp4(
// CHECK:       te.bias_grad
func.func @nvfp4(%dy: tensor<64x256xbf16>) -> (!te.qtensor<64x256xe2m1, #te.nvfp4<>, both, blackwell, swizzled>, tensor<256xbf16>) {
  // expected-remark @+1 {{te-fuse-dbias-quantize: bias gradient not fused: the quantization is nvfp4, which scales blocks}}
  %db = te.bias_grad %dy : (tensor<64x256xbf16>) -> tensor<256xbf16>
  %q = te.quantize %dy : tensor<64x256xbf16> -> !te.qtensor<64x256xe2m1, #te.nvfp4<>, both, blackwell, swizzled>
  return %q, %db : !te.qtensor<64x256xe2m1, #te.nvfp4<>, both, blackwell, swizzled>, tensor<256xbf16>
}

// -----

// The cast is of a different value (here the bias gradient's input plus a
// residual): nothing to share.
// CHECK-LABEL: func.func @different_value(
// CHECK:       te.bias_grad
// CHECK:       te.quantize
func.func @different_value(%dy: tensor<64x256xbf16>, %r: tensor<64x256xbf16>, %s: tensor<6xf32>) -> (!te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>) {
  // expected-remark @+1 {{te-fuse-dbias-quantize: bias gradient not fused: no te.quantize reads the same value}}
  %db = te.bias_grad %dy : (tensor<64x256xbf16>) -> tensor<256xbf16>
  %g = arith.addf %dy, %r : tensor<64x256xbf16>
  %q, %a = te.quantize %g scale(%s[2]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return %q, %a, %db : !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>
}

// -----

// A current-scaling cast that takes its producer's amax
// (te-fuse-quantize-amax) keeps it: that skips a pass over the tensor too.
// CHECK-LABEL: func.func @amax_in(
// CHECK:       te.bias_grad
// CHECK:       te.quantize %{{.*}} amax(
func.func @amax_in(%dy: tensor<64x128xbf16>, %x: tensor<64x256xbf16>) -> (!te.qtensor<64x256xe5m2, #te.fp8_current<>, both, hopper>, tensor<256xbf16>) {
  %dx, %m = te.dact swiglu %dy, %x : (tensor<64x128xbf16>, tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<1xf32>)
  // expected-remark @+1 {{te-fuse-dbias-quantize: bias gradient not fused: the quantization takes its amax from te.dact (te-fuse-quantize-amax)}}
  %db = te.bias_grad %dx : (tensor<64x256xbf16>) -> tensor<256xbf16>
  %q = te.quantize %dx amax(%m) : tensor<64x256xbf16> amax tensor<1xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_current<>, both, hopper>
  return %q, %db : !te.qtensor<64x256xe5m2, #te.fp8_current<>, both, hopper>, tensor<256xbf16>
}

// -----

// No quantization at all (a bf16 bias gradient no wgrad GEMM took).
// CHECK-LABEL: func.func @alone(
// CHECK:       te.bias_grad
func.func @alone(%dy: tensor<64x256xbf16>) -> tensor<256xbf16> {
  // expected-remark @+1 {{te-fuse-dbias-quantize: bias gradient not fused: no te.quantize reads the same value}}
  %db = te.bias_grad %dy : (tensor<64x256xbf16>) -> tensor<256xbf16>
  return %db : tensor<256xbf16>
}
