// RUN: te-opt %s --split-input-file --te-tensor-parallel="size=2 sequence-parallel" --verify-diagnostics
// What te-tensor-parallel refuses, each with the reason.

func.func @conflict(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w: tensor<64x64xbf16>) -> tensor<8x64xbf16> {
  // One tensor as FC1's weight (rows) and FC2's (columns).
  // expected-error @+1 {{te-tensor-parallel: argument #2 is the fc2_weight of 'te.layernorm_mlp' (split along the last dim) but also the fc1_weight of 'te.layernorm_mlp' (split along dim 0); one tensor cannot have both layouts}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w) act gelu fc2(%w) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}

// -----

func.func @reshard(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w: tensor<64x64xbf16>, %w1: tensor<128x64xbf16>, %w2: tensor<64x128xbf16>) -> tensor<8x64xbf16> {
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>) -> tensor<8x64xbf16>
  // expected-error @+1 {{te-tensor-parallel: the input of 'te.layernorm_mlp' must be split along dim 0, but it comes from 'te.layernorm_linear' split along the last dim (te-mlir places no resharding collectives)}}
  %z = te.layernorm_mlp %y norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<8x64xbf16>
  return %z : tensor<8x64xbf16>
}

// -----

func.func @linear(%x: tensor<8x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<8x64xbf16> {
  // expected-error @+1 {{te-tensor-parallel: te.linear is not sharded yet}}
  %y = te.linear %x weight(%w) : (tensor<8x64xbf16>, tensor<64x64xbf16>) -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}

// -----

func.func @normalization(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>) -> tensor<8x64xbf16> {
  // expected-error @+1 {{te-tensor-parallel: te.normalization is not sharded yet (only te.layernorm_linear and te.layernorm_mlp are)}}
  %y = te.normalization %x norm rms_norm(%g) : (tensor<8x64xbf16>, tensor<64xbf16>) -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}

// -----

func.func @through(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %w2: tensor<64x128xbf16>) -> tensor<8x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<8x64xbf16>
  // expected-error @+1 {{te-tensor-parallel: cannot shard through 'tensor.extract_slice'}}
  %s = tensor.extract_slice %y[0, 0] [8, 64] [1, 1] : tensor<8x64xbf16> to tensor<8x64xbf16>
  return %s : tensor<8x64xbf16>
}

// -----

func.func @mixed(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %w2: tensor<64x128xbf16>, %w: tensor<64x64xbf16>) -> tensor<8x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<8x64xbf16>
  %z = te.layernorm_linear %x norm rms_norm(%g) weight(%w) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>) -> tensor<8x64xbf16>
  // expected-error @+1 {{te-tensor-parallel: operands of 'arith.addf' have different layouts (split along dim 0, split along the last dim)}}
  %r = arith.addf %y, %z : tensor<8x64xbf16>
  return %r : tensor<8x64xbf16>
}

// -----

func.func @gated_divisible(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<6x64xbf16>, %w2: tensor<64x3xbf16>) -> tensor<8x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<6x64xbf16>, tensor<64x3xbf16>) -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}
// expected-error @-4 {{te-tensor-parallel: argument #2 ('tensor<6x64xbf16>') is each half of dim 0 split (a gated FC1) over 2 ranks, but dim 0 (6) is not a multiple of 4}}

// -----

func.func @rows_divisible(%x: tensor<7x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<64x64xbf16>, %w2: tensor<64x64xbf16>) -> tensor<7x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<7x64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<7x64xbf16>
  return %y : tensor<7x64xbf16>
}
// expected-error @-4 {{te-tensor-parallel: argument #0 ('tensor<7x64xbf16>') is split along dim 0 over 2 ranks, but dim 0 (7) is not a multiple of 2}}

// -----

func.func @sharded_twice(%x: tensor<8x64xbf16>) -> tensor<8x64xbf16> attributes {te.tp = "2"} {
  return %x : tensor<8x64xbf16>
}
// expected-error @-3 {{te-tensor-parallel: @sharded_twice is already sharded (te.tp = "2")}}

// -----

// A model in Float8 block scaling is refused by the op's verifier once
// sharded.
func.func @fp8(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w: tensor<64x64xbf16>) -> tensor<8x64xbf16> {
  // expected-error @+1 {{'te.layernorm_linear' op tp with recipe fp8-block is not supported yet: tensor parallelism runs bf16, fp8-current and fp8-delayed}}
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w) recipe(#te.fp8_block<>) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>) -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}

// -----

// A concat is only a gated FC1 weight's two halves.
func.func @concat_rows(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %a: tensor<32x64xbf16>, %b: tensor<32x64xbf16>, %w2: tensor<64x64xbf16>) -> tensor<8x64xbf16> {
  %w1 = tensor.concat dim(0) %a, %b : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<64x64xbf16>
  // expected-error @+1 {{te-tensor-parallel: the fc1_weight of 'te.layernorm_mlp' comes from 'tensor.concat', which is not sharded}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}

// -----

func.func @result_unsharded(%x: tensor<8x64xbf16>, %a: tensor<32x64xbf16>) -> tensor<64x64xbf16> {
  %c = tensor.concat dim(0) %a, %a : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<64x64xbf16>
  // expected-error @+1 {{te-tensor-parallel: a result comes from 'tensor.concat', which is not sharded}}
  return %c : tensor<64x64xbf16>
}
