// RUN: not te-opt %s --te-tensor-parallel="size=1" 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not te-opt %s --te-tensor-parallel="size=2 reduce-param-grads" 2>&1 | FileCheck %s --check-prefix=RED
// SIZE: te-tensor-parallel: size must be in [2, 1024], got 1
// RED: te-tensor-parallel: reduce-param-grads needs sequence-parallel
func.func @f(%x: tensor<8x64xbf16>) -> tensor<8x64xbf16> {
  return %x : tensor<8x64xbf16>
}
