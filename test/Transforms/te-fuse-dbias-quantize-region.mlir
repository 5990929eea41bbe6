// RUN: te-opt %s --te-fuse-dbias-quantize --verify-diagnostics | FileCheck %s

// The quantization sits in a loop body: fusing would move the bias
// gradient into the loop, so nothing changes and a remark says why.
// CHECK-LABEL: func.func @other_block(
// CHECK:       te.bias_grad %arg0
// CHECK:       scf.for
// CHECK:       te.quantize
// CHECK-NOT:   te.dbias_quantize
func.func @other_block(%dy: tensor<64x256xbf16>, %s: tensor<6xf32>, %n: index) -> (tensor<256xbf16>, tensor<1xf32>) {
  // expected-remark @+1 {{te-fuse-dbias-quantize: bias gradient not fused: the quantization is in another block}}
  %db = te.bias_grad %dy : (tensor<64x256xbf16>) -> tensor<256xbf16>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = arith.constant dense<0.0> : tensor<1xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<1xf32>) {
    %q, %a = te.quantize %dy scale(%s[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
    scf.yield %a : tensor<1xf32>
  }
  return %db, %r : tensor<256xbf16>, tensor<1xf32>
}
