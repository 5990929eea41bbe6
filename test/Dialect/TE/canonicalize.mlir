// RUN: te-opt %s --split-input-file --canonicalize | FileCheck %s

// An unused norm output is dropped, so the lowering may fuse quantization
// into the norm; the rest of the op is kept as is.
// CHECK-LABEL: func.func @drop_unused_norm_output
// CHECK: %[[Y:.+]] = te.layernorm_linear %{{.+}} norm rms_norm(%{{[^)]+}}) weight(%{{[^)]+}}) recipe(#te.fp8_current<>) {eps = 1.000000e-03 : f64, zero_centered_gamma}
// CHECK-SAME: -> tensor<8x32xbf16>
// CHECK-NOT: return_layernorm_output
// CHECK: return %[[Y]]
func.func @drop_unused_norm_output(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w: tensor<32x64xbf16>) -> tensor<8x32xbf16> {
  %y, %ln = te.layernorm_linear %x norm rms_norm(%g) weight(%w) recipe(#te.fp8_current<>) {eps = 1.0e-3 : f64, zero_centered_gamma, return_layernorm_output} : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>) -> (tensor<8x32xbf16>, tensor<8x64xbf16>)
  return %y : tensor<8x32xbf16>
}

// -----

// Also for LayerNormMLP, keeping its discardable attributes.
// CHECK-LABEL: func.func @drop_unused_norm_output_mlp
// CHECK: %[[Y:.+]] = te.layernorm_mlp {{.*}} act swiglu {{.*}} {checkpoint, my.tag = 3 : i32} : {{.*}} -> tensor<8x64xbf16>
// CHECK: return %[[Y]]
func.func @drop_unused_norm_output_mlp(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<512x64xbf16>, %w2: tensor<64x256xbf16>) -> tensor<8x64xbf16> {
  %y, %ln = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) {checkpoint, return_layernorm_output, my.tag = 3 : i32} : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<512x64xbf16>, tensor<64x256xbf16>) -> (tensor<8x64xbf16>, tensor<8x64xbf16>)
  return %y : tensor<8x64xbf16>
}

// -----

// A used norm output stays.
// CHECK-LABEL: func.func @keep_used_norm_output
// CHECK: %{{.+}}, %[[LN:.+]] = te.layernorm_linear {{.*}}return_layernorm_output
// CHECK: return %[[LN]]
func.func @keep_used_norm_output(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) -> tensor<8x64xf32> {
  %y, %ln = te.layernorm_linear %x norm layer_norm(%g) weight(%w) {return_layernorm_output} : (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> (tensor<8x32xf32>, tensor<8x64xf32>)
  return %ln : tensor<8x64xf32>
}

// -----

// Module ops are pure: an unused one is erased.
// CHECK-LABEL: func.func @dead_op
// CHECK-NOT: te.
// CHECK: return
func.func @dead_op(%x: tensor<8x64xf32>, %w: tensor<32x64xf32>) {
  %y = te.linear %x weight(%w) : (tensor<8x64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  return
}
