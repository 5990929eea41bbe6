// The buffer of a Float8 block-scaled value (fp8-block, reference §4.4),
// as te_module_info() describes it and te-run writes it: columnwise data
// [K, M] and its fp32 scales, then rowwise data [M, K] and its scales, each
// at a 256-byte aligned offset (TE's scale shapes: 1x128 blocks
// [ceil(K/128), roundup(M, 4)], 128x128 blocks [ceil(M/128),
// roundup(ceil(K/128), 4)]). te.drop_usage to columnwise is the prefix, to
// rowwise a copy of the suffix. check_block_layout.py decodes the E4M3
// bytes with numpy and checks the values against x.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: te-compile %s -o %t/q.so
// The header spells the layout out (offsets and the buffer's size):
// RUN: FileCheck %s --check-prefix=HDR < %t/q.h
// HDR:      [0] qtensor [200, 300]
// HDR-NEXT: !te.qtensor<200x300xe4m3, #te.fp8_block<>, both, hopper, block_2d>
// HDR-NEXT: columnwise_data: uint8 [300, 200] at byte 0
// HDR-NEXT: columnwise_scale_inv: float32 [3, 4] at byte 60160
// HDR-NEXT: rowwise_data: uint8 [200, 300] at byte 60416
// HDR-NEXT: rowwise_scale_inv: float32 [2, 4] at byte 120576
// HDR-NEXT: (120832 bytes)
// HDR:      [2] qtensor [200, 300]
// HDR-NEXT: columnwise, hopper, block_2d>
// HDR-NEXT: columnwise_data: uint8 [300, 200] at byte 0
// HDR-NEXT: columnwise_scale_inv: float32 [3, 4] at byte 60160
// HDR-NEXT: (60416 bytes)
// RUN: %python -c "import numpy as n; r = n.random.RandomState(3); x = (r.randn(200, 300) * n.exp(r.randn(200, 1))).astype('f4'); x[5, 7] = 0; x[130:, 256:] = 0; n.save('%t/x.npy', x)"
// RUN: te-run %t/q.so --input arg0=%t/x.npy --outputs %t/o
// RUN: %python %S/check_block_layout.py %t/x.npy %t/o | FileCheck %s
// Sizes: x [200, 300]: 2-D both = 60000 -> 60160, scales [3, 4] -> 256,
// data 60160, scales [2, 4] -> 256: 120832; each view 60416; 1-D both:
// scales [3, 200] -> 2560 and [2, 300] -> 2560.
// CHECK:      sizes [120832, 60416, 60416, 125440]
// CHECK-NEXT: views True True
// CHECK-NEXT: 2d transposed True True
// CHECK-NEXT: 2d scales True True
// CHECK-NEXT: 1d rowwise True True
// CHECK-NEXT: 1d columnwise True True
// CHECK-NEXT: 1d independent True
// CHECK-NEXT: padding zero True
func.func @q(%x: tensor<200x300xf32>) -> (!te.qtensor<200x300xe4m3, #te.fp8_block<>, both, hopper, block_2d>, !te.qtensor<200x300xe4m3, #te.fp8_block<>, rowwise, hopper, block_2d>, !te.qtensor<200x300xe4m3, #te.fp8_block<>, columnwise, hopper, block_2d>, !te.qtensor<200x300xe4m3, #te.fp8_block<>, both, hopper>) {
  %q = te.quantize %x {weight} : tensor<200x300xf32> -> !te.qtensor<200x300xe4m3, #te.fp8_block<>, both, hopper, block_2d>
  %r = te.drop_usage %q : !te.qtensor<200x300xe4m3, #te.fp8_block<>, both, hopper, block_2d> -> !te.qtensor<200x300xe4m3, #te.fp8_block<>, rowwise, hopper, block_2d>
  %c = te.drop_usage %q : !te.qtensor<200x300xe4m3, #te.fp8_block<>, both, hopper, block_2d> -> !te.qtensor<200x300xe4m3, #te.fp8_block<>, columnwise, hopper, block_2d>
  %a = te.quantize %x : tensor<200x300xf32> -> !te.qtensor<200x300xe4m3, #te.fp8_block<>, both, hopper>
  return %q, %r, %c, %a : !te.qtensor<200x300xe4m3, #te.fp8_block<>, both, hopper, block_2d>, !te.qtensor<200x300xe4m3, #te.fp8_block<>, rowwise, hopper, block_2d>, !te.qtensor<200x300xe4m3, #te.fp8_block<>, columnwise, hopper, block_2d>, !te.qtensor<200x300xe4m3, #te.fp8_block<>, both, hopper>
}
