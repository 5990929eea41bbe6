// RUN: te-opt %s --split-input-file --verify-diagnostics
//
// One case per verifier branch of the L2 primitives.

func.func @norm_fwd_rank(%x: tensor<64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'te.norm_fwd' op input must be [..., features] with a static feature dim, got 'tensor<64xf32>'}}
  %z, %r = te.norm_fwd %x norm rms_norm(%g) {eps = 1.0e-5 : f64} : (tensor<64xf32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<1xf32>)
  return
}

// -----

func.func @norm_fwd_rms_beta(%x: tensor<8x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'te.norm_fwd' op rms_norm has no beta}}
  %z, %r = te.norm_fwd %x norm rms_norm(%g, %g) {eps = 1.0e-5 : f64} : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8xf32>)
  return
}

// -----

func.func @norm_fwd_gamma(%x: tensor<8x64xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{'te.norm_fwd' op gamma must be 'tensor<64xf32>', got 'tensor<32xf32>'}}
  %z, %r = te.norm_fwd %x norm rms_norm(%g) {eps = 1.0e-5 : f64} : (tensor<8x64xf32>, tensor<32xf32>) -> (tensor<8x64xf32>, tensor<8xf32>)
  return
}

// -----

func.func @norm_fwd_output(%x: tensor<8x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'te.norm_fwd' op output must be 'tensor<8x64xf32>', got 'tensor<8x64xbf16>'}}
  %z, %r = te.norm_fwd %x norm rms_norm(%g) {eps = 1.0e-5 : f64} : (tensor<8x64xf32>, tensor<64xf32>) -> (tensor<8x64xbf16>, tensor<8xf32>)
  return
}

// -----

func.func @norm_fwd_mu(%x: tensor<8x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'te.norm_fwd' op layer_norm has a mean (mu)}}
  %z, %r = te.norm_fwd %x norm layer_norm(%g) {eps = 1.0e-5 : f64} : (tensor<8x64xf32>, tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8xf32>)
  return
}

// -----

func.func @norm_fwd_no_mu(%x: tensor<8x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'te.norm_fwd' op rms_norm has no mean (mu)}}
  %z, %r, %m = te.norm_fwd %x norm rms_norm(%g) {eps = 1.0e-5 : f64} : (tensor<8x64xf32>, tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @norm_fwd_rsigma(%x: tensor<2x4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'te.norm_fwd' op rsigma must be 'tensor<8xf32>', got 'tensor<2xf32>'}}
  %z, %r = te.norm_fwd %x norm rms_norm(%g) {eps = 1.0e-5 : f64} : (tensor<2x4x64xf32>, tensor<64xf32>) -> (tensor<2x4x64xf32>, tensor<2xf32>)
  return
}

// -----

func.func @norm_bwd_rms_beta(%dz: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %r: tensor<8xf32>) {
  // expected-error @+1 {{'te.norm_bwd' op rms_norm has no beta to differentiate}}
  %dx, %dg, %db = te.norm_bwd %dz input(%x) norm rms_norm(%g) rsigma(%r) {with_beta} : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @norm_bwd_beta_result(%dz: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %r: tensor<8xf32>) {
  // expected-error @+1 {{'te.norm_bwd' op grad_beta must be present exactly with with_beta}}
  %dx, %dg = te.norm_bwd %dz input(%x) norm layer_norm(%g) rsigma(%r) mu(%r) {with_beta} : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8x64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @norm_bwd_grad(%dz: tensor<8x32xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %r: tensor<8xf32>) {
  // expected-error @+1 {{'te.norm_bwd' op grad must be 'tensor<8x64xf32>', got 'tensor<8x32xf32>'}}
  %dx, %dg = te.norm_bwd %dz input(%x) norm rms_norm(%g) rsigma(%r) : (tensor<8x32xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>) -> (tensor<8x64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @norm_bwd_grad_gamma(%dz: tensor<8x64xf32>, %x: tensor<8x64xf32>, %g: tensor<64xf32>, %r: tensor<8xf32>) {
  // expected-error @+1 {{'te.norm_bwd' op grad_gamma must be 'tensor<64xf32>', got 'tensor<64xbf16>'}}
  %dx, %dg = te.norm_bwd %dz input(%x) norm rms_norm(%g) rsigma(%r) : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8xf32>) -> (tensor<8x64xf32>, tensor<64xbf16>)
  return
}

// -----

func.func @gemm_rhs_dtype(%a: tensor<8x64xf32>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.gemm' op rhs element type 'bf16' does not match lhs 'f32'}}
  %y = te.gemm tn %a, %w : (tensor<8x64xf32>, tensor<32x64xbf16>) -> tensor<8x32xf32>
  return
}

// -----

func.func @gemm_bias_layout(%a: tensor<8x32xf32>, %w: tensor<32x64xf32>, %b: tensor<32xf32>) {
  // expected-error @+1 {{'te.gemm' op only the tn (fprop) GEMM takes a bias}}
  %y = te.gemm nn %a, %w bias(%b) : (tensor<8x32xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<8x64xf32>
  return
}

// -----

func.func @gemm_weight_rank(%a: tensor<8x64xf32>, %w: tensor<2x32x64xf32>) {
  // expected-error @+1 {{'te.gemm' op rhs (the weight) must be a static [N, K] matrix, got 'tensor<2x32x64xf32>'}}
  %y = te.gemm tn %a, %w : (tensor<8x64xf32>, tensor<2x32x64xf32>) -> tensor<8x32xf32>
  return
}

// -----

func.func @gemm_tn_features(%a: tensor<8x48xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.gemm' op lhs features 48 do not match the weight's in_features 64}}
  %y = te.gemm tn %a, %w : (tensor<8x48xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  return
}

// -----

func.func @gemm_nn_features(%a: tensor<8x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.gemm' op lhs features 64 do not match the weight's out_features 32}}
  %y = te.gemm nn %a, %w : (tensor<8x64xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

func.func @gemm_bias_shape(%a: tensor<8x64xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'te.gemm' op bias must be 'tensor<32xf32>', got 'tensor<64xf32>'}}
  %y = te.gemm tn %a, %w bias(%b) : (tensor<8x64xf32>, tensor<32x64xf32>, tensor<64xf32>) -> tensor<8x32xf32>
  return
}

// -----

func.func @gemm_result(%a: tensor<8x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.gemm' op result must be 'tensor<8x32xf32>', got 'tensor<8x64xf32>'}}
  %y = te.gemm tn %a, %w : (tensor<8x64xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

func.func @gemm_nt_rows(%dy: tensor<8x32xf32>, %x: tensor<4x64xf32>) {
  // expected-error @+1 {{'te.gemm' op lhs (dy) and rhs (x) must have the same leading dims, got 'tensor<8x32xf32>' and 'tensor<4x64xf32>'}}
  %y = te.gemm nt %dy, %x : (tensor<8x32xf32>, tensor<4x64xf32>) -> tensor<32x64xf32>
  return
}

// -----

func.func @gemm_nt_result(%dy: tensor<8x32xf32>, %x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.gemm' op result must be 'tensor<32x64xf32>', got 'tensor<64x32xf32>'}}
  %y = te.gemm nt %dy, %x : (tensor<8x32xf32>, tensor<8x64xf32>) -> tensor<64x32xf32>
  return
}

// -----

func.func @act_params(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{activation gelu has no parameter 'limit' (it takes none)}}
  %y = te.act gelu<limit = 7.0> %x : (tensor<8x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

func.func @act_gated_odd(%x: tensor<8x63xf32>) {
  // expected-error @+1 {{'te.act' op gated activation swiglu needs an even number of input features, got 63}}
  %y = te.act swiglu %x : (tensor<8x63xf32>) -> tensor<8x31xf32>
  return
}

// -----

func.func @act_result(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.act' op result must be 'tensor<8x32xf32>', got 'tensor<8x64xf32>'}}
  %y = te.act swiglu %x : (tensor<8x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

func.func @dact_grad(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.dact' op grad must be 'tensor<8x32xf32>', got 'tensor<8x64xf32>'}}
  %y = te.dact geglu %dy, %x : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

func.func @dact_result(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.dact' op result must be 'tensor<8x64xf32>', got 'tensor<8x64xbf16>'}}
  %y = te.dact relu %dy, %x : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xbf16>
  return
}

// -----

func.func @bias_grad_result(%dy: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.bias_grad' op result must be 'tensor<64xf32>', got 'tensor<8xf32>'}}
  %y = te.bias_grad %dy : (tensor<8x64xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @bad_dbias_dact(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.dbias_dact' op has no fused form for gated activation geglu}}
  %dx, %db = te.dbias_dact geglu %dy, %x : (tensor<8x64xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @bad_dbias_dact_shape(%dy: tensor<8x64xf32>, %x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.dbias_dact' op bias_grad must be 'tensor<64xf32>', got 'tensor<8xf32>'}}
  %dx, %db = te.dbias_dact gelu %dy, %x : (tensor<8x64xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8xf32>)
  return
}

// -----

func.func @bad_epilogue(%a: tensor<8x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.gemm' op only the nt (wgrad) GEMM produces a bias gradient}}
  %y, %db = te.gemm tn %a, %w : (tensor<8x64xf32>, tensor<32x64xf32>) -> (tensor<8x32xf32>, tensor<32xf32>)
  return
}

// -----

func.func @bad_epilogue_shape(%dy: tensor<8x32xf32>, %x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.gemm' op bias_grad must be 'tensor<32xf32>', got 'tensor<64xf32>'}}
  %dw, %db = te.gemm nt %dy, %x : (tensor<8x32xf32>, tensor<8x64xf32>) -> (tensor<32x64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @quantize_sr_recipe(%x: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op stochastic_rounding applies to nvfp4 (E2M1 values), got mxfp8}}
  %q = te.quantize %x {stochastic_rounding} : tensor<32x64xbf16> -> !te.qtensor<32x64xe4m3, #te.mxfp8, rowwise, blackwell>
  return
}

// -----

func.func @quantize_seed_without_sr(%x: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op seed keys stochastic rounding; it needs stochastic_rounding}}
  %q = te.quantize %x {seed = 3 : i64} : tensor<32x64xbf16> -> !te.qtensor<32x64xe2m1, #te.nvfp4<>, rowwise, blackwell>
  return
}

// -----

func.func @quantize_row_scaled(%x: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op row-scaled nvfp4 is quantized rowwise, with 1x16 blocks, rounding to nearest (TE's forward input quantizer; its backward is high precision), got '!te.qtensor<32x64xe2m1, #te.nvfp4<row_scaled = true>, both, blackwell, row_scaled>'}}
  %q = te.quantize %x : tensor<32x64xbf16> -> !te.qtensor<32x64xe2m1, #te.nvfp4<row_scaled = true>, both, blackwell, row_scaled>
  return
}

// -----

func.func @quantize_row_scaled_stochastic(%x: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op row-scaled nvfp4 is quantized rowwise, with 1x16 blocks, rounding to nearest}}
  %q = te.quantize %x {stochastic_rounding} : tensor<32x64xbf16> -> !te.qtensor<32x64xe2m1, #te.nvfp4<row_scaled = true>, rowwise, blackwell, row_scaled>
  return
}

// -----

func.func @quantize_nvfp4_amax(%x: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op nvfp4 records no amax (the recipe is stateless); drop the amax result}}
  %q, %a = te.quantize %x : tensor<32x64xbf16> -> !te.qtensor<32x64xe2m1, #te.nvfp4<>, rowwise, blackwell>, tensor<1xf32>
  return
}

// -----

func.func @quantize_shape(%x: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op result shape must be the input's ('tensor<32x64xbf16>'), got '!te.qtensor<64x32xe4m3, #te.fp8_current<>, rowwise, hopper>'}}
  %q, %a = te.quantize %x : tensor<32x64xbf16> -> !te.qtensor<64x32xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<1xf32>
  return
}

// -----

func.func @quantize_delayed_no_scales(%x: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op fp8-delayed takes its scale from the recipe state: scale(%scales[slot]) is required}}
  %q, %a = te.quantize %x : tensor<32x64xbf16> -> !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>
  return
}

// -----

func.func @quantize_current_scales(%x: tensor<32x64xbf16>, %s: tensor<3xf32>) {
  // expected-error @+1 {{'te.quantize' op fp8-current computes its scales from the tensor; scale(...) is only for fp8-delayed}}
  %q, %a = te.quantize %x scale(%s[0]) : tensor<32x64xbf16>, tensor<3xf32> -> !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<1xf32>
  return
}

// -----

func.func @quantize_slot_without_scales(%x: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op slot must be given exactly with scales}}
  %q, %a = te.quantize %x {slot = 1 : i64} : tensor<32x64xbf16> -> !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<1xf32>
  return
}

// -----

func.func @quantize_slot_range(%x: tensor<32x64xbf16>, %s: tensor<3xf32>) {
  // expected-error @+1 {{'te.quantize' op slot 3 is outside scales (3 slots)}}
  %q, %a = te.quantize %x scale(%s[3]) : tensor<32x64xbf16>, tensor<3xf32> -> !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>
  return
}

// -----

func.func @quantize_amax(%x: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op amax must be 'tensor<1xf32>', got 'tensor<2xf32>'}}
  %q, %a = te.quantize %x : tensor<32x64xbf16> -> !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<2xf32>
  return
}

// -----

func.func @drop_usage_not_both(%q: !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>) {
  // expected-error @+1 {{'te.drop_usage' op drops one usage of a 'both' tensor, got rowwise -> columnwise}}
  %c = te.drop_usage %q : !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper> -> !te.qtensor<32x64xe4m3, #te.fp8_current<>, columnwise, hopper>
  return
}

// -----

func.func @drop_usage_other_tensor(%q: !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>) {
  // expected-error @+1 {{'te.drop_usage' op result must be the input with usage columnwise ('!te.qtensor<32x64xe4m3, #te.fp8_current<>, columnwise, hopper>'), got '!te.qtensor<32x64xe5m2, #te.fp8_current<>, columnwise, hopper>'}}
  %c = te.drop_usage %q : !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper> -> !te.qtensor<32x64xe5m2, #te.fp8_current<>, columnwise, hopper>
  return
}

// -----

func.func @add_columnwise_block(%q: !te.qtensor<256x128xe4m3, #te.fp8_block<>, rowwise, hopper>) {
  // expected-error @+1 {{'te.add_columnwise' op makes the columnwise copy of per-tensor FP8 (fp8-delayed, fp8-current) on hopper, where it is the transpose of the rowwise bytes; got recipe fp8-block on hopper, whose columnwise copy is quantized from the high-precision tensor (block scales) or is the rowwise buffer itself}}
  %c = te.add_columnwise %q : !te.qtensor<256x128xe4m3, #te.fp8_block<>, rowwise, hopper> -> !te.qtensor<256x128xe4m3, #te.fp8_block<>, columnwise, hopper>
  return
}

// -----

func.func @add_columnwise_blackwell(%q: !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, blackwell>) {
  // expected-error @+1 {{'te.add_columnwise' op makes the columnwise copy of per-tensor FP8 (fp8-delayed, fp8-current) on hopper, where it is the transpose of the rowwise bytes; got recipe fp8-delayed on blackwell}}
  %c = te.add_columnwise %q : !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, blackwell> -> !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, columnwise, blackwell>
  return
}

// -----

func.func @add_columnwise_not_rowwise(%q: !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>) {
  // expected-error @+1 {{'te.add_columnwise' op input must be rowwise only (it has no columnwise copy yet), got usage both}}
  %c = te.add_columnwise %q : !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper> -> !te.qtensor<32x64xe4m3, #te.fp8_current<>, columnwise, hopper>
  return
}

// -----

func.func @add_columnwise_both(%q: !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>) {
  // expected-error @+1 {{'te.add_columnwise' op result must be the input with usage columnwise ('!te.qtensor<32x64xe4m3, #te.fp8_current<>, columnwise, hopper>'), got '!te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>'}}
  %c = te.add_columnwise %q : !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper> -> !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>
  return
}

// -----

func.func @gemm_mixed(%x: !te.qtensor<8x64xe4m3, #te.fp8_current<>, rowwise, hopper>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.gemm' op lhs and rhs must both be quantized or both high precision}}
  %y = te.gemm tn %x, %w : (!te.qtensor<8x64xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<32x64xbf16>) -> tensor<8x32xbf16>
  return
}

// -----

func.func @gemm_recipes(%x: !te.qtensor<8x64xe4m3, #te.fp8_current<>, rowwise, hopper>, %w: !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>) {
  // expected-error @+1 {{'te.gemm' op lhs and rhs are quantized under different recipes (#te.fp8_current<> and #te.fp8_delayed<>)}}
  %y = te.gemm tn %x, %w : (!te.qtensor<8x64xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>) -> tensor<8x32xbf16>
  return
}

// -----

func.func @gemm_e5m2(%dy: !te.qtensor<8x32xe5m2, #te.fp8_current<>, both, hopper>, %w: !te.qtensor<32x64xe5m2, #te.fp8_current<>, both, hopper>) {
  // expected-error @+1 {{'te.gemm' op an FP8 GEMM needs one E4M3 operand (E5M2 x E5M2 is not a GEMM TE runs)}}
  %y = te.gemm nn %dy, %w : (!te.qtensor<8x32xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<32x64xe5m2, #te.fp8_current<>, both, hopper>) -> tensor<8x64xbf16>
  return
}

// -----

func.func @gemm_usage(%dy: !te.qtensor<8x32xe5m2, #te.fp8_current<>, both, hopper>, %w: !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>) {
  // expected-error @+1 {{'te.gemm' op the nn GEMM reads rhs's columnwise copy, which '!te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>' lacks}}
  %y = te.gemm nn %dy, %w : (!te.qtensor<8x32xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>) -> tensor<8x64xbf16>
  return
}

// -----

func.func @gemm_quantized_shape(%x: !te.qtensor<8x64xe4m3, #te.fp8_current<>, rowwise, hopper>, %w: !te.qtensor<32x48xe4m3, #te.fp8_current<>, rowwise, hopper>) {
  // expected-error @+1 {{'te.gemm' op lhs features 64 do not match the weight's in_features 48}}
  %y = te.gemm tn %x, %w : (!te.qtensor<8x64xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<32x48xe4m3, #te.fp8_current<>, rowwise, hopper>) -> tensor<8x32xbf16>
  return
}

// -----

func.func @quantize_block_scales(%x: tensor<128x128xbf16>, %s: tensor<3xf32>) {
  // expected-error @+1 {{'te.quantize' op fp8-block computes its scales from the tensor; scale(...) is only for fp8-delayed}}
  %q = te.quantize %x scale(%s[0]) : tensor<128x128xbf16>, tensor<3xf32> -> !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>
  return
}

// -----

func.func @quantize_block_amax(%x: tensor<128x128xbf16>) {
  // expected-error @+1 {{'te.quantize' op fp8-block records no amax (the recipe is stateless); drop the amax result}}
  %q, %a = te.quantize %x : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>, tensor<1xf32>
  return
}

// -----

func.func @quantize_per_tensor_no_amax(%x: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op per-tensor FP8 records the amax: an amax result of type 'tensor<1xf32>' is required}}
  %q = te.quantize %x : tensor<32x64xbf16> -> !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>
  return
}

// -----

func.func @gemm_block_2d_both(%x: !te.qtensor<128x128xe4m3, #te.fp8_block<x_block_dim = 2, w_block_dim = 1>, rowwise, hopper, block_2d>, %w: !te.qtensor<256x128xe4m3, #te.fp8_block<x_block_dim = 2, w_block_dim = 1>, rowwise, hopper, block_2d>) {
  // expected-error @+1 {{'te.gemm' op both operands use 128x128 blocks (fp8-block multiplies at most one 2-D scaled operand)}}
  %y = te.gemm tn %x, %w : (!te.qtensor<128x128xe4m3, #te.fp8_block<x_block_dim = 2, w_block_dim = 1>, rowwise, hopper, block_2d>, !te.qtensor<256x128xe4m3, #te.fp8_block<x_block_dim = 2, w_block_dim = 1>, rowwise, hopper, block_2d>) -> tensor<128x256xbf16>
  return
}

// -----

// NVFP4's Hadamard transform cancels only between two transformed operands.
func.func @gemm_rht_one_side(%dy: !te.qtensor<64x32xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>, %x: !te.qtensor<64x48xe2m1, #te.nvfp4<>, both, blackwell, swizzled>) {
  // expected-error @+1 {{'te.gemm' op the nt GEMM reads lhs's Hadamard-transformed (rht) columnwise copy but an untransformed rhs; the transform cancels only when both operands carry it}}
  %dw = te.gemm nt %dy, %x : (!te.qtensor<64x32xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>, !te.qtensor<64x48xe2m1, #te.nvfp4<>, both, blackwell, swizzled>) -> tensor<32x48xbf16>
  return
}

// -----

// A dgrad reading a transformed weight copy.
func.func @gemm_rht_dgrad(%dy: !te.qtensor<64x32xe2m1, #te.nvfp4<>, rowwise, blackwell, swizzled>, %w: !te.qtensor<32x48xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>) {
  // expected-error @+1 {{'te.gemm' op the nn GEMM reads rhs's Hadamard-transformed (rht) columnwise copy but an untransformed lhs; the transform cancels only when both operands carry it}}
  %dx = te.gemm nn %dy, %w : (!te.qtensor<64x32xe2m1, #te.nvfp4<>, rowwise, blackwell, swizzled>, !te.qtensor<32x48xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>) -> tensor<64x48xbf16>
  return
}

// -----

func.func @gemm_arch(%x: !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>, %w: !te.qtensor<16x64xe4m3, #te.fp8_current<>, rowwise, blackwell>) {
  // expected-error @+1 {{'te.gemm' op lhs and rhs are laid out for different architectures (hopper and blackwell)}}
  %y = te.gemm tn %x, %w : (!te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<16x64xe4m3, #te.fp8_current<>, rowwise, blackwell>) -> tensor<32x16xbf16>
  return
}

// -----

func.func @quantize_mxfp8_amax(%x: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op mxfp8 records no amax (the recipe is stateless); drop the amax result}}
  %q, %a = te.quantize %x : tensor<32x64xbf16> -> !te.qtensor<32x64xe4m3, #te.mxfp8, rowwise, blackwell, swizzled>, tensor<1xf32>
  return
}

// -----

func.func @gemm_fast_accumulate_bf16(%x: tensor<32x64xbf16>, %w: tensor<16x64xbf16>) {
  // expected-error @+1 {{'te.gemm' op fast_accumulate applies to per-tensor FP8 GEMMs (TE forces split accumulation for the others)}}
  %y = te.gemm tn %x, %w {fast_accumulate} : (tensor<32x64xbf16>, tensor<16x64xbf16>) -> tensor<32x16xbf16>
  return
}

// -----

func.func @gemm_fast_accumulate_block(%x: !te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>, %w: !te.qtensor<256x128xe4m3, #te.fp8_block<>, rowwise, hopper, block_2d>) {
  // expected-error @+1 {{'te.gemm' op fast_accumulate applies to per-tensor FP8 GEMMs (TE forces split accumulation for the others)}}
  %y = te.gemm tn %x, %w {fast_accumulate} : (!te.qtensor<128x128xe4m3, #te.fp8_block<>, rowwise, hopper>, !te.qtensor<256x128xe4m3, #te.fp8_block<>, rowwise, hopper, block_2d>) -> tensor<128x256xbf16>
  return
}

// -----

func.func @quantize_amax_in_delayed(%x: tensor<32x64xbf16>, %s: tensor<3xf32>, %a: tensor<1xf32>) {
  // expected-error @+1 {{'te.quantize' op amax(...) supplies current scaling's amax; fp8-delayed takes no precomputed amax}}
  %q, %m = te.quantize %x scale(%s[0]) amax(%a) : tensor<32x64xbf16>, tensor<3xf32> amax tensor<1xf32> -> !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>
  return
}

// -----

func.func @quantize_amax_in_type(%x: tensor<32x64xbf16>, %a: tensor<2xf32>) {
  // expected-error @+1 {{'te.quantize' op amax(...) must be 'tensor<1xf32>', got 'tensor<2xf32>'}}
  %q = te.quantize %x amax(%a) : tensor<32x64xbf16> amax tensor<2xf32> -> !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>
  return
}

// -----

func.func @quantize_amax_in_and_result(%x: tensor<32x64xbf16>, %a: tensor<1xf32>) {
  // expected-error @+1 {{'te.quantize' op with amax(...) given there is no amax result (the amax recorded is the operand)}}
  %q, %m = te.quantize %x amax(%a) : tensor<32x64xbf16> amax tensor<1xf32> -> !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<1xf32>
  return
}

// -----

func.func @act_amax_type(%x: tensor<8x32xf32>) {
  // expected-error @+1 {{'te.act' op amax result must be 'tensor<1xf32>', got 'tensor<2xf32>'}}
  %y, %a = te.act gelu %x : (tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<2xf32>)
  return
}

// -----

func.func @dact_amax_type(%dy: tensor<8x32xf32>, %x: tensor<8x32xf32>) {
  // expected-error @+1 {{'te.dact' op amax result must be 'tensor<1xf32>', got 'tensor<4xf32>'}}
  %d, %a = te.dact gelu %dy, %x : (tensor<8x32xf32>, tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<4xf32>)
  return
}

// -----

func.func @dbias_dact_amax_type(%dy: tensor<8x32xf32>, %x: tensor<8x32xf32>) {
  // expected-error @+1 {{'te.dbias_dact' op amax result must be 'tensor<1xf32>', got 'tensor<3xf32>'}}
  %d, %db, %a = te.dbias_dact gelu %dy, %x : (tensor<8x32xf32>, tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<32xf32>, tensor<3xf32>)
  return
}

// -----

func.func @quantize_sr_2d(%w: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.quantize' op stochastic_rounding with 16x16 blocks (block_2d, TE's weights): the two copies of a 2-D scaled tensor must hold the same values}}
  %q = te.quantize %w {stochastic_rounding} : tensor<32x64xbf16> -> !te.qtensor<32x64xe2m1, #te.nvfp4<>, both, blackwell, block_2d, swizzled>
  return
}

// -----

func.func @act_quantize_current(%x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.act_quantize' op casts with fp8-delayed's given scale, got fp8-current: current scaling computes its scale from the amax first; te-fuse-quantize-amax handles it}}
  %q, %a = te.act_quantize gelu %x scale(%s[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  return
}

// -----

func.func @act_quantize_block(%x: tensor<128x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.act_quantize' op casts with fp8-delayed's given scale, got fp8-block, which scales blocks (use te.quantize of the activation)}}
  %q, %a = te.act_quantize gelu %x scale(%s[0]) : tensor<128x256xbf16>, tensor<6xf32> -> !te.qtensor<128x256xe4m3, #te.fp8_block<>, rowwise, hopper>, tensor<1xf32>
  return
}

// -----

func.func @act_quantize_gated_shape(%x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.act_quantize' op result shape must be the activation's output ('tensor<64x128xbf16>'), got '!te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>'}}
  %q, %a = te.act_quantize swiglu %x scale(%s[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return
}

// -----

func.func @act_quantize_slot(%x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.act_quantize' op slot 6 is outside scales (6 slots)}}
  %q, %a = te.act_quantize gelu %x scale(%s[6]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return
}

// -----

func.func @act_quantize_amax(%x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.act_quantize' op amax result must be 'tensor<1xf32>', got 'tensor<2xf32>'}}
  %q, %a = te.act_quantize gelu %x scale(%s[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<2xf32>
  return
}

// -----

func.func @act_quantize_params(%x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{activation gelu has no parameter 'limit' (it takes none)}}
  %q, %a = te.act_quantize gelu<limit = 7.0> %x scale(%s[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return
}

// -----

func.func @dact_quantize_grad(%dy: tensor<64x256xbf16>, %x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.dact_quantize' op grad must be 'tensor<64x128xbf16>', got 'tensor<64x256xbf16>'}}
  %q, %a = te.dact_quantize swiglu %dy, %x scale(%s[0]) : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return
}

// -----

func.func @dact_quantize_shape(%dy: tensor<64x128xbf16>, %x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.dact_quantize' op result shape must be the activation's output ('tensor<64x256xbf16>'), got '!te.qtensor<64x128xe5m2, #te.fp8_delayed<>, both, hopper>'}}
  %q, %a = te.dact_quantize swiglu %dy, %x scale(%s[0]) : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x128xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return
}

// -----

func.func @dact_quantize_current(%dy: tensor<64x256xbf16>, %x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.dact_quantize' op casts with fp8-delayed's given scale, got fp8-current: current scaling computes its scale from the amax first; te-fuse-quantize-amax handles it}}
  %q, %a = te.dact_quantize gelu %dy, %x scale(%s[0]) : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  return
}

// -----

func.func @dact_quantize_slot(%dy: tensor<64x256xbf16>, %x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.dact_quantize' op slot -1 is outside scales (6 slots)}}
  %q, %a = te.dact_quantize gelu %dy, %x scale(%s[-1]) : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  return
}

// -----

func.func @dact_quantize_gated_dbias(%dy: tensor<64x128xbf16>, %x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.dact_quantize' op bias_grad is only for non-gated activations (gated activation geglu has no fused dbias+dact kernel)}}
  %q, %a, %db = te.dact_quantize geglu %dy, %x scale(%s[0]) : tensor<64x128xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>
  return
}

// -----

func.func @dact_quantize_dbias_shape(%dy: tensor<64x256xbf16>, %x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.dact_quantize' op bias_grad must be 'tensor<256xbf16>', got 'tensor<256xf32>'}}
  %q, %a, %db = te.dact_quantize gelu %dy, %x scale(%s[0]) : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xf32>
  return
}

// -----

func.func @norm_quantize_rank(%x: tensor<128xbf16>, %g: tensor<128xbf16>) {
  // expected-error @+1 {{'te.norm_quantize' op input must be [..., features] with a static feature dim, got 'tensor<128xbf16>'}}
  %q, %rs, %a = te.norm_quantize %x norm rms_norm(%g) {eps = 1.0e-5 : f64} : (tensor<128xbf16>, tensor<128xbf16>) -> (!te.qtensor<128xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<1xf32>, tensor<1xf32>)
  return
}

// -----

func.func @norm_quantize_rms_beta(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.norm_quantize' op rms_norm has no beta}}
  %q, %rs, %a = te.norm_quantize %x norm rms_norm(%g, %b) {eps = 1.0e-5 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<64xf32>, tensor<1xf32>)
  return
}

// -----

func.func @norm_quantize_gamma(%x: tensor<64x128xbf16>, %g: tensor<128xf32>) {
  // expected-error @+1 {{'te.norm_quantize' op gamma must be 'tensor<128xbf16>', got 'tensor<128xf32>'}}
  %q, %rs, %a = te.norm_quantize %x norm rms_norm(%g) {eps = 1.0e-5 : f64} : (tensor<64x128xbf16>, tensor<128xf32>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<64xf32>, tensor<1xf32>)
  return
}

// -----

func.func @norm_quantize_beta(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<64xbf16>) {
  // expected-error @+1 {{'te.norm_quantize' op beta must be 'tensor<128xbf16>', got 'tensor<64xbf16>'}}
  %q, %rs, %a, %mu = te.norm_quantize %x norm layer_norm(%g, %b) {eps = 1.0e-5 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<64xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<64xf32>, tensor<1xf32>, tensor<64xf32>)
  return
}

// -----

func.func @norm_quantize_mu(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.norm_quantize' op layer_norm has a mean (mu)}}
  %q, %rs, %a = te.norm_quantize %x norm layer_norm(%g, %b) {eps = 1.0e-5 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<64xf32>, tensor<1xf32>)
  return
}

// -----

func.func @norm_quantize_no_mu(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.norm_quantize' op rms_norm has no mean (mu)}}
  %q, %rs, %a, %mu = te.norm_quantize %x norm rms_norm(%g) {eps = 1.0e-5 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<64xf32>, tensor<1xf32>, tensor<64xf32>)
  return
}

// -----

func.func @norm_quantize_rsigma(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.norm_quantize' op rsigma must be 'tensor<64xf32>', got 'tensor<32xf32>'}}
  %q, %rs, %a = te.norm_quantize %x norm rms_norm(%g) {eps = 1.0e-5 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<32xf32>, tensor<1xf32>)
  return
}

// -----

func.func @norm_quantize_mu_shape(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.norm_quantize' op mu must be 'tensor<64xf32>', got 'tensor<128xf32>'}}
  %q, %rs, %a, %mu = te.norm_quantize %x norm layer_norm(%g, %b) {eps = 1.0e-5 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<64xf32>, tensor<1xf32>, tensor<128xf32>)
  return
}

// -----

func.func @norm_quantize_block(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.norm_quantize' op casts to per-tensor FP8 (fp8-delayed or fp8-current), got fp8-block, which scales blocks (use te.quantize of the norm output)}}
  %q, %rs, %a = te.norm_quantize %x norm rms_norm(%g) {eps = 1.0e-5 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_block<>, rowwise, hopper>, tensor<64xf32>, tensor<1xf32>)
  return
}

// -----

func.func @norm_quantize_shape(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.norm_quantize' op result shape must be the input's ('tensor<64x128xbf16>'), got '!te.qtensor<32x128xe4m3, #te.fp8_current<>, both, hopper>'}}
  %q, %rs, %a = te.norm_quantize %x norm rms_norm(%g) {eps = 1.0e-5 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>) -> (!te.qtensor<32x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<64xf32>, tensor<1xf32>)
  return
}

// -----

func.func @norm_quantize_delayed_no_scale(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.norm_quantize' op fp8-delayed takes its scale from the recipe state: scale(%scales[slot]) is required}}
  %q, %rs, %a = te.norm_quantize %x norm rms_norm(%g) {eps = 1.0e-5 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<64xf32>, tensor<1xf32>)
  return
}

// -----

func.func @norm_quantize_current_scale(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.norm_quantize' op fp8-current computes its scale from the output's amax; scale(...) is only for fp8-delayed}}
  %q, %rs, %a = te.norm_quantize %x norm rms_norm(%g) scale(%s[0]) {eps = 1.0e-5 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<6xf32>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<64xf32>, tensor<1xf32>)
  return
}

// -----

func.func @norm_quantize_slot_without_scales(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.norm_quantize' op slot must be given exactly with scales}}
  %q, %rs, %a = te.norm_quantize %x norm rms_norm(%g) {eps = 1.0e-5 : f64, slot = 1 : i64} : (tensor<64x128xbf16>, tensor<128xbf16>) -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<64xf32>, tensor<1xf32>)
  return
}

// -----

func.func @norm_quantize_slot(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.norm_quantize' op slot 6 is outside scales (6 slots)}}
  %q, %rs, %a = te.norm_quantize %x norm rms_norm(%g) scale(%s[6]) {eps = 1.0e-5 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<6xf32>) -> (!te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<64xf32>, tensor<1xf32>)
  return
}

// -----

func.func @norm_quantize_amax(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.norm_quantize' op amax result must be 'tensor<1xf32>', got 'tensor<2xf32>'}}
  %q, %rs, %a = te.norm_quantize %x norm rms_norm(%g) scale(%s[0]) {eps = 1.0e-5 : f64} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<6xf32>) -> (!te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<64xf32>, tensor<2xf32>)
  return
}

// -----

// te.gemm_act: an activation cuBLASLt's epilogue does not compute.
func.func @gemm_act_activation(%x: tensor<8x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.gemm_act' op activation must be gelu (cuBLASLt's GEMM epilogue computes GELU, the tanh approximation, only), got relu}}
  %y = te.gemm_act relu %x, %w : (tensor<8x64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  return
}

// -----

// te.gemm_act: the input is not [..., features].
func.func @gemm_act_lhs_rank(%x: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.gemm_act' op lhs must be [..., features] with a static feature dim, got 'tensor<64xf32>'}}
  %y = te.gemm_act gelu %x, %w : (tensor<64xf32>, tensor<32x64xf32>) -> tensor<32xf32>
  return
}

// -----

// te.gemm_act: input and weight of different element types.
func.func @gemm_act_rhs_dtype(%x: tensor<8x64xf32>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.gemm_act' op rhs element type 'bf16' does not match lhs 'f32'}}
  %y = te.gemm_act gelu %x, %w : (tensor<8x64xf32>, tensor<32x64xbf16>) -> tensor<8x32xf32>
  return
}

// -----

// te.gemm_act: the weight is not a static matrix.
func.func @gemm_act_weight(%x: tensor<8x64xf32>, %w: tensor<?x64xf32>) {
  // expected-error @+1 {{'te.gemm_act' op rhs (the weight) must be a static [N, K] matrix, got 'tensor<?x64xf32>'}}
  %y = te.gemm_act gelu %x, %w : (tensor<8x64xf32>, tensor<?x64xf32>) -> tensor<8x32xf32>
  return
}

// -----

// te.gemm_act: K of the input is not the weight's.
func.func @gemm_act_features(%x: tensor<8x48xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.gemm_act' op lhs features 48 do not match the weight's in_features 64}}
  %y = te.gemm_act gelu %x, %w : (tensor<8x48xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  return
}

// -----

// te.gemm_act: a bias of the wrong length.
func.func @gemm_act_bias(%x: tensor<8x64xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'te.gemm_act' op bias must be 'tensor<32xf32>', got 'tensor<64xf32>'}}
  %y = te.gemm_act gelu %x, %w bias(%b) : (tensor<8x64xf32>, tensor<32x64xf32>, tensor<64xf32>) -> tensor<8x32xf32>
  return
}

// -----

// te.gemm_act: the result is not [..., N] of the input's dtype.
func.func @gemm_act_result(%x: tensor<2x4x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.gemm_act' op result must be 'tensor<2x4x32xf32>', got 'tensor<8x32xf32>'}}
  %y = te.gemm_act gelu %x, %w : (tensor<2x4x64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  return
}

// -----

// te.gemm_act: the pre-activation is not of the result's type.
func.func @gemm_act_pre(%x: tensor<8x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.gemm_act' op pre must be 'tensor<8x32xbf16>', got 'tensor<8x32xf32>'}}
  %y, %pre = te.gemm_act gelu %x, %w : (tensor<8x64xbf16>, tensor<32x64xbf16>) -> (tensor<8x32xbf16>, tensor<8x32xf32>)
  return
}

// -----

// te.gemm_dact: an activation cuBLASLt's epilogue does not compute.
func.func @gemm_dact_activation(%dy: tensor<8x32xf32>, %w: tensor<32x64xf32>, %pre: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.gemm_dact' op activation must be gelu (cuBLASLt's GEMM epilogue computes GELU, the tanh approximation, only), got gelu_erf}}
  %dx = te.gemm_dact gelu_erf %dy, %w pre(%pre) : (tensor<8x32xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

// te.gemm_dact: the gradient is not [..., features].
func.func @gemm_dact_lhs_rank(%dy: tensor<32xf32>, %w: tensor<32x64xf32>, %pre: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.gemm_dact' op lhs must be [..., features] with a static feature dim, got 'tensor<32xf32>'}}
  %dx = te.gemm_dact gelu %dy, %w pre(%pre) : (tensor<32xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

// te.gemm_dact: gradient and weight of different element types.
func.func @gemm_dact_rhs_dtype(%dy: tensor<8x32xf32>, %w: tensor<32x64xf16>, %pre: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.gemm_dact' op rhs element type 'f16' does not match lhs 'f32'}}
  %dx = te.gemm_dact gelu %dy, %w pre(%pre) : (tensor<8x32xf32>, tensor<32x64xf16>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

// te.gemm_dact: the weight is not a matrix.
func.func @gemm_dact_weight(%dy: tensor<8x32xf32>, %w: tensor<2x32x64xf32>, %pre: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.gemm_dact' op rhs (the weight) must be a static [N, K] matrix, got 'tensor<2x32x64xf32>'}}
  %dx = te.gemm_dact gelu %dy, %w pre(%pre) : (tensor<8x32xf32>, tensor<2x32x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

// te.gemm_dact: N of the gradient is not the weight's.
func.func @gemm_dact_features(%dy: tensor<8x64xf32>, %w: tensor<32x64xf32>, %pre: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.gemm_dact' op lhs features 64 do not match the weight's out_features 32}}
  %dx = te.gemm_dact gelu %dy, %w pre(%pre) : (tensor<8x64xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

// te.gemm_dact: the pre-activation is not [..., K] of the gradient's rows.
func.func @gemm_dact_pre(%dy: tensor<8x32xf32>, %w: tensor<32x64xf32>, %pre: tensor<4x64xf32>) {
  // expected-error @+1 {{'te.gemm_dact' op pre must be 'tensor<8x64xf32>', got 'tensor<4x64xf32>'}}
  %dx = te.gemm_dact gelu %dy, %w pre(%pre) : (tensor<8x32xf32>, tensor<32x64xf32>, tensor<4x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

// te.gemm_dact: the result is not of the pre-activation's type.
func.func @gemm_dact_result(%dy: tensor<8x32xf32>, %w: tensor<32x64xf32>, %pre: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.gemm_dact' op result must be 'tensor<8x64xf32>', got 'tensor<8x64xbf16>'}}
  %dx = te.gemm_dact gelu %dy, %w pre(%pre) : (tensor<8x32xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> tensor<8x64xbf16>
  return
}

// -----

func.func @act_loose_param(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.act' op 'alpha' is a parameter of the activation: write clamped_swiglu<alpha = ...> after `act` (or after the op name), not an attribute}}
  %y = te.act clamped_swiglu %x {alpha = 1.5 : f64} : (tensor<8x64xf32>) -> tensor<8x32xf32>
  return
}

// -----

// te.dbias_quantize: the input has no static feature dim.
func.func @dbias_quantize_rank(%x: tensor<256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.dbias_quantize' op input must be [..., features] with a static feature dim, got 'tensor<256xbf16>'}}
  %q, %a, %db = te.dbias_quantize %x scale(%s[0]) : tensor<256xbf16>, tensor<6xf32> -> !te.qtensor<256xe5m2, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>, tensor<256xbf16>
  return
}

// -----

// te.dbias_quantize: a block-scaled recipe (the bias gradient is summed
// separately).
func.func @dbias_quantize_block(%x: tensor<64x256xbf16>) {
  // expected-error @+1 {{'te.dbias_quantize' op casts to per-tensor FP8 (fp8-delayed or fp8-current), got mxfp8, which scales blocks (use te.quantize and te.bias_grad)}}
  %q, %a, %db = te.dbias_quantize %x : tensor<64x256xbf16> -> !te.qtensor<64x256xe5m2, #te.mxfp8<>, both, blackwell>, tensor<1xf32>, tensor<256xbf16>
  return
}

// -----

// te.dbias_quantize: the result's shape is not the input's.
func.func @dbias_quantize_shape(%x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.dbias_quantize' op result shape must be the input's ('tensor<64x256xbf16>'), got '!te.qtensor<32x256xe5m2, #te.fp8_delayed<>, both, hopper>'}}
  %q, %a, %db = te.dbias_quantize %x scale(%s[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<32x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>
  return
}

// -----

// te.dbias_quantize: delayed scaling without its scale.
func.func @dbias_quantize_no_scale(%x: tensor<64x256xbf16>) {
  // expected-error @+1 {{'te.dbias_quantize' op fp8-delayed takes its scale from the recipe state: scale(%scales[slot]) is required}}
  %q, %a, %db = te.dbias_quantize %x : tensor<64x256xbf16> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>
  return
}

// -----

// te.dbias_quantize: current scaling given a scale.
func.func @dbias_quantize_current_scale(%x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.dbias_quantize' op fp8-current computes its scale from the amax; scale(...) is only for fp8-delayed}}
  %q, %a, %db = te.dbias_quantize %x scale(%s[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_current<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>
  return
}

// -----

// te.dbias_quantize: the slot is outside the scales.
func.func @dbias_quantize_slot(%x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.dbias_quantize' op slot 6 is outside scales (6 slots)}}
  %q, %a, %db = te.dbias_quantize %x scale(%s[6]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>
  return
}

// -----

// te.dbias_quantize: a slot without scales (generic form: the custom one
// ties them).
func.func @dbias_quantize_slot_without_scales(%x: tensor<64x256xbf16>) {
  // expected-error @+1 {{'te.dbias_quantize' op slot must be given exactly with scales}}
  %q, %a, %db = "te.dbias_quantize"(%x) {slot = 0 : i64} : (tensor<64x256xbf16>) -> (!te.qtensor<64x256xe5m2, #te.fp8_current<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>)
  return
}

// -----

// te.dbias_quantize: the amax is not one fp32.
func.func @dbias_quantize_amax(%x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.dbias_quantize' op amax result must be 'tensor<1xf32>', got 'tensor<2xf32>'}}
  %q, %a, %db = te.dbias_quantize %x scale(%s[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<2xf32>, tensor<256xbf16>
  return
}

// -----

// te.dbias_quantize: the bias gradient is not [N] of the input's dtype.
func.func @dbias_quantize_dbias(%x: tensor<64x256xbf16>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'te.dbias_quantize' op bias_grad must be 'tensor<256xbf16>', got 'tensor<256xf32>'}}
  %q, %a, %db = te.dbias_quantize %x scale(%s[0]) : tensor<64x256xbf16>, tensor<6xf32> -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xf32>
  return
}

// -----

func.func @gemm_accumulate_layout(%a: tensor<8x32xbf16>, %w: tensor<32x64xbf16>, %m: tensor<8x64xf32>) {
  // expected-error @+1 {{'te.gemm' op only the nt (wgrad) GEMM accumulates into main_grad}}
  %y = te.gemm nn %a, %w accumulate(%m) : (tensor<8x32xbf16>, tensor<32x64xbf16>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

func.func @gemm_accumulate_dtype(%dy: tensor<16x32xbf16>, %x: tensor<16x64xbf16>, %m: tensor<32x64xbf16>) {
  // expected-error @+1 {{'te.gemm' op accumulate}}
  %dw = te.gemm nt %dy, %x accumulate(%m) : (tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<32x64xbf16>) -> tensor<32x64xbf16>
  return
}

// -----

func.func @gemm_accumulate_result(%dy: tensor<16x32xbf16>, %x: tensor<16x64xbf16>, %m: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.gemm' op result}}
  %dw = te.gemm nt %dy, %x accumulate(%m) : (tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<32x64xf32>) -> tensor<32x64xbf16>
  return
}

// -----

func.func @gemm_accumulate_bias_grad(%dy: tensor<16x32xbf16>, %x: tensor<16x64xbf16>, %m: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.gemm' op a GEMM accumulating into main_grad produces no bias gradient}}
  %dw, %db = te.gemm nt %dy, %x accumulate(%m) : (tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<32x64xf32>) -> (tensor<32x64xf32>, tensor<32xbf16>)
  return
}
