// RUN: te-opt %s | te-opt | FileCheck %s
// The tensor-parallel layout and the collectives round-trip (the gathered
// rows a sequence-parallel LayerNormLinear infers: tp-invalid.mlir).

// CHECK-LABEL: func.func @layout
// CHECK: te.layernorm_linear %{{.*}} tp(<size = 2, sequence_parallel = true>) : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
// CHECK: te.layernorm_mlp %{{.*}} tp(<size = 4, sequence_parallel = true, reduce_param_grads = true>) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<64x16xbf16>) -> tensor<8x64xbf16>
// CHECK: te.layernorm_linear %{{.*}} tp(<size = 2>) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<16x64xbf16>) -> tensor<8x16xbf16>
func.func @layout(%x: tensor<?x64xbf16>, %x8: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w: tensor<16x64xbf16>, %w1: tensor<32x64xbf16>, %w2: tensor<64x16xbf16>) -> (tensor<?x16xbf16>, tensor<8x64xbf16>, tensor<8x16xbf16>) {
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w) tp(#te.tp<size = 2, sequence_parallel = true>) : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
  %m = te.layernorm_mlp %x8 norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) tp(#te.tp<size = 4, sequence_parallel = true, reduce_param_grads = true>) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<64x16xbf16>) -> tensor<8x64xbf16>
  %z = te.layernorm_linear %x8 norm rms_norm(%g) weight(%w) tp(#te.tp<size = 2>) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<16x64xbf16>) -> tensor<8x16xbf16>
  return %y, %m, %z : tensor<?x16xbf16>, tensor<8x64xbf16>, tensor<8x16xbf16>
}

// CHECK-LABEL: func.func @collectives
// CHECK: te.all_gather %{{.*}} group(2) : tensor<?x64xbf16> -> tensor<?x64xbf16>
// CHECK: te.all_gather %{{.*}} group(4) : tensor<8x64xf32> -> tensor<32x64xf32>
// CHECK: te.reduce_scatter %{{.*}} group(4) : tensor<32x64xf32> -> tensor<8x64xf32>
// CHECK: te.all_reduce %{{.*}} group(2) : tensor<64xbf16> -> tensor<64xbf16>
// CHECK: te.bias_add %{{.*}}, %{{.*}} : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
// CHECK: te.all_reduce %{{.*}} group(2) max : tensor<6xf32> -> tensor<6xf32>
func.func @collectives(%x: tensor<?x64xbf16>, %y: tensor<8x64xf32>, %g: tensor<64xbf16>, %b: tensor<64xf32>, %a: tensor<6xf32>) {
  %0 = te.all_gather %x group(2) : tensor<?x64xbf16> -> tensor<?x64xbf16>
  %1 = te.all_gather %y group(4) : tensor<8x64xf32> -> tensor<32x64xf32>
  %2 = te.reduce_scatter %1 group(4) : tensor<32x64xf32> -> tensor<8x64xf32>
  %3 = te.all_reduce %g group(2) : tensor<64xbf16> -> tensor<64xbf16>
  %4 = te.bias_add %2, %b : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %5 = te.all_reduce %a group(2) max : tensor<6xf32> -> tensor<6xf32>
  return
}
