// RUN: te-opt %s --split-input-file --verify-diagnostics
//
// One case per verifier branch of te.saved, the backward ops and
// te.recompute.

func.func @saved_not_module(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.saved' op source must be the output (result 0) of a te module op}}
  %s = te.saved %x["mu"] : tensor<8x64xf32> -> tensor<8xf32>
  return
}

// -----

func.func @saved_second_result(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  %y, %ln = te.layernorm_linear %x norm rms_norm(%g) weight(%w) {return_layernorm_output} : (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> (tensor<8x32xf32>, tensor<8x64xf32>)
  // expected-error @+1 {{'te.saved' op source must be the output (result 0) of a te module op}}
  %s = te.saved %ln["rsigma"] : tensor<8x64xf32> -> tensor<8xf32>
  return
}

// -----

func.func @saved_unknown_name(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w) : (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  // expected-error @+1 {{'te.saved' op 'mu' is not saved by te.layernorm_linear under recipe bf16; it saves ln_out, rsigma}}
  %s = te.saved %y["mu"] : tensor<8x32xf32> -> tensor<8xf32>
  return
}

// -----

func.func @saved_checkpointed(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %w1: tensor<128x64xf32>, %w2: tensor<64x128xf32>) {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) {checkpoint} : (tensor<8x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<8x64xf32>
  // expected-error @+1 {{'te.saved' op 'fc1_out' is not saved by te.layernorm_mlp under recipe bf16 (it saves only its inputs, e.g. because it is checkpointed)}}
  %s = te.saved %y["fc1_out"] : tensor<8x64xf32> -> tensor<8x128xf32>
  return
}

// -----

func.func @saved_alias(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w) : (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  // expected-error @+1 {{'te.saved' op 'weight' aliases input 2 of the module op; the backward takes that value, not a te.saved copy}}
  %s = te.saved %y["weight"] : tensor<8x32xf32> -> tensor<32x64xf32>
  return
}

// -----

func.func @saved_type(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w: tensor<32x64xbf16>) {
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w) recipe(#te.fp8_current<>) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>) -> tensor<8x32xbf16>
  // The saved norm output keeps only its columnwise copy.
  // expected-error @+1 {{'te.saved' op result type '!te.qtensor<8x64xe4m3, #te.fp8_current<>, both, hopper>' does not match the described saved tensor 'ln_out' of type '!te.qtensor<8x64xe4m3, #te.fp8_current<>, columnwise, hopper>'}}
  %s = te.saved %y["ln_out"] : tensor<8x32xbf16> -> !te.qtensor<8x64xe4m3, #te.fp8_current<>, both, hopper>
  return
}

// -----

func.func @bwd_weight_in(%dy: tensor<8x32xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %w: tensor<32x48xf32>, %ln: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op weight in_features 48 does not match the input feature size 64}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) : (tensor<8x32xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<32x48xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<32x48xf32>)
  return
}

// -----

func.func @bwd_weight_rank(%dy: tensor<8x32xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %w: tensor<32x64x1xf32>, %ln: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op weight must be a static 2-D weight}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) : (tensor<8x32xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<32x64x1xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>)
  return
}

// -----

func.func @bwd_input_rank(%dy: tensor<8x32xf32>, %x: tensor<2x4x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %w: tensor<32x64xf32>, %ln: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op input must have the rank of grad_output (2) and a static feature dimension, got 'tensor<2x4x64xf32>'}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) : (tensor<8x32xf32>, tensor<2x4x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> (tensor<2x4x64xf32>, tensor<64xf32>, tensor<32x64xf32>)
  return
}

// -----

func.func @bwd_grad_output(%dy: tensor<8x16xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %w: tensor<32x64xf32>, %ln: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op grad_output must be 'tensor<8x32xf32>', got 'tensor<8x16xf32>'}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) : (tensor<8x16xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>)
  return
}

// -----

func.func @bwd_grad_ln_output(%dy: tensor<8x32xf32>, %dln: tensor<8x32xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %w: tensor<32x64xf32>, %ln: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op grad_ln_output must be 'tensor<8x64xf32>', got 'tensor<8x32xf32>'}}
  %d:3 = te.layernorm_linear_bwd %dy ln_grad(%dln) input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) : (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>)
  return
}

// -----

func.func @bwd_gamma(%dy: tensor<8x32xf32>, %x: tensor<8x64xf32>, %g: tensor<32xf32>, %rs: tensor<8xf32>, %w: tensor<32x64xf32>, %ln: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op ln_weight must be 'tensor<64xf32>', got 'tensor<32xf32>'}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) : (tensor<8x32xf32>, tensor<8x64xf32>, tensor<32xf32>, tensor<8xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<32xf32>, tensor<32x64xf32>)
  return
}

// -----

func.func @bwd_layer_norm_needs_mu(%dy: tensor<8x32xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %w: tensor<32x64xf32>, %ln: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op layer_norm needs its saved mean: mu(...)}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm layer_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) : (tensor<8x32xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>)
  return
}

// -----

func.func @bwd_rms_norm_no_mu(%dy: tensor<8x32xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %w: tensor<32x64xf32>, %ln: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op rms_norm saves no mean; remove mu(...)}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) mu(%rs) rsigma(%rs) weight(%w) ln_out(%ln) : (tensor<8x32xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<8xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>)
  return
}

// -----

func.func @bwd_rms_norm_beta(%dy: tensor<8x32xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %w: tensor<32x64xf32>, %ln: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op with_ln_bias is not allowed with rms_norm (no beta)}}
  %d:4 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) {with_ln_bias} : (tensor<8x32xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<32x64xf32>)
  return
}

// -----

func.func @bwd_stat_rows(%dy: tensor<8x32xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<4xf32>, %w: tensor<32x64xf32>, %ln: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op rsigma must be 'tensor<8xf32>' (one fp32 value per row), got 'tensor<4xf32>'}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) : (tensor<8x32xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<4xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>)
  return
}

// -----

func.func @bwd_mixed(%dy: tensor<8x32xbf16>, %x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %rs: tensor<8xf32>, %w: !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>, %ln: tensor<8x64xbf16>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op saved GEMM operands must be all quantized or all high precision: 'ln_out' is not quantized but 'weight' is quantized}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) recipe(#te.fp8_current<>) : (tensor<8x32xbf16>, tensor<8x64xbf16>, tensor<64xbf16>, tensor<8xf32>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>, tensor<8x64xbf16>) -> (tensor<8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>)
  return
}

// -----

func.func @bwd_quantized_under_bf16(%dy: tensor<8x32xbf16>, %x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %rs: tensor<8xf32>, %w: !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>, %ln: !te.qtensor<8x64xe4m3, #te.fp8_current<>, columnwise, hopper>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op 'weight' is quantized but the op's recipe is bf16}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) : (tensor<8x32xbf16>, tensor<8x64xbf16>, tensor<64xbf16>, tensor<8xf32>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>, !te.qtensor<8x64xe4m3, #te.fp8_current<>, columnwise, hopper>) -> (tensor<8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>)
  return
}

// -----

func.func @bwd_recipe_mismatch(%dy: tensor<8x32xbf16>, %x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %rs: tensor<8xf32>, %w: !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>, %ln: !te.qtensor<8x64xe4m3, #te.fp8_current<>, columnwise, hopper>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op 'weight' is quantized under #te.fp8_current<>, not the op's recipe #te.fp8_delayed<>}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) recipe(#te.fp8_delayed<>) : (tensor<8x32xbf16>, tensor<8x64xbf16>, tensor<64xbf16>, tensor<8xf32>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>, !te.qtensor<8x64xe4m3, #te.fp8_current<>, columnwise, hopper>) -> (tensor<8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>)
  return
}

// -----

func.func @bwd_quantized_shape(%dy: tensor<8x32xbf16>, %x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %rs: tensor<8xf32>, %w: !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>, %ln: !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op 'ln_out' has logical shape [16x64], expected [8x64]}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) recipe(#te.fp8_current<>) : (tensor<8x32xbf16>, tensor<8x64xbf16>, tensor<64xbf16>, tensor<8xf32>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>, !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper>) -> (tensor<8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>)
  return
}

// -----

func.func @bwd_needs_columnwise(%dy: tensor<8x32xbf16>, %x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %rs: tensor<8xf32>, %w: !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>, %ln: !te.qtensor<8x64xe4m3, #te.fp8_current<>, columnwise, hopper>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op 'weight' must keep its columnwise copy for the backward GEMM, got usage rowwise}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) recipe(#te.fp8_current<>) : (tensor<8x32xbf16>, tensor<8x64xbf16>, tensor<64xbf16>, tensor<8xf32>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<8x64xe4m3, #te.fp8_current<>, columnwise, hopper>) -> (tensor<8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>)
  return
}

// -----

// A rowwise act_out is accepted only where the backward can transpose it
// (per-tensor FP8 on Hopper, te.add_columnwise): fp8-block's columnwise
// copy has its own block scales.
func.func @mlp_bwd_act_out_rowwise_block(%dy: tensor<128x128xbf16>, %x: tensor<128x128xbf16>, %g: tensor<128xbf16>, %rs: tensor<128xf32>, %ln: !te.qtensor<128x128xe4m3, #te.fp8_block<>, both, hopper>, %w1: !te.qtensor<256x128xe4m3, #te.fp8_block<>, both, hopper, block_2d>, %f1: tensor<128x256xbf16>, %a: !te.qtensor<128x256xe4m3, #te.fp8_block<>, rowwise, hopper>, %w2: !te.qtensor<128x256xe4m3, #te.fp8_block<>, both, hopper, block_2d>) {
  // expected-error @+1 {{'te.layernorm_mlp_bwd' op 'act_out' must keep its columnwise copy for the backward GEMM, got usage rowwise}}
  %d:4 = te.layernorm_mlp_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) ln_out(%ln) fc1(%w1) fc1_out(%f1) act gelu act_out(%a) fc2(%w2) recipe(#te.fp8_block<>) : (tensor<128x128xbf16>, tensor<128x128xbf16>, tensor<128xbf16>, tensor<128xf32>, !te.qtensor<128x128xe4m3, #te.fp8_block<>, both, hopper>, !te.qtensor<256x128xe4m3, #te.fp8_block<>, both, hopper, block_2d>, tensor<128x256xbf16>, !te.qtensor<128x256xe4m3, #te.fp8_block<>, rowwise, hopper>, !te.qtensor<128x256xe4m3, #te.fp8_block<>, both, hopper, block_2d>) -> (tensor<128x128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<128x256xbf16>)
  return
}

// -----

func.func @bwd_grad_count(%dy: tensor<8x32xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %w: tensor<32x64xf32>, %ln: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op expects 4 gradients (input, ln_weight, weight, bias), got 3}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) {with_bias} : (tensor<8x32xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>)
  return
}

// -----

func.func @bwd_grad_type(%dy: tensor<8x32xbf16>, %x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %rs: tensor<8xf32>, %w: tensor<32x64xbf16>, %ln: tensor<8x64xbf16>) {
  // expected-error @+1 {{'te.layernorm_linear_bwd' op gradient #2 (of weight) must be 'tensor<32x64xbf16>', got 'tensor<32x64xf32>'}}
  %d:3 = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) weight(%w) ln_out(%ln) : (tensor<8x32xbf16>, tensor<8x64xbf16>, tensor<64xbf16>, tensor<8xf32>, tensor<32x64xbf16>, tensor<8x64xbf16>) -> (tensor<8x64xbf16>, tensor<64xbf16>, tensor<32x64xf32>)
  return
}

// -----

func.func @mlp_bwd_fc1_in(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %ln: tensor<8x64xf32>, %w1: tensor<128x32xf32>, %f1: tensor<8x128xf32>, %a: tensor<8x128xf32>, %w2: tensor<64x128xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp_bwd' op fc1_weight in_features 32 does not match the input feature size 64}}
  %d:4 = te.layernorm_mlp_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) ln_out(%ln) fc1(%w1) fc1_out(%f1) act gelu act_out(%a) fc2(%w2) : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<8x64xf32>, tensor<128x32xf32>, tensor<8x128xf32>, tensor<8x128xf32>, tensor<64x128xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<128x32xf32>, tensor<64x128xf32>)
  return
}

// -----

func.func @mlp_bwd_fc2_out(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %ln: tensor<8x64xf32>, %w1: tensor<128x64xf32>, %f1: tensor<8x128xf32>, %a: tensor<8x128xf32>, %w2: tensor<32x128xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp_bwd' op fc2_weight out_features 32 does not match the input feature size 64}}
  %d:4 = te.layernorm_mlp_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) ln_out(%ln) fc1(%w1) fc1_out(%f1) act gelu act_out(%a) fc2(%w2) : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<8x64xf32>, tensor<128x64xf32>, tensor<8x128xf32>, tensor<8x128xf32>, tensor<32x128xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<32x128xf32>)
  return
}

// -----

func.func @mlp_bwd_gated_width(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %ln: tensor<8x64xf32>, %w1: tensor<128x64xf32>, %f1: tensor<8x128xf32>, %a: tensor<8x128xf32>, %w2: tensor<64x128xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp_bwd' op fc1_weight out_features 128 must be twice the FFN size 128 for activation swiglu}}
  %d:4 = te.layernorm_mlp_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) ln_out(%ln) fc1(%w1) fc1_out(%f1) act swiglu act_out(%a) fc2(%w2) : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<8x64xf32>, tensor<128x64xf32>, tensor<8x128xf32>, tensor<8x128xf32>, tensor<64x128xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<64x128xf32>)
  return
}

// -----

func.func @mlp_bwd_clamp_params(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %ln: tensor<8x64xf32>, %w1: tensor<128x64xf32>, %f1: tensor<8x128xf32>, %a: tensor<8x128xf32>, %w2: tensor<64x128xf32>) {
  // expected-error @+1 {{activation gelu has no parameter 'limit' (it takes none)}}
  %d:4 = te.layernorm_mlp_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) ln_out(%ln) fc1(%w1) fc1_out(%f1) act gelu<limit = 7.0> act_out(%a) fc2(%w2) : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<8x64xf32>, tensor<128x64xf32>, tensor<8x128xf32>, tensor<8x128xf32>, tensor<64x128xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<64x128xf32>)
  return
}

// -----

func.func @mlp_bwd_fc1_out(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %ln: tensor<8x64xf32>, %w1: tensor<128x64xf32>, %f1: tensor<8x64xf32>, %a: tensor<8x128xf32>, %w2: tensor<64x128xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp_bwd' op fc1_out must be 'tensor<8x128xf32>', got 'tensor<8x64xf32>'}}
  %d:4 = te.layernorm_mlp_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) ln_out(%ln) fc1(%w1) fc1_out(%f1) act gelu act_out(%a) fc2(%w2) : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<8x64xf32>, tensor<128x64xf32>, tensor<8x64xf32>, tensor<8x128xf32>, tensor<64x128xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<64x128xf32>)
  return
}

// -----

func.func @mlp_bwd_grad_count(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>, %ln: tensor<8x64xf32>, %w1: tensor<128x64xf32>, %f1: tensor<8x128xf32>, %a: tensor<8x128xf32>, %w2: tensor<64x128xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp_bwd' op expects 5 gradients (input, ln_weight, fc1_weight, fc1_bias, fc2_weight), got 4}}
  %d:4 = te.layernorm_mlp_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) ln_out(%ln) fc1(%w1) fc1_out(%f1) act gelu act_out(%a) fc2(%w2) {with_fc1_bias} : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<8x64xf32>, tensor<128x64xf32>, tensor<8x128xf32>, tensor<8x128xf32>, tensor<64x128xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<64x128xf32>)
  return
}

// -----

func.func @linear_bwd_input(%dy: tensor<8x32xf32>, %x: tensor<8x48xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.linear_bwd' op input must be 'tensor<8x64xf32>', got 'tensor<8x48xf32>'}}
  %d:2 = te.linear_bwd %dy input(%x) weight(%w) : (tensor<8x32xf32>, tensor<8x48xf32>, tensor<32x64xf32>) -> (tensor<8x64xf32>, tensor<32x64xf32>)
  return
}

// -----

func.func @linear_bwd_columnwise(%dy: tensor<8x32xbf16>, %x: !te.qtensor<8x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>, %w: !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, both, hopper>) {
  // The wgrad GEMM reads the input transposed.
  // expected-error @+1 {{'te.linear_bwd' op 'input' must keep its columnwise copy for the backward GEMM, got usage rowwise}}
  %d:2 = te.linear_bwd %dy input(%x) weight(%w) recipe(#te.fp8_delayed<>) : (tensor<8x32xbf16>, !te.qtensor<8x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>, !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, both, hopper>) -> (tensor<8x64xbf16>, tensor<32x64xbf16>)
  return
}

// -----

func.func @recompute_args(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.recompute' op region arguments must match the inputs' types}}
  %r = te.recompute(%x) : (tensor<8x64xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8x32xf32>):
    %c = arith.constant dense<0.0> : tensor<8xf32>
    te.yield %c : tensor<8xf32>
  }
  return
}

// -----

func.func @recompute_yield_types(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.recompute' op te.yield operand types must match the result types}}
  %r = te.recompute(%x) : (tensor<8x64xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8x64xf32>):
    te.yield %a : tensor<8x64xf32>
  }
  return
}

// -----

func.func @recompute_nothing(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.recompute' op recomputes nothing (no results)}}
  te.recompute(%x) : (tensor<8x64xf32>) -> () {
  ^bb0(%a: tensor<8x64xf32>):
    te.yield
  }
  return
}

// -----

func.func @recompute_not_saved(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.recompute' op must yield only forward intermediates taken with te.saved; value #0 is not}}
  %r = te.recompute(%x) : (tensor<8x64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x64xf32>):
    te.yield %a : tensor<8x64xf32>
  }
  return
}

// -----

func.func @recompute_backward_inside(%dy: tensor<8x32xf32>, %x: tensor<8x64xf32>, %w: tensor<32x64xf32>) {
  %r = te.recompute(%dy, %x, %w) : (tensor<8x32xf32>, tensor<8x64xf32>, tensor<32x64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x32xf32>, %b: tensor<8x64xf32>, %c: tensor<32x64xf32>):
    // expected-error @+1 {{'te.linear_bwd' op is not allowed in a te.recompute region, which re-runs forward computations only}}
    %d:2 = te.linear_bwd %a input(%b) weight(%c) : (tensor<8x32xf32>, tensor<8x64xf32>, tensor<32x64xf32>) -> (tensor<8x64xf32>, tensor<32x64xf32>)
    te.yield %d#0 : tensor<8x64xf32>
  }
  return
}

// -----

func.func @recompute_checkpointed_inside(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %w1: tensor<128x64xf32>, %w2: tensor<64x128xf32>) {
  %r = te.recompute(%x, %g, %w1, %w2) : (tensor<8x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8x64xf32>, %b: tensor<64xf32>, %c: tensor<128x64xf32>, %d: tensor<64x128xf32>):
    // expected-error @+1 {{'te.layernorm_mlp' op inside a te.recompute region must not be checkpointed itself}}
    %y = te.layernorm_mlp %a norm rms_norm(%b) fc1(%c) act gelu fc2(%d) {checkpoint} : (tensor<8x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<8x64xf32>
    %z = te.layernorm_mlp %a norm rms_norm(%b) fc1(%c) act gelu fc2(%d) : (tensor<8x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<8x64xf32>
    %s = te.saved %z["rsigma"] : tensor<8x64xf32> -> tensor<8xf32>
    te.yield %s : tensor<8xf32>
  }
  return
}

// -----

func.func @recompute_side_effect(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %w1: tensor<128x64xf32>, %w2: tensor<64x128xf32>) {
  %r = te.recompute(%x, %g, %w1, %w2) : (tensor<8x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8x64xf32>, %b: tensor<64xf32>, %c: tensor<128x64xf32>, %d: tensor<64x128xf32>):
    // expected-error @+1 {{'func.call' op has side effects, which a te.recompute region must not have}}
    func.call @log() : () -> ()
    %y = te.layernorm_mlp %a norm rms_norm(%b) fc1(%c) act gelu fc2(%d) : (tensor<8x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<8x64xf32>
    %s = te.saved %y["rsigma"] : tensor<8x64xf32> -> tensor<8xf32>
    te.yield %s : tensor<8xf32>
  }
  return
}
func.func private @log()

// -----

func.func @scales_not_delayed(%x: tensor<8x64xbf16>, %w: tensor<32x64xbf16>, %s: tensor<3xf32>) {
  // expected-error @+1 {{'te.linear' op scales are delayed-scaling state; the op's recipe is fp8-current, not fp8-delayed}}
  %y = te.linear %x weight(%w) recipe(#te.fp8_current<>) scales(%s) : (tensor<8x64xbf16>, tensor<32x64xbf16>, tensor<3xf32>) -> tensor<8x32xbf16>
  return
}

// -----

func.func @scales_slots(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %w2: tensor<64x128xbf16>, %s: tensor<3xf32>) {
  // expected-error @+1 {{'te.layernorm_mlp' op scales must have one value per quantizer slot (6), got 'tensor<3xf32>'}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) recipe(#te.fp8_delayed<>) scales(%s) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<3xf32>) -> tensor<8x64xbf16>
  return
}

// -----

func.func @bwd_scales_slots(%dy: tensor<8x32xf32>, %x: tensor<8x64xf32>, %w: tensor<32x64xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{'te.linear_bwd' op scales must have one value per quantizer slot (2), got 'tensor<3xf32>'}}
  %d:2 = te.linear_bwd %dy input(%x) weight(%w) recipe(#te.fp8_delayed<>) scales(%s) : (tensor<8x32xf32>, tensor<8x64xf32>, tensor<32x64xf32>, tensor<3xf32>) -> (tensor<8x64xf32>, tensor<32x64xf32>)
  return
}

// -----

func.func @amax_source(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.amax' op source must be result 0 of a te module or backward op}}
  %a = te.amax %x : tensor<8x64xf32> -> tensor<3xf32>
  return
}

// -----

func.func @amax_no_scales(%x: tensor<8x64xbf16>, %w: tensor<32x64xbf16>) {
  %y = te.linear %x weight(%w) recipe(#te.fp8_delayed<>) : (tensor<8x64xbf16>, tensor<32x64xbf16>) -> tensor<8x32xbf16>
  // expected-error @+1 {{'te.amax' op source op has no delayed-scaling scales, so it records no amaxes}}
  %a = te.amax %y : tensor<8x32xbf16> -> tensor<3xf32>
  return
}

// -----

func.func @amax_slots(%x: tensor<8x64xbf16>, %w: tensor<32x64xbf16>, %s: tensor<3xf32>) {
  %y = te.linear %x weight(%w) recipe(#te.fp8_delayed<>) scales(%s) : (tensor<8x64xbf16>, tensor<32x64xbf16>, tensor<3xf32>) -> tensor<8x32xbf16>
  // expected-error @+1 {{'te.amax' op result must have one amax per quantizer slot (3), got 'tensor<2xf32>'}}
  %a = te.amax %y : tensor<8x32xbf16> -> tensor<2xf32>
  return
}

// -----

func.func @amax_update_recipe(%h: tensor<1024x3xf32>, %s: tensor<3xf32>, %a: tensor<3xf32>) {
  // expected-error @+1 {{'te.amax_update' op updates delayed-scaling state; the recipe must be #te.fp8_delayed, got #te.fp8_current<>}}
  %h2, %s2 = te.amax_update %h, %s, %a recipe(#te.fp8_current<>) : tensor<1024x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @amax_update_history(%h: tensor<16x3xf32>, %s: tensor<3xf32>, %a: tensor<3xf32>) {
  // expected-error @+1 {{'te.amax_update' op amax_history must be [amax_history_len = 1024, slots = 3], got 'tensor<16x3xf32>'}}
  %h2, %s2 = te.amax_update %h, %s, %a recipe(#te.fp8_delayed<>) : tensor<16x3xf32>, tensor<3xf32>
  return
}

// -----

// te.normalization_bwd: a LayerNorm backward needs its saved mean.
func.func @normalization_bwd_no_mu(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>) {
  // expected-error @+1 {{'te.normalization_bwd' op layer_norm needs its saved mean: mu(...)}}
  %d:2 = te.normalization_bwd %dy input(%x) norm layer_norm(%g) rsigma(%rs) : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>) -> (tensor<8x64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @normalization_bwd_rms_beta(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>) {
  // expected-error @+1 {{'te.normalization_bwd' op with_ln_bias is not allowed with rms_norm (no beta)}}
  %d:3 = te.normalization_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) {with_ln_bias} : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @normalization_bwd_grads(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %mu: tensor<8xf32>, %rs: tensor<8xf32>) {
  // expected-error @+1 {{'te.normalization_bwd' op expects 3 gradients (input, ln_weight, ln_bias), got 2}}
  %d:2 = te.normalization_bwd %dy input(%x) norm layer_norm(%g) mu(%mu) rsigma(%rs) {with_ln_bias} : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8x64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @normalization_bwd_stat_rows(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<4xf32>) {
  // expected-error @+1 {{'te.normalization_bwd' op rsigma must be 'tensor<8xf32>' (one fp32 value per row), got 'tensor<4xf32>'}}
  %d:2 = te.normalization_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<4xf32>) -> (tensor<8x64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @normalization_bwd_input(%dy: tensor<8x64xf32>, %x: tensor<8x64xbf16>, %g: tensor<64xf32>, %rs: tensor<8xf32>) {
  // expected-error @+1 {{'te.normalization_bwd' op input must be 'tensor<8x64xf32>', got 'tensor<8x64xbf16>'}}
  %d:2 = te.normalization_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) : (tensor<8x64xf32>, tensor<8x64xbf16>, tensor<64xf32>, tensor<8xf32>) -> (tensor<8x64xf32>, tensor<64xf32>)
  return
}

// -----

// It records no amaxes (no quantizer slots).
func.func @normalization_bwd_amax(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %rs: tensor<8xf32>) {
  %d:2 = te.normalization_bwd %dy input(%x) norm rms_norm(%g) rsigma(%rs) : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>) -> (tensor<8x64xf32>, tensor<64xf32>)
  // expected-error @+1 {{'te.amax' op source op 'te.normalization_bwd' quantizes nothing (no quantizer slots), so it records no amaxes}}
  %a = te.amax %d#0 : tensor<8x64xf32> -> tensor<2xf32>
  return
}
