// RUN: te-opt %s --te-generate-backward --split-input-file --verify-diagnostics
//
// te.main_grad arguments te-generate-backward refuses.

// expected-error @+1 {{te-generate-backward: argument 1 is marked both te.frozen (no gradient) and te.main_grad}}
func.func @frozen(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16> {te.frozen, te.main_grad}) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w) : (tensor<16x64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// expected-error @+1 {{te-generate-backward: te.main_grad of argument 1 must be a unit attribute}}
func.func @not_unit(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16> {te.main_grad = 1 : i64}) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w) : (tensor<16x64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// expected-error @+1 {{te-generate-backward: argument 0 is marked te.main_grad but is not a float tensor ('tensor<16xi32>')}}
func.func @not_float(%i: tensor<16xi32> {te.main_grad}, %x: tensor<16x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w) : (tensor<16x64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}
