// RUN: te-opt %s --te-apply-recipe="recipe=nvfp4" --verify-diagnostics

// A recipe that an op cannot run under fails verification after the pass,
// at the op's location.
func.func @nvfp4_on_f32(%x: tensor<32x64xf32>, %w: tensor<32x64xf32>) -> tensor<32x32xf32> {
  // expected-error @+1 {{'te.linear' op recipe nvfp4 with rht = true needs bf16 activations, got f32}}
  %y = te.linear %x weight(%w) : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x32xf32>
  return %y : tensor<32x32xf32>
}
