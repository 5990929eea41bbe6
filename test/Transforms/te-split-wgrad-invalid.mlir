// RUN: te-opt %s --te-split-wgrad --split-input-file --verify-diagnostics
//
// te.delay_wgrad arguments te-split-wgrad refuses.

// expected-error @+1 {{te-split-wgrad: argument 1 of @frozen is te.delay_wgrad, but also te.frozen: it has no gradient to delay}}
func.func @frozen(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16> {te.frozen, te.delay_wgrad}) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w) : (tensor<16x64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}
func.func @frozen_bwd(%w: tensor<32x64xbf16> {te.saved = "w"}, %dy: tensor<16x32xbf16> {te.grad_of = "output:0"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}) attributes {te.backward_of = @frozen} {
  %dx = te.gemm nn %dy, %w : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  return %dx : tensor<16x64xbf16>
}

// -----

// expected-error @+1 {{te-split-wgrad: argument 1 of @not_unit is te.delay_wgrad, which takes no value (a unit attribute)}}
func.func @not_unit(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16> {te.delay_wgrad = 1 : i64}) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w) : (tensor<16x64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}
func.func @not_unit_bwd(%w: tensor<32x64xbf16> {te.saved = "w"}, %dy: tensor<16x32xbf16> {te.grad_of = "output:0"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}) attributes {te.backward_of = @not_unit} {
  %dx = te.gemm nn %dy, %w : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  return %dx : tensor<16x64xbf16>
}

// -----

// expected-error @+1 {{te-split-wgrad: argument 1 of @no_backward is te.delay_wgrad, but no backward was generated for @no_backward (te-compile --train)}}
func.func @no_backward(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16> {te.delay_wgrad}) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w) : (tensor<16x64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// expected-error @+1 {{te-split-wgrad: argument 0 of @not_float is te.delay_wgrad, but is not a floating-point tensor}}
func.func @not_float(%i: tensor<16xi32> {te.delay_wgrad}) -> tensor<16xi32> {
  return %i : tensor<16xi32>
}
func.func @not_float_bwd(%dy: tensor<16xi32> {te.grad_of = "output:0"}) -> () attributes {te.backward_of = @not_float} {
  return
}

// -----

func.func @no_gradient(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16> {te.delay_wgrad}) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w) : (tensor<16x64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}
// expected-error @+1 {{te-split-wgrad: argument 1 of @no_gradient is te.delay_wgrad, but @no_gradient_bwd returns no gradient for it}}
func.func @no_gradient_bwd(%w: tensor<32x64xbf16> {te.saved = "w"}, %dy: tensor<16x32xbf16> {te.grad_of = "output:0"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}) attributes {te.backward_of = @no_gradient} {
  %dx = te.gemm nn %dy, %w : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  return %dx : tensor<16x64xbf16>
}
