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
