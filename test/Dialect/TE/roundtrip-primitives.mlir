// RUN: te-opt %s | te-opt | FileCheck %s
//
// Every primitive op (TEPrimitiveOps.td) parses, prints and parses again to
// the same form: te.norm_fwd / te.norm_bwd (layer_norm with beta and mu,
// rms_norm with zero_centered_gamma), te.quantize (per-tensor current and
// delayed scaling, a given amax, fp8-block, MXFP8, NVFP4 with 2-D blocks
// and with stochastic rounding), te.drop_usage, te.add_columnwise, te.gemm
// (tn with bias, nn, nt with its bias gradient, FP8 with fast accumulation),
// te.bias_grad,
// te.gemm_act / te.gemm_dact, te.act / te.dact / te.dbias_dact (with and
// without amax), te.act_quantize / te.dact_quantize (with a bias gradient)
// and te.norm_quantize (delayed with mu, current with power-of-2 scales).

// CHECK-LABEL: func.func @norms(
// CHECK-SAME:  %[[ARG0:[^ ,:()#]+]]: tensor<?x64xbf16>, %[[ARG1:[^ ,:()#]+]]: tensor<64xbf16>, %[[ARG2:[^ ,:()#]+]]: tensor<64xbf16>, %[[ARG3:[^ ,:()#]+]]: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>) {
// CHECK-NEXT:  %[[OUTPUT:[^ ,:()#]+]], %[[RSIGMA:[^ ,:()#]+]], %[[MU:[^ ,:()#]+]] = te.norm_fwd %[[ARG0]] norm layer_norm(%[[ARG1]], %[[ARG2]]) {eps = 1.000000e-05 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?xf32>, tensor<?xf32>)
// CHECK-NEXT:  %[[GRAD_INPUT:[^ ,:()#]+]], %[[GRAD_GAMMA:[^ ,:()#]+]], %[[GRAD_BETA:[^ ,:()#]+]] = te.norm_bwd %[[ARG3]] input(%[[ARG0]]) norm layer_norm(%[[ARG1]]) rsigma(%[[RSIGMA]]) mu(%[[MU]]) {with_beta} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>, tensor<?xf32>, tensor<?xf32>) -> (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
// CHECK-NEXT:  %[[OUTPUT_0:[^ ,:()#]+]], %[[RSIGMA_1:[^ ,:()#]+]] = te.norm_fwd %[[ARG0]] norm rms_norm(%[[ARG1]]) {eps = 1.000000e-05 : f64, zero_centered_gamma} : (tensor<?x64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?xf32>)
// CHECK-NEXT:  %[[GRAD_INPUT_2:[^ ,:()#]+]], %[[GRAD_GAMMA_3:[^ ,:()#]+]] = te.norm_bwd %[[ARG3]] input(%[[ARG0]]) norm rms_norm(%[[ARG1]]) rsigma(%[[RSIGMA_1]]) {zero_centered_gamma} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>, tensor<?xf32>) -> (tensor<?x64xbf16>, tensor<64xbf16>)
// CHECK-NEXT:  return %[[OUTPUT]], %[[GRAD_INPUT]], %[[GRAD_GAMMA]], %[[GRAD_BETA]], %[[OUTPUT_0]], %[[GRAD_INPUT_2]], %[[GRAD_GAMMA_3]] : tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>
func.func @norms(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %dy: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>) {
  %n, %rs, %mu = te.norm_fwd %x norm layer_norm(%g, %b) {eps = 1.0e-05 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?xf32>, tensor<?xf32>)
  %dx, %dg, %db = te.norm_bwd %dy input(%x) norm layer_norm(%g) rsigma(%rs) mu(%mu) {with_beta} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>, tensor<?xf32>, tensor<?xf32>) -> (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
  %n2, %rs2 = te.norm_fwd %x norm rms_norm(%g) {eps = 1.0e-05 : f64, zero_centered_gamma} : (tensor<?x64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?xf32>)
  %dx2, %dg2 = te.norm_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs2) {zero_centered_gamma} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>, tensor<?xf32>) -> (tensor<?x64xbf16>, tensor<64xbf16>)
  return %n, %dx, %dg, %db, %n2, %dx2, %dg2 : tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>
}

// CHECK-LABEL: func.func @quantize(
// CHECK-SAME:  %[[ARG0:[^ ,:()#]+]]: tensor<64x128xbf16>, %[[ARG1:[^ ,:()#]+]]: tensor<3xf32>, %[[ARG2:[^ ,:()#]+]]: tensor<1xf32>, %[[ARG3:[^ ,:()#]+]]: tensor<128x256xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>, !te.qtensor<64x128xe4m3, #te.fp8_current<>, columnwise, hopper>, !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>, !te.qtensor<64x128xe5m2, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<64x128xe4m3, #te.fp8_block<>, both, hopper>, !te.qtensor<64x128xe4m3, #te.mxfp8, both, blackwell, swizzled>, !te.qtensor<128x256xe2m1, #te.nvfp4<>, both, blackwell, block_2d, swizzled>, !te.qtensor<64x128xe2m1, #te.nvfp4<>, rowwise, blackwell, swizzled>) {
// CHECK-NEXT:  %[[RESULT:[^ ,:()#]+]], %[[AMAX:[^ ,:()#]+]] = te.quantize %[[ARG0]] : tensor<64x128xbf16> -> !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
// CHECK-NEXT:  %[[V0:[^ ,:()#]+]] = te.drop_usage %[[RESULT]] : !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper> -> !te.qtensor<64x128xe4m3, #te.fp8_current<>, columnwise, hopper>
// CHECK-NEXT:  %[[RESULT_0:[^ ,:()#]+]], %[[AMAX_1:[^ ,:()#]+]] = te.quantize %[[ARG0]] scale(%[[ARG1]][1]) : tensor<64x128xbf16>, tensor<3xf32> -> !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>
// CHECK-NEXT:  %[[RESULT_2:[^ ,:()#]+]] = te.quantize %[[ARG0]] amax(%[[ARG2]]) : tensor<64x128xbf16> amax tensor<1xf32> -> !te.qtensor<64x128xe5m2, #te.fp8_current<>, rowwise, hopper>
// CHECK-NEXT:  %[[RESULT_3:[^ ,:()#]+]] = te.quantize %[[ARG0]] : tensor<64x128xbf16> -> !te.qtensor<64x128xe4m3, #te.fp8_block<>, both, hopper>
// CHECK-NEXT:  %[[RESULT_4:[^ ,:()#]+]] = te.quantize %[[ARG0]] : tensor<64x128xbf16> -> !te.qtensor<64x128xe4m3, #te.mxfp8, both, blackwell, swizzled>
// CHECK-NEXT:  %[[RESULT_5:[^ ,:()#]+]] = te.quantize %[[ARG3]] {weight} : tensor<128x256xbf16> -> !te.qtensor<128x256xe2m1, #te.nvfp4<>, both, blackwell, block_2d, swizzled>
// CHECK-NEXT:  %[[RESULT_6:[^ ,:()#]+]] = te.quantize %[[ARG0]] {seed = 3 : i64, stochastic_rounding} : tensor<64x128xbf16> -> !te.qtensor<64x128xe2m1, #te.nvfp4<>, rowwise, blackwell, swizzled>
// CHECK-NEXT:  return %[[RESULT]], %[[AMAX]], %[[V0]], %[[RESULT_0]], %[[AMAX_1]], %[[RESULT_2]], %[[RESULT_3]], %[[RESULT_4]], %[[RESULT_5]], %[[RESULT_6]] : !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>, !te.qtensor<64x128xe4m3, #te.fp8_current<>, columnwise, hopper>, !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>, !te.qtensor<64x128xe5m2, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<64x128xe4m3, #te.fp8_block<>, both, hopper>, !te.qtensor<64x128xe4m3, #te.mxfp8, both, blackwell, swizzled>, !te.qtensor<128x256xe2m1, #te.nvfp4<>, both, blackwell, block_2d, swizzled>, !te.qtensor<64x128xe2m1, #te.nvfp4<>, rowwise, blackwell, swizzled>
func.func @quantize(%x: tensor<64x128xbf16>, %s: tensor<3xf32>, %a: tensor<1xf32>, %w: tensor<128x256xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>, !te.qtensor<64x128xe4m3, #te.fp8_current<>, columnwise, hopper>, !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>, !te.qtensor<64x128xe5m2, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<64x128xe4m3, #te.fp8_block<>, both, hopper>, !te.qtensor<64x128xe4m3, #te.mxfp8, both, blackwell, swizzled>, !te.qtensor<128x256xe2m1, #te.nvfp4<>, both, blackwell, block_2d, swizzled>, !te.qtensor<64x128xe2m1, #te.nvfp4<>, rowwise, blackwell, swizzled>) {
  %q, %qa = te.quantize %x : tensor<64x128xbf16> -> !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  %col = te.drop_usage %q : !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper> -> !te.qtensor<64x128xe4m3, #te.fp8_current<>, columnwise, hopper>
  %d, %da = te.quantize %x scale(%s[1]) : tensor<64x128xbf16>, tensor<3xf32> -> !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>
  %c = te.quantize %x amax(%a) : tensor<64x128xbf16> amax tensor<1xf32> -> !te.qtensor<64x128xe5m2, #te.fp8_current<>, rowwise, hopper>
  %blk = te.quantize %x : tensor<64x128xbf16> -> !te.qtensor<64x128xe4m3, #te.fp8_block<>, both, hopper>
  %mx = te.quantize %x : tensor<64x128xbf16> -> !te.qtensor<64x128xe4m3, #te.mxfp8, both, blackwell, swizzled>
  %nw = te.quantize %w {weight} : tensor<128x256xbf16> -> !te.qtensor<128x256xe2m1, #te.nvfp4<>, both, blackwell, block_2d, swizzled>
  %nx = te.quantize %x {seed = 3 : i64, stochastic_rounding} : tensor<64x128xbf16> -> !te.qtensor<64x128xe2m1, #te.nvfp4<>, rowwise, blackwell, swizzled>
  return %q, %qa, %col, %d, %da, %c, %blk, %mx, %nw, %nx : !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>, !te.qtensor<64x128xe4m3, #te.fp8_current<>, columnwise, hopper>, !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>, !te.qtensor<64x128xe5m2, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<64x128xe4m3, #te.fp8_block<>, both, hopper>, !te.qtensor<64x128xe4m3, #te.mxfp8, both, blackwell, swizzled>, !te.qtensor<128x256xe2m1, #te.nvfp4<>, both, blackwell, block_2d, swizzled>, !te.qtensor<64x128xe2m1, #te.nvfp4<>, rowwise, blackwell, swizzled>
}

// CHECK-LABEL: func.func @gemms(
// CHECK-SAME:  %[[ARG0:[^ ,:()#]+]]: tensor<16x64xbf16>, %[[ARG1:[^ ,:()#]+]]: tensor<32x64xbf16>, %[[ARG2:[^ ,:()#]+]]: tensor<32xbf16>, %[[ARG3:[^ ,:()#]+]]: tensor<16x32xbf16>, %[[ARG4:[^ ,:()#]+]]: !te.qtensor<16x64xe4m3, #te.fp8_current<>, rowwise, hopper>, %[[ARG5:[^ ,:()#]+]]: !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>) -> (tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<16x32xbf16>, tensor<32xbf16>) {
// CHECK-NEXT:  %[[RESULT:[^ ,:()#]+]] = te.gemm tn %[[ARG0]], %[[ARG1]] bias(%[[ARG2]]) : (tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
// CHECK-NEXT:  %[[RESULT_0:[^ ,:()#]+]] = te.gemm nn %[[ARG3]], %[[ARG1]] : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
// CHECK-NEXT:  %[[RESULT_1:[^ ,:()#]+]], %[[BIAS_GRAD:[^ ,:()#]+]] = te.gemm nt %[[ARG3]], %[[ARG0]] : (tensor<16x32xbf16>, tensor<16x64xbf16>) -> (tensor<32x64xbf16>, tensor<32xbf16>)
// CHECK-NEXT:  %[[RESULT_2:[^ ,:()#]+]] = te.gemm tn %[[ARG4]], %[[ARG5]] bias(%[[ARG2]]) {fast_accumulate} : (!te.qtensor<16x64xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<32xbf16>) -> tensor<16x32xbf16>
// CHECK-NEXT:  %[[V0:[^ ,:()#]+]] = te.bias_grad %[[ARG3]] : (tensor<16x32xbf16>) -> tensor<32xbf16>
// CHECK-NEXT:  return %[[RESULT]], %[[RESULT_0]], %[[RESULT_1]], %[[BIAS_GRAD]], %[[RESULT_2]], %[[V0]] : tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<16x32xbf16>, tensor<32xbf16>
func.func @gemms(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16>, %bias: tensor<32xbf16>, %dy: tensor<16x32xbf16>, %qx: !te.qtensor<16x64xe4m3, #te.fp8_current<>, rowwise, hopper>, %qw: !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>) -> (tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<16x32xbf16>, tensor<32xbf16>) {
  %y = te.gemm tn %x, %w bias(%bias) : (tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  %dx = te.gemm nn %dy, %w : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  %dw, %dbias = te.gemm nt %dy, %x : (tensor<16x32xbf16>, tensor<16x64xbf16>) -> (tensor<32x64xbf16>, tensor<32xbf16>)
  %q = te.gemm tn %qx, %qw bias(%bias) {fast_accumulate} : (!te.qtensor<16x64xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<32xbf16>) -> tensor<16x32xbf16>
  %bg = te.bias_grad %dy : (tensor<16x32xbf16>) -> tensor<32xbf16>
  return %y, %dx, %dw, %dbias, %q, %bg : tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<16x32xbf16>, tensor<32xbf16>
}

// CHECK-LABEL: func.func @gemm_epilogues(
// CHECK-SAME:  %[[ARG0:[^ ,:()#]+]]: tensor<?x4x64xbf16>, %[[ARG1:[^ ,:()#]+]]: tensor<128x64xbf16>, %[[ARG2:[^ ,:()#]+]]: tensor<128xbf16>, %[[ARG3:[^ ,:()#]+]]: tensor<?x4x64xbf16>, %[[ARG4:[^ ,:()#]+]]: tensor<64x128xbf16>) -> (tensor<?x4x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4x128xbf16>) {
// CHECK-NEXT:  %[[RESULT:[^ ,:()#]+]], %[[PRE:[^ ,:()#]+]] = te.gemm_act gelu %[[ARG0]], %[[ARG1]] bias(%[[ARG2]]) : (tensor<?x4x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> (tensor<?x4x128xbf16>, tensor<?x4x128xbf16>)
// CHECK-NEXT:  %[[RESULT_0:[^ ,:()#]+]] = te.gemm_act gelu %[[ARG0]], %[[ARG1]] : (tensor<?x4x64xbf16>, tensor<128x64xbf16>) -> tensor<?x4x128xbf16>
// CHECK-NEXT:  %[[V0:[^ ,:()#]+]] = te.gemm_dact gelu %[[ARG3]], %[[ARG4]] pre(%[[PRE]]) : (tensor<?x4x64xbf16>, tensor<64x128xbf16>, tensor<?x4x128xbf16>) -> tensor<?x4x128xbf16>
// CHECK-NEXT:  return %[[RESULT]], %[[RESULT_0]], %[[V0]] : tensor<?x4x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4x128xbf16>
func.func @gemm_epilogues(%x: tensor<?x4x64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %dy: tensor<?x4x64xbf16>, %w2: tensor<64x128xbf16>) -> (tensor<?x4x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4x128xbf16>) {
  %y, %pre = te.gemm_act gelu %x, %w1 bias(%b1) : (tensor<?x4x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> (tensor<?x4x128xbf16>, tensor<?x4x128xbf16>)
  %y2 = te.gemm_act gelu %x, %w1 : (tensor<?x4x64xbf16>, tensor<128x64xbf16>) -> tensor<?x4x128xbf16>
  %dx = te.gemm_dact gelu %dy, %w2 pre(%pre) : (tensor<?x4x64xbf16>, tensor<64x128xbf16>, tensor<?x4x128xbf16>) -> tensor<?x4x128xbf16>
  return %y, %y2, %dx : tensor<?x4x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4x128xbf16>
}

// CHECK-LABEL: func.func @activations(
// CHECK-SAME:  %[[ARG0:[^ ,:()#]+]]: tensor<64x256xbf16>, %[[ARG1:[^ ,:()#]+]]: tensor<64x128xbf16>, %[[ARG2:[^ ,:()#]+]]: tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<1xf32>, tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<256xbf16>, tensor<64x256xbf16>, tensor<256xbf16>, tensor<1xf32>) {
// CHECK-NEXT:  %[[RESULT:[^ ,:()#]+]] = te.act relu %[[ARG0]] : (tensor<64x256xbf16>) -> tensor<64x256xbf16>
// CHECK-NEXT:  %[[RESULT_0:[^ ,:()#]+]], %[[AMAX:[^ ,:()#]+]] = te.act gelu %[[ARG0]] : (tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<1xf32>)
// CHECK-NEXT:  %[[RESULT_1:[^ ,:()#]+]] = te.act swiglu %[[ARG0]] : (tensor<64x256xbf16>) -> tensor<64x128xbf16>
// CHECK-NEXT:  %[[RESULT_2:[^ ,:()#]+]] = te.dact swiglu %[[ARG1]], %[[ARG0]] : (tensor<64x128xbf16>, tensor<64x256xbf16>) -> tensor<64x256xbf16>
// CHECK-NEXT:  %[[RESULT_3:[^ ,:()#]+]] = te.dact srelu %[[ARG2]], %[[ARG0]] : (tensor<64x256xbf16>, tensor<64x256xbf16>) -> tensor<64x256xbf16>
// CHECK-NEXT:  %[[RESULT_4:[^ ,:()#]+]], %[[BIAS_GRAD:[^ ,:()#]+]] = te.dbias_dact gelu %[[ARG2]], %[[ARG0]] : (tensor<64x256xbf16>, tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<256xbf16>)
// CHECK-NEXT:  %[[RESULT_5:[^ ,:()#]+]], %[[BIAS_GRAD_6:[^ ,:()#]+]], %[[AMAX_7:[^ ,:()#]+]] = te.dbias_dact qgelu %[[ARG2]], %[[ARG0]] : (tensor<64x256xbf16>, tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<256xbf16>, tensor<1xf32>)
// CHECK-NEXT:  return %[[RESULT]], %[[RESULT_0]], %[[AMAX]], %[[RESULT_1]], %[[RESULT_2]], %[[RESULT_3]], %[[RESULT_4]], %[[BIAS_GRAD]], %[[RESULT_5]], %[[BIAS_GRAD_6]], %[[AMAX_7]] : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<1xf32>, tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<256xbf16>, tensor<64x256xbf16>, tensor<256xbf16>, tensor<1xf32>
func.func @activations(%x: tensor<64x256xbf16>, %dy: tensor<64x128xbf16>, %h: tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<1xf32>, tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<256xbf16>, tensor<64x256xbf16>, tensor<256xbf16>, tensor<1xf32>) {
  %a = te.act relu %x : (tensor<64x256xbf16>) -> tensor<64x256xbf16>
  %b, %ba = te.act gelu %x : (tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<1xf32>)
  %g = te.act swiglu %x : (tensor<64x256xbf16>) -> tensor<64x128xbf16>
  %d = te.dact swiglu %dy, %x : (tensor<64x128xbf16>, tensor<64x256xbf16>) -> tensor<64x256xbf16>
  %d2 = te.dact srelu %h, %x : (tensor<64x256xbf16>, tensor<64x256xbf16>) -> tensor<64x256xbf16>
  %e, %eb = te.dbias_dact gelu %h, %x : (tensor<64x256xbf16>, tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<256xbf16>)
  %f, %fb, %fa = te.dbias_dact qgelu %h, %x : (tensor<64x256xbf16>, tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<256xbf16>, tensor<1xf32>)
  return %a, %b, %ba, %g, %d, %d2, %e, %eb, %f, %fb, %fa : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<1xf32>, tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<256xbf16>, tensor<64x256xbf16>, tensor<256xbf16>, tensor<1xf32>
}

// CHECK-LABEL: func.func @fused_casts(
// CHECK-SAME:  %[[ARG0:[^ ,:()#]+]]: tensor<64x256xbf16>, %[[ARG1:[^ ,:()#]+]]: tensor<64x128xbf16>, %[[ARG2:[^ ,:()#]+]]: tensor<6xf32>, %[[ARG3:[^ ,:()#]+]]: tensor<?x128xbf16>, %[[ARG4:[^ ,:()#]+]]: tensor<128xbf16>, %[[ARG5:[^ ,:()#]+]]: tensor<128xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, columnwise, hopper>, tensor<1xf32>, tensor<256xbf16>, !te.qtensor<?x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<?xf32>, tensor<1xf32>, tensor<?xf32>, !te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, columnwise, hopper>) {
// CHECK-NEXT:  %[[RESULT:[^ ,:()#]+]], %[[AMAX:[^ ,:()#]+]] = te.act_quantize swiglu %[[ARG0]] scale(%[[ARG2]][3]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
// CHECK-NEXT:  %[[RESULT_0:[^ ,:()#]+]], %[[AMAX_1:[^ ,:()#]+]] = te.dact_quantize swiglu %[[ARG1]], %[[ARG0]] scale(%[[ARG2]][4]) : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
// CHECK-NEXT:  %[[RESULT_2:[^ ,:()#]+]], %[[AMAX_3:[^ ,:()#]+]], %[[BIAS_GRAD:[^ ,:()#]+]] = te.dact_quantize gelu %[[ARG0]], %[[ARG0]] scale(%[[ARG2]][5]) : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, columnwise, hopper>, tensor<1xf32>, tensor<256xbf16>
// CHECK-NEXT:  %[[RESULT_4:[^ ,:()#]+]], %[[RSIGMA:[^ ,:()#]+]], %[[AMAX_5:[^ ,:()#]+]], %[[MU:[^ ,:()#]+]] = te.norm_quantize %[[ARG3]] norm layer_norm(%[[ARG4]], %[[ARG5]]) scale(%[[ARG2]][5]) {eps = 1.000000e-05 : f64} : (tensor<?x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<6xf32>) -> (!te.qtensor<?x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<?xf32>, tensor<1xf32>, tensor<?xf32>)
// CHECK-NEXT:  %[[RESULT_6:[^ ,:()#]+]], %[[RSIGMA_7:[^ ,:()#]+]], %[[AMAX_8:[^ ,:()#]+]] = te.norm_quantize %[[ARG3]] norm rms_norm(%[[ARG4]]) {eps = 1.000000e-05 : f64, zero_centered_gamma} : (tensor<?x128xbf16>, tensor<128xbf16>) -> (!te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, columnwise, hopper>, tensor<?xf32>, tensor<1xf32>)
// CHECK-NEXT:  return %[[RESULT]], %[[AMAX]], %[[RESULT_0]], %[[AMAX_1]], %[[RESULT_2]], %[[AMAX_3]], %[[BIAS_GRAD]], %[[RESULT_4]], %[[RSIGMA]], %[[AMAX_5]], %[[MU]], %[[RESULT_6]] : !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, columnwise, hopper>, tensor<1xf32>, tensor<256xbf16>, !te.qtensor<?x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<?xf32>, tensor<1xf32>, tensor<?xf32>, !te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, columnwise, hopper>
func.func @fused_casts(%x: tensor<64x256xbf16>, %dy: tensor<64x128xbf16>, %s: tensor<6xf32>, %n: tensor<?x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, columnwise, hopper>, tensor<1xf32>, tensor<256xbf16>, !te.qtensor<?x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<?xf32>, tensor<1xf32>, tensor<?xf32>, !te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, columnwise, hopper>) {
  %q, %a = te.act_quantize swiglu %x scale(%s[3]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %d, %da = te.dact_quantize swiglu %dy, %x scale(%s[4]) : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %e, %ea, %eb = te.dact_quantize gelu %x, %x scale(%s[5]) : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, columnwise, hopper>, tensor<1xf32>, tensor<256xbf16>
  %nq, %rs, %na, %mu = te.norm_quantize %n norm layer_norm(%g, %b) scale(%s[5]) {eps = 1.0e-05 : f64} : (tensor<?x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<6xf32>) -> (!te.qtensor<?x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<?xf32>, tensor<1xf32>, tensor<?xf32>)
  %nq2, %rs2, %na2 = te.norm_quantize %n norm rms_norm(%g) {eps = 1.0e-05 : f64, zero_centered_gamma} : (tensor<?x128xbf16>, tensor<128xbf16>) -> (!te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, columnwise, hopper>, tensor<?xf32>, tensor<1xf32>)
  return %q, %a, %d, %da, %e, %ea, %eb, %nq, %rs, %na, %mu, %nq2 : !te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, columnwise, hopper>, tensor<1xf32>, tensor<256xbf16>, !te.qtensor<?x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<?xf32>, tensor<1xf32>, tensor<?xf32>, !te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, columnwise, hopper>
}

// te.dbias_quantize: delayed (scale(...)) and current scaling, a dynamic
// leading dim, the columnwise usage.
// CHECK-LABEL: func.func @dbias_quantize(
// CHECK:       te.dbias_quantize %{{.+}} scale(%{{.+}}[2]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>
// CHECK:       te.dbias_quantize %{{.+}} : tensor<?x128xf32> -> !te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, columnwise, hopper>, tensor<1xf32>, tensor<128xf32>
func.func @dbias_quantize(%dy: tensor<64x256xbf16>, %s: tensor<6xf32>, %g: tensor<?x128xf32>) -> (!te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>, !te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, columnwise, hopper>, tensor<1xf32>, tensor<128xf32>) {
  %q, %a, %db = te.dbias_quantize %dy scale(%s[2]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>
  %q2, %a2, %db2 = te.dbias_quantize %g : tensor<?x128xf32> -> !te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, columnwise, hopper>, tensor<1xf32>, tensor<128xf32>
  return %q, %a, %db, %q2, %a2, %db2 : !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>, !te.qtensor<?x128xe4m3, #te.fp8_current<power_2_scales = true>, columnwise, hopper>, tensor<1xf32>, tensor<128xf32>
}

// CHECK-LABEL: func.func @add_columnwise(
// CHECK-NEXT:  %[[COL:[^ ,:()#]+]] = te.add_columnwise %{{.*}} : !te.qtensor<?x64xe4m3, #te.fp8_delayed<>, rowwise, hopper> -> !te.qtensor<?x64xe4m3, #te.fp8_delayed<>, columnwise, hopper>
// CHECK-NEXT:  return %[[COL]]
func.func @add_columnwise(%q: !te.qtensor<?x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>) -> !te.qtensor<?x64xe4m3, #te.fp8_delayed<>, columnwise, hopper> {
  %c = te.add_columnwise %q : !te.qtensor<?x64xe4m3, #te.fp8_delayed<>, rowwise, hopper> -> !te.qtensor<?x64xe4m3, #te.fp8_delayed<>, columnwise, hopper>
  return %c : !te.qtensor<?x64xe4m3, #te.fp8_delayed<>, columnwise, hopper>
}

// The wgrad GEMM accumulating into an fp32 main_grad.
// CHECK-LABEL: func.func @gemm_accumulate(
// CHECK: te.gemm nt %{{.*}}, %{{.*}} accumulate(%{{.*}}) : (tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<32x64xf32>) -> tensor<32x64xf32>
func.func @gemm_accumulate(%dy: tensor<16x32xbf16>, %x: tensor<16x64xbf16>, %m: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %dw = te.gemm nt %dy, %x accumulate(%m) : (tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<32x64xf32>) -> tensor<32x64xf32>
  return %dw : tensor<32x64xf32>
}
