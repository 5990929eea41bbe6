// RUN: te-opt %s --te-fuse-act-quantize --verify-diagnostics | FileCheck %s

// The quantization sits in a loop body: fusing would move the activation
// into the loop, so nothing changes and a remark says why.
// CHECK-LABEL: func.func @other_block(
// CHECK:       te.act gelu %arg0
// CHECK:       scf.for
// CHECK:       te.quantize
// CHECK-NOT:   te.act_quantize
func.func @other_block(%x: tensor<64x256xbf16>, %s: tensor<6xf32>, %n: index) -> tensor<1xf32> {
  %y = te.act gelu %x : (tensor<64x256xbf16>) -> tensor<64x256xbf16>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = arith.constant dense<0.0> : tensor<1xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<1xf32>) {
    // expected-remark @+1 {{te-fuse-act-quantize: not fused with te.act: the quantization is in another block}}
    %q, %a = te.quantize %y scale(%s[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
    scf.yield %a : tensor<1xf32>
  }
  return %r : tensor<1xf32>
}
