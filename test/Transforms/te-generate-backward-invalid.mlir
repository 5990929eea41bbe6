// RUN: te-opt %s --te-generate-backward --split-input-file --verify-diagnostics
//
// What te-generate-backward cannot differentiate is an error at the op.

func.func @no_rule(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) -> tensor<8x32xf32> {
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w) : (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  // expected-error @+1 {{te-generate-backward: no derivative rule for 'arith.mulf'}}
  %z = arith.mulf %y, %y : tensor<8x32xf32>
  return %z : tensor<8x32xf32>
}

// -----

// The forward and backward names must be free.
// expected-error @+1 {{te-generate-backward: @f_fwd already exists}}
func.func @f(%x: tensor<8x64xf32>, %w: tensor<32x64xf32>) -> tensor<8x32xf32> {
  %y = te.linear %x weight(%w) : (tensor<8x64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
func.func private @f_fwd()

// -----

// A dynamic-shaped input that no gradient reaches would need a zero tensor
// of run-time size.
func.func @unused_dynamic(%x: tensor<?x64xf32>, %w: tensor<32x64xf32>, %unused: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %y = te.linear %x weight(%w) : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  // expected-error @-2 {{te-generate-backward: a zero gradient of dynamic shape 'tensor<?x64xf32>' is needed but not supported}}
  return %y : tensor<?x32xf32>
}
