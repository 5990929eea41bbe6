// RUN: te-opt %s --split-input-file --te-decompose --verify-diagnostics
// Each collective te-decompose places is a remark saying why it is there.

func.func @mlp_sp(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<64x64xbf16>, %w2: tensor<64x64xbf16>, %b2: tensor<64xbf16>) -> tensor<8x64xbf16> {
  // expected-remark @+2 {{te-decompose: all-gather over 2 ranks: the norm output's rows, before FC1}}
  // expected-remark @+1 {{te-decompose: reduce-scatter over 2 ranks: FC2's partial sums (its bias added after)}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2, %b2) tp(#te.tp<size = 2, sequence_parallel = true>) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}

// -----

func.func @mlp_tp(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<64x64xbf16>, %w2: tensor<64x64xbf16>) -> tensor<8x64xbf16> {
  // expected-remark @+1 {{te-decompose: all-reduce over 4 ranks: FC2's partial sums (its bias added after)}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) tp(#te.tp<size = 4>) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}

// -----

func.func @ln_linear_bwd(%dy: tensor<16x32xbf16>, %x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %rs: tensor<8xf32>, %w: tensor<32x64xbf16>, %ln: tensor<8x64xbf16>) -> (tensor<8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>) {
  // expected-remark @+3 {{te-decompose: all-gather over 2 ranks: the saved norm output's rows, for the wgrad}}
  // expected-remark @+2 {{te-decompose: reduce-scatter over 2 ranks: the dgrad's partial sums}}
  // expected-remark @+1 {{te-decompose: all-reduce over 2 ranks: a norm weight's partial gradient}}
  %dx, %dg, %dw = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) tp(#te.tp<size = 2, sequence_parallel = true, reduce_param_grads = true>) : (tensor<16x32xbf16>, tensor<8x64xbf16>, tensor<64xbf16>, tensor<8xf32>, tensor<32x64xbf16>, tensor<8x64xbf16>) -> (tensor<8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>)
  return %dx, %dg, %dw : tensor<8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>
}
