// RUN: te-opt %s --split-input-file --verify-diagnostics

// The input of a module op needs a token dimension and a feature dimension.
func.func @input_rank(%x: tensor<64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op input must have rank >= 2 ([tokens, hidden] or [batch, seq, hidden]), got rank 1}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) : (tensor<64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<32xf32>
  return
}

// -----

// Only leading dimensions may be dynamic: the hidden size must be known.
func.func @input_dynamic_features(%x: tensor<4x?xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op input feature dimension (the last) must be static; only leading dimensions may be dynamic}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) : (tensor<4x?xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// Integer activations are not a TransformerEngine activation dtype.
func.func @input_dtype(%x: tensor<4x64xi32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.linear' op operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4x64xi32>'}}
  %y = te.linear %x weight(%w) : (tensor<4x64xi32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// gamma is a vector over the features.
func.func @ln_weight_rank(%x: tensor<4x64xf32>, %g: tensor<1x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op ln_weight must be a 1-D tensor, got rank 2}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) : (tensor<4x64xf32>, tensor<1x64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// Parameters have static shapes.
func.func @ln_weight_dynamic(%x: tensor<4x64xf32>, %g: tensor<?xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op ln_weight must have a static shape}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) : (tensor<4x64xf32>, tensor<?xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// gamma's length is the hidden size.
func.func @ln_weight_size(%x: tensor<4x64xf32>, %g: tensor<32xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op ln_weight size 32 does not match the input feature size 64}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) : (tensor<4x64xf32>, tensor<32xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// Parameters are in the activation dtype (TE casts them before the module).
func.func @ln_weight_dtype(%x: tensor<4x64xbf16>, %g: tensor<64xf32>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.layernorm_linear' op ln_weight element type 'f32' does not match the input element type 'bf16'}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) : (tensor<4x64xbf16>, tensor<64xf32>, tensor<32x64xbf16>) -> tensor<4x32xbf16>
  return
}

// -----

// RMSNorm has no beta.
func.func @rms_norm_beta(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op ln_bias is not allowed with rms_norm (RMSNorm has no beta)}}
  %y = te.layernorm_linear %x norm rms_norm(%g, %b) weight(%w) : (tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// beta's length is the hidden size.
func.func @ln_bias_size(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %b: tensor<63xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op ln_bias size 63 does not match the input feature size 64}}
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w) : (tensor<4x64xf32>, tensor<64xf32>, tensor<63xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// eps cannot be negative.
func.func @eps_negative(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op eps must be a finite non-negative number, got -1}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) {eps = -1.0 : f64} : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// eps cannot be infinite.
func.func @eps_inf(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp' op eps must be a finite non-negative number, got INF}}
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w) act gelu fc2(%w) {eps = 0x7FF0000000000000 : f64} : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<4x64xf32>
  return
}

// -----

// A weight is [out_features, in_features].
func.func @weight_rank(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<2x32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op weight must be a 2-D tensor [out_features, in_features], got rank 3}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) : (tensor<4x64xf32>, tensor<64xf32>, tensor<2x32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// Weights have static shapes.
func.func @weight_dynamic(%x: tensor<4x64xf32>, %w: tensor<?x64xf32>) {
  // expected-error @+1 {{'te.linear' op weight must have a static shape}}
  %y = te.linear %x weight(%w) : (tensor<4x64xf32>, tensor<?x64xf32>) -> tensor<4x?xf32>
  return
}

// -----

// The weight's in_features is the hidden size.
func.func @weight_in_features(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x48xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op weight in_features 48 does not match the input feature size 64}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x48xf32>) -> tensor<4x32xf32>
  return
}

// -----

// The weight is in the activation dtype.
func.func @weight_dtype(%x: tensor<4x64xf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.linear' op weight element type 'bf16' does not match the input element type 'f16'}}
  %y = te.linear %x weight(%w) : (tensor<4x64xf16>, tensor<32x64xbf16>) -> tensor<4x32xf16>
  return
}

// -----

// The bias has one entry per output feature.
func.func @bias_size(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op bias size 64 does not match weight out_features 32}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w, %b) : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// The linear op checks its bias too.
func.func @linear_bias_size(%x: tensor<4x64xf32>, %w: tensor<32x64xf32>, %b: tensor<31xf32>) {
  // expected-error @+1 {{'te.linear' op bias size 31 does not match weight out_features 32}}
  %y = te.linear %x weight(%w, %b) : (tensor<4x64xf32>, tensor<32x64xf32>, tensor<31xf32>) -> tensor<4x32xf32>
  return
}

// -----

// The linear op checks its input rank.
func.func @linear_input_rank(%x: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.linear' op input must have rank >= 2}}
  %y = te.linear %x weight(%w) : (tensor<64xf32>, tensor<32x64xf32>) -> tensor<32xf32>
  return
}

// -----

// The linear op checks its weight's in_features.
func.func @linear_in_features(%x: tensor<4x64xf32>, %w: tensor<32x65xf32>) {
  // expected-error @+1 {{'te.linear' op weight in_features 65 does not match the input feature size 64}}
  %y = te.linear %x weight(%w) : (tensor<4x64xf32>, tensor<32x65xf32>) -> tensor<4x32xf32>
  return
}

// -----

// return_layernorm_output promises a second result.
func.func @missing_norm_output(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op return_layernorm_output requires a second result (the norm output)}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) {return_layernorm_output} : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// A second result needs return_layernorm_output.
func.func @unexpected_norm_output(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>, %w2: tensor<64x32xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp' op has a second result (the norm output) but return_layernorm_output is not set}}
  %y, %ln = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w) act relu fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<64x32xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>)
  return
}

// -----

// Result types must be the inferred ones: [..., out_features].
func.func @wrong_result_type(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op result #0 has type 'tensor<4x64xf32>' but the inferred type is 'tensor<4x32xf32>' ([..., out_features] with the input's leading dimensions)}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<4x64xf32>
  return
}

// -----

// A dynamic leading dimension stays dynamic: a static result type is wrong.
func.func @wrong_result_dynamic(%x: tensor<?x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.linear' op result #0 has type 'tensor<8x32xf32>' but the inferred type is 'tensor<?x32xf32>'}}
  %y = te.linear %x weight(%w) : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  return
}

// -----

// fc2 is a 2-D weight.
func.func @fc2_rank(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<256x64xf32>, %w2: tensor<64xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp' op fc2_weight must be a 2-D tensor [out_features, in_features], got rank 1}}
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  return
}

// -----

// fc2 has a static shape.
func.func @fc2_dynamic(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<256x64xf32>, %w2: tensor<64x?xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp' op fc2_weight must have a static shape}}
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<64x?xf32>) -> tensor<4x64xf32>
  return
}

// -----

// fc2 projects back to the hidden size.
func.func @fc2_out_features(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<256x64xf32>, %w2: tensor<32x256xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp' op fc2_weight out_features 32 does not match the input feature size 64}}
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<32x256xf32>) -> tensor<4x32xf32>
  return
}

// -----

// fc2 is in the activation dtype.
func.func @fc2_dtype(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<256x64xbf16>, %w2: tensor<64x256xf16>) {
  // expected-error @+1 {{'te.layernorm_mlp' op fc2_weight element type 'f16' does not match the input element type 'bf16'}}
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x256xf16>) -> tensor<4x64xbf16>
  return
}

// -----

// fc1 is checked against the hidden size.
func.func @fc1_in_features(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<256x32xf32>, %w2: tensor<64x256xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp' op fc1_weight in_features 32 does not match the input feature size 64}}
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<256x32xf32>, tensor<64x256xf32>) -> tensor<4x64xf32>
  return
}

// -----

// A gated activation needs FC1 twice as wide as the FFN.
func.func @gated_width(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<256x64xf32>, %w2: tensor<64x256xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp' op fc1_weight out_features 256 must be twice fc2_weight in_features (2 x 256 = 512) for gated activation swiglu}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<64x256xf32>) -> tensor<4x64xf32>
  return
}

// -----

// A plain activation keeps FC1's width equal to the FFN.
func.func @plain_width(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<512x64xf32>, %w2: tensor<64x256xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp' op fc1_weight out_features 512 does not match fc2_weight in_features 256 for activation gelu}}
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<512x64xf32>, tensor<64x256xf32>) -> tensor<4x64xf32>
  return
}

// -----

// fc1's bias covers FC1's (doubled, for gated) output.
func.func @fc1_bias_size(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<512x64xf32>, %b1: tensor<256xf32>, %w2: tensor<64x256xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp' op fc1_bias size 256 does not match fc1_weight out_features 512}}
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1, %b1) act geglu fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<512x64xf32>, tensor<256xf32>, tensor<64x256xf32>) -> tensor<4x64xf32>
  return
}

// -----

// fc2's bias covers the hidden size.
func.func @fc2_bias_size(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<256x64xf32>, %w2: tensor<64x256xf32>, %b2: tensor<256xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp' op fc2_bias size 256 does not match fc2_weight out_features 64}}
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1) act gelu fc2(%w2, %b2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<4x64xf32>
  return
}

// -----

// limit/alpha/glu_linear_offset parameterize clamped_swiglu only.
func.func @limit_wrong_activation(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<512x64xf32>, %w2: tensor<64x256xf32>) {
  // expected-error @+1 {{activation swiglu has no parameter 'limit' (it takes none)}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu<limit = 7.0> fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<512x64xf32>, tensor<64x256xf32>) -> tensor<4x64xf32>
  return
}

// -----

// The clamp limit is positive.
func.func @limit_non_positive(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<512x64xf32>, %w2: tensor<64x256xf32>) {
  // expected-error @+1 {{limit must be positive, got 0}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act clamped_swiglu<limit = 0.0> fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<512x64xf32>, tensor<64x256xf32>) -> tensor<4x64xf32>
  return
}

// -----

// The sigmoid scale of clamped_swiglu is positive.
func.func @alpha_non_positive(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<512x64xf32>, %w2: tensor<64x256xf32>) {
  // expected-error @+1 {{alpha must be positive, got -1.702}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act clamped_swiglu<alpha = -1.702> fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<512x64xf32>, tensor<64x256xf32>) -> tensor<4x64xf32>
  return
}

// -----

// clamped_swiglu parameters are finite.
func.func @offset_not_finite(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<512x64xf32>, %w2: tensor<64x256xf32>) {
  // expected-error @+1 {{glu_linear_offset must be finite}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act clamped_swiglu<glu_linear_offset = 0x7FF8000000000000> fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<512x64xf32>, tensor<64x256xf32>) -> tensor<4x64xf32>
  return
}

// -----

// NVFP4's kernels take bf16 (or f32 without RHT), never f16.
func.func @nvfp4_f16(%x: tensor<32x64xf16>, %w: tensor<32x64xf16>) {
  // expected-error @+1 {{'te.linear' op recipe nvfp4 does not support f16 activations; use bf16 (or f32 with rht = false)}}
  %y = te.linear %x weight(%w) recipe(#te.nvfp4<>) : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x32xf16>
  return
}

// -----

// The random Hadamard transform needs bf16 activations.
func.func @nvfp4_rht_f32(%x: tensor<32x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op recipe nvfp4 with rht = true needs bf16 activations, got f32; set rht = false or cast the input to bf16}}
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w) recipe(#te.nvfp4<>) : (tensor<32x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<32x32xf32>
  return
}

// -----

// The recipe checks also apply to LayerNormMLP.
func.func @nvfp4_mlp_f16(%x: tensor<32x64xf16>, %g: tensor<64xf16>, %w1: tensor<256x64xf16>, %w2: tensor<64x256xf16>) {
  // expected-error @+1 {{'te.layernorm_mlp' op recipe nvfp4 does not support f16 activations}}
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1) act gelu fc2(%w2) recipe(#te.nvfp4<rht = false>) : (tensor<32x64xf16>, tensor<64xf16>, tensor<256x64xf16>, tensor<64x256xf16>) -> tensor<32x64xf16>
  return
}

// -----

// Delayed scaling's margin is a non-negative power-of-two exponent.
func.func @delayed_margin(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{fp8_delayed margin must be non-negative, got -1}}
  %y = te.linear %x weight(%w) recipe(#te.fp8_delayed<margin = -1>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

// The amax history holds at least the current step.
func.func @delayed_history(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{fp8_delayed amax_history_len must be at least 1, got 0}}
  %y = te.linear %x weight(%w) recipe(#te.fp8_delayed<amax_history_len = 0>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

// Block scaling uses 1x128 or 128x128 blocks.
func.func @block_dim(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{fp8_block grad_block_dim must be 1 (1x128 blocks) or 2 (128x128 blocks), got 3}}
  %y = te.linear %x weight(%w) recipe(#te.fp8_block<grad_block_dim = 3>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

// fprop multiplies x and w: both 2-D scaled is rejected.
func.func @block_fprop_2d2d(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{fp8_block fprop GEMM would multiply two 128x128-scaled operands (x and w); at most one operand may use block dim 2}}
  %y = te.linear %x weight(%w) recipe(#te.fp8_block<x_block_dim = 2>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

// dgrad multiplies grad and w.
func.func @block_dgrad_2d2d(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{fp8_block dgrad GEMM would multiply two 128x128-scaled operands (grad and w)}}
  %y = te.linear %x weight(%w) recipe(#te.fp8_block<grad_block_dim = 2>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

// wgrad multiplies x and grad.
func.func @block_wgrad_2d2d(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{fp8_block wgrad GEMM would multiply two 128x128-scaled operands (x and grad)}}
  %y = te.linear %x weight(%w) recipe(#te.fp8_block<x_block_dim = 2, w_block_dim = 1, grad_block_dim = 2>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

// Only recipe attributes are recipes.
func.func @not_a_recipe(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{invalid kind of attribute specified}}
  %y = te.linear %x weight(%w) recipe(5 : i32) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

// An unknown normalization is a parse error naming the choices.
func.func @bad_norm(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+2 {{expected ::mlir::te::NormalizationKind to be one of: layer_norm, rms_norm}}
  // expected-error @+1 {{failed to parse TE_NormalizationKindAttr parameter 'value'}}
  %y = te.layernorm_linear %x norm batch_norm(%g) weight(%w) : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// An unknown activation is a parse error naming the choices.
func.func @bad_activation(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{unknown activation 'tanh' (expected one of gelu, geglu, glu, qgelu, qgeglu, relu, reglu, srelu, sreglu, silu, swiglu, clamped_swiglu, gelu_erf, geglu_erf)}}
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w) act tanh fc2(%w) : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<4x64xf32>
  return
}

// -----

// An unknown recipe parameter value is a parse error.
func.func @bad_format(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+2 {{expected one of [e4m3, e5m2, hybrid] for FP8 element format (hybrid: E4M3 forward, E5M2 backward), got: e2m1}}
  // expected-error @+1 {{failed to parse TE_FP8CurrentRecipeAttr parameter 'format' which is to be a `::mlir::te::FP8Format`}}
  %y = te.linear %x weight(%w) recipe(#te.fp8_current<format = e2m1>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

// A dimension above 2^40: sizes derived from it could overflow int64.
func.func @dim_too_large(%x: tensor<9223372036854775807x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.linear' op operand #0 has dimension 9223372036854775807, above the largest supported (2^40 = 1099511627776)}}
  %y = te.linear %x weight(%w) : (tensor<9223372036854775807x64xf32>, tensor<32x64xf32>) -> tensor<9223372036854775807x32xf32>
  return
}

// -----

// Each dimension within bounds, but more than 2^48 elements in all.
func.func @elements_too_many(%x: tensor<1099511627776x1024xf32>, %w: tensor<32x1024xf32>) {
  // expected-error @+1 {{'te.linear' op operand #0 has 1125899906842624 elements, above the largest supported (2^48 = 281474976710656)}}
  %y = te.linear %x weight(%w) : (tensor<1099511627776x1024xf32>, tensor<32x1024xf32>) -> tensor<1099511627776x32xf32>
  return
}

// -----

// A result above the bounds is refused as well.
func.func @result_too_large(%x: tensor<4x64xf32>, %w: tensor<1099511627777x64xf32>) {
  // expected-error @+1 {{'te.linear' op operand #1 has dimension 1099511627777, above the largest supported (2^40 = 1099511627776)}}
  %y = te.linear %x weight(%w) : (tensor<4x64xf32>, tensor<1099511627777x64xf32>) -> tensor<4x1099511627777xf32>
  return
}

// -----

// The amax history is a [len, slots] fp32 tensor: bounded at 2^20.
func.func @amax_history_too_long(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{fp8_delayed amax_history_len must be at most 1048576, got 1099511627776}}
  %y = te.linear %x weight(%w) recipe(#te.fp8_delayed<amax_history_len = 1099511627776>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

// amax_history_len = 2^63-1 (the overflow the fuzzers found).
func.func @amax_history_int64_max(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{fp8_delayed amax_history_len must be at most 1048576, got 9223372036854775807}}
  %y = te.linear %x weight(%w) recipe(#te.fp8_delayed<amax_history_len = 9223372036854775807>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

// Scales are divided by 2^margin: bounded at 64.
func.func @margin_too_large(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{fp8_delayed margin must be at most 64, got 65}}
  %y = te.linear %x weight(%w) recipe(#te.fp8_delayed<margin = 65>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

// A parameter clamped_swiglu does not have.
func.func @unknown_param(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<512x64xf32>, %w2: tensor<64x256xf32>) {
  // expected-error @+1 {{activation clamped_swiglu has no parameter 'beta'}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act clamped_swiglu<beta = 1.0> fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<512x64xf32>, tensor<64x256xf32>) -> tensor<4x64xf32>
  return
}

// -----

// A parameter given twice.
func.func @param_twice(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<512x64xf32>, %w2: tensor<64x256xf32>) {
  // expected-error @+1 {{parameter 'limit' of clamped_swiglu is given twice}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act clamped_swiglu<limit = 5.0, limit = 6.0> fc2(%w2) : (tensor<4x64xf32>, tensor<64xf32>, tensor<512x64xf32>, tensor<64x256xf32>) -> tensor<4x64xf32>
  return
}

// -----

// The parameters used to be loose attributes: written that way they would
// be ignored, so they are refused.
func.func @loose_param(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w1: tensor<512x64xf32>, %w2: tensor<64x256xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp' op 'limit' is a parameter of the activation: write clamped_swiglu<limit = ...> after `act` (or after the op name), not an attribute}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act clamped_swiglu fc2(%w2) {limit = 5.0 : f64} : (tensor<4x64xf32>, tensor<64xf32>, tensor<512x64xf32>, tensor<64x256xf32>) -> tensor<4x64xf32>
  return
}

// -----

// #te.act verifies wherever it appears.
func.func @act_attr_invalid() attributes {a = #te.act<clamped_swiglu, alpha = 0.0>} {
  // expected-error @-1 {{alpha must be positive, got 0}}
  return
}

// -----

// te.normalization: RMSNorm has no beta.
func.func @normalization_rms_beta(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'te.normalization' op ln_bias is not allowed with rms_norm (RMSNorm has no beta)}}
  %y = te.normalization %x norm rms_norm(%g, %b) : (tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @normalization_gamma_size(%x: tensor<4x64xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{'te.normalization' op ln_weight size 32 does not match the input feature size 64}}
  %y = te.normalization %x norm layer_norm(%g) : (tensor<4x64xf32>, tensor<32xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @normalization_beta_dtype(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'te.normalization' op ln_bias element type 'f32' does not match the input element type 'bf16'}}
  %y = te.normalization %x norm layer_norm(%g, %b) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<64xf32>) -> tensor<4x64xbf16>
  return
}

// -----

func.func @normalization_rank1(%x: tensor<64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'te.normalization' op input must have rank >= 2 ([tokens, hidden] or [batch, seq, hidden]), got rank 1}}
  %y = te.normalization %x norm layer_norm(%g) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return
}

// -----

func.func @normalization_negative_eps(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'te.normalization' op eps must be a finite non-negative number, got -1.000000e+00}}
  %y = te.normalization %x norm layer_norm(%g) {eps = -1.0 : f64} : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  return
}

// -----

// The norm output has the input's type (generic form: the custom one
// infers it).
func.func @normalization_result_type(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'te.normalization' op result #0 has type 'tensor<4x64xbf16>' but the inferred type is 'tensor<4x64xf32>' (the norm output has the input's type)}}
  %y = "te.normalization"(%x, %g) <{normalization = #te<normalization layer_norm>}> : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xbf16>
  return
}

// -----

// NVFP4's 4-over-6 scopes are none, weights, activations or all.
func.func @nvfp4_4over6_scope(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+2 {{expected one of [none, weights, activations, all]}}
  // expected-error @+1 {{failed to parse TE_NVFP4RecipeAttr parameter 'four_over_six'}}
  %y = te.linear %x weight(%w) recipe(#te.nvfp4<rht = false, four_over_six = some>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

func.func @nvfp4_4over6_err_mode(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+2 {{expected one of [mae, mse]}}
  // expected-error @+1 {{failed to parse TE_NVFP4RecipeAttr parameter 'four_over_six_err_mode'}}
  %y = te.linear %x weight(%w) recipe(#te.nvfp4<four_over_six = weights, four_over_six_err_mode = max>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

// TE builds no 4-over-6 quantizer with the Hadamard transform (activations).
func.func @nvfp4_4over6_rht(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{nvfp4 four_over_six = activations needs rht = false (4-over-6 activations cannot be Hadamard-transformed, as in TE)}}
  %y = te.linear %x weight(%w) recipe(#te.nvfp4<four_over_six = activations>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}

// -----

func.func @nvfp4_4over6_row_scaled(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{nvfp4 four_over_six is not implemented with row_scaled}}
  %y = te.linear %x weight(%w) recipe(#te.nvfp4<row_scaled = true, four_over_six = weights>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return
}
