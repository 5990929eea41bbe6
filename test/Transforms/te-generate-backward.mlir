// RUN: te-opt %s --te-generate-backward --split-input-file | FileCheck %s
// RUN: te-opt %s --te-generate-backward --split-input-file | te-opt --split-input-file --verify-roundtrip -o /dev/null
// RUN: te-opt %s --te-generate-backward --split-input-file --mlir-print-op-generic | te-opt --split-input-file | FileCheck %s
//
// te-generate-backward: @f_fwd returns @f's results and then the saved
// tensors nobody else holds; @f_bwd takes the whole bundle (aliases marked
// with the forward argument/result they are) and one gradient per result,
// and returns one gradient per argument.

// LayerNormLinear, bf16, with beta and bias: x, gamma and W alias forward
// arguments 0, 1 and 3; beta (argument 2) is not needed by the backward;
// ln_out, mu and rsigma are saved. Gradients come back for all 5 inputs.
// The inference entry stays as it was.
// CHECK-LABEL: func.func @lnl_bias(
// CHECK-NOT: te.saved
// CHECK: return
// CHECK-LABEL: func.func @lnl_bias_fwd(
// CHECK-SAME: -> (tensor<16x32xbf16>, tensor<16x64xbf16> {te.saved = "layernorm_linear_0.ln_out"}, tensor<16xf32> {te.saved = "layernorm_linear_0.mu"}, tensor<16xf32> {te.saved = "layernorm_linear_0.rsigma"})
// CHECK-SAME: attributes {te.forward_of = @lnl_bias}
// CHECK:      %[[Y:.*]] = te.layernorm_linear
// CHECK-NEXT: %[[LN:.*]] = te.saved %[[Y]]["ln_out"] : tensor<16x32xbf16> -> tensor<16x64xbf16>
// CHECK-NEXT: %[[MU:.*]] = te.saved %[[Y]]["mu"]
// CHECK-NEXT: %[[RS:.*]] = te.saved %[[Y]]["rsigma"]
// CHECK-NEXT: return %[[Y]], %[[LN]], %[[MU]], %[[RS]]
// CHECK-LABEL: func.func @lnl_bias_bwd(
// CHECK-SAME: %[[X:.*]]: tensor<16x64xbf16> {te.alias = "input:0", te.saved = "layernorm_linear_0.input"}
// CHECK-SAME: %[[G:.*]]: tensor<64xbf16> {te.alias = "input:1", te.saved = "layernorm_linear_0.ln_weight"}
// CHECK-SAME: %[[W:.*]]: tensor<32x64xbf16> {te.alias = "input:3", te.saved = "layernorm_linear_0.weight"}
// CHECK-SAME: %[[BLN:.*]]: tensor<16x64xbf16> {te.saved = "layernorm_linear_0.ln_out"}
// CHECK-SAME: %[[BMU:.*]]: tensor<16xf32> {te.saved = "layernorm_linear_0.mu"}
// CHECK-SAME: %[[BRS:.*]]: tensor<16xf32> {te.saved = "layernorm_linear_0.rsigma"}
// CHECK-SAME: %[[DY:.*]]: tensor<16x32xbf16> {te.grad_of = "output:0"}
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"}, tensor<64xbf16> {te.grad_of = "input:2"}, tensor<32x64xbf16> {te.grad_of = "input:3"}, tensor<32xbf16> {te.grad_of = "input:4"})
// CHECK-NEXT: %[[D:.*]]:5 = te.layernorm_linear_bwd %[[DY]] input(%[[X]]) norm layer_norm(%[[G]]) mu(%[[BMU]]) rsigma(%[[BRS]]) weight(%[[W]]) ln_out(%[[BLN]]) {with_bias, with_ln_bias}
// CHECK-NEXT: return %[[D]]#0, %[[D]]#1, %[[D]]#2, %[[D]]#3, %[[D]]#4
func.func @lnl_bias(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w: tensor<32x64xbf16>, %bias: tensor<32xbf16>) -> tensor<16x32xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// RMSNorm with the norm output returned: the saved norm output is the
// caller's result #1 (alias output:1), RMSNorm saves no mean, and the norm
// output's gradient is a second, optional gradient argument fed to the
// backward op.
// CHECK-LABEL: func.func @rms_ln_out_fwd(
// CHECK-SAME: -> (tensor<2x8x32xf32>, tensor<2x8x64xf32>, tensor<16xf32> {te.saved = "layernorm_linear_0.rsigma"})
// CHECK-NOT: "mu"
// CHECK-LABEL: func.func @rms_ln_out_bwd(
// CHECK-SAME: %[[LN:[^:]*]]: tensor<2x8x64xf32> {te.alias = "output:1", te.saved = "layernorm_linear_0.ln_out"}
// CHECK-SAME: %[[RS:[^:]*]]: tensor<16xf32> {te.saved = "layernorm_linear_0.rsigma"}
// CHECK-SAME: %[[DY:[^:]*]]: tensor<2x8x32xf32> {te.grad_of = "output:0"}
// CHECK-SAME: %[[DLN:[^:]*]]: tensor<2x8x64xf32> {te.grad_of = "output:1", te.optional_grad}
// CHECK: te.layernorm_linear_bwd %[[DY]] ln_grad(%[[DLN]]) input({{.*}}) norm rms_norm({{.*}}) rsigma(%[[RS]]) weight({{.*}}) ln_out(%[[LN]]) {zero_centered_gamma}
// CHECK-SAME: -> (tensor<2x8x64xf32>, tensor<64xf32>, tensor<32x64xf32>)
func.func @rms_ln_out(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x64xf32>) {
  %y, %ln = te.layernorm_linear %x norm rms_norm(%g) weight(%w) {return_layernorm_output, zero_centered_gamma} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x64xf32>)
  return %y, %ln : tensor<2x8x32xf32>, tensor<2x8x64xf32>
}

// -----

// FP8 delayed scaling: the weight is saved as its quantized workspace (both
// usages) instead of aliasing the bf16 parameter, and the norm output keeps
// only its columnwise copy (for the wgrad GEMM), as TransformerEngine does.
// CHECK-LABEL: func.func @lnl_fp8_fwd(
// CHECK-SAME: !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, both, hopper> {te.saved = "layernorm_linear_0.weight"}
// CHECK-SAME: !te.qtensor<16x64xe4m3, #te.fp8_delayed<>, columnwise, hopper> {te.saved = "layernorm_linear_0.ln_out"}
// CHECK: te.saved %{{.*}}["weight"] : tensor<16x32xbf16> -> !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, both, hopper>
// CHECK: te.saved %{{.*}}["ln_out"] : tensor<16x32xbf16> -> !te.qtensor<16x64xe4m3, #te.fp8_delayed<>, columnwise, hopper>
// CHECK-LABEL: func.func @lnl_fp8_bwd(
// CHECK-NOT: te.alias = "input:2"
// CHECK: te.layernorm_linear_bwd {{.*}} weight(%{{.*}}) ln_out(%{{.*}}) recipe(#te.fp8_delayed<>) scales(%{{.*}}) : ({{.*}}, !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, both, hopper>, !te.qtensor<16x64xe4m3, #te.fp8_delayed<>, columnwise, hopper>, tensor<2xf32>)
func.func @lnl_fp8(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %w: tensor<32x64xbf16>) -> tensor<16x32xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) recipe(#te.fp8_delayed<>) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// LayerNormMLP with GELU and all biases, bf16: saves ln_out, the
// pre-activation fc1_out (bias included) and act_out, plus the statistics;
// both weights alias arguments; 7 gradients.
// CHECK-LABEL: func.func @mlp_gelu_fwd(
// CHECK-SAME: -> (tensor<16x64xbf16>, tensor<16x64xbf16> {te.saved = "layernorm_mlp_0.ln_out"}, tensor<16x128xbf16> {te.saved = "layernorm_mlp_0.fc1_out"}, tensor<16x128xbf16> {te.saved = "layernorm_mlp_0.act_out"}, tensor<16xf32> {te.saved = "layernorm_mlp_0.mu"}, tensor<16xf32> {te.saved = "layernorm_mlp_0.rsigma"})
// CHECK-LABEL: func.func @mlp_gelu_bwd(
// CHECK-SAME: tensor<128x64xbf16> {te.alias = "input:3", te.saved = "layernorm_mlp_0.fc1_weight"}
// CHECK-SAME: tensor<64x128xbf16> {te.alias = "input:5", te.saved = "layernorm_mlp_0.fc2_weight"}
// CHECK: %[[D:.*]]:7 = te.layernorm_mlp_bwd {{.*}} act gelu {{.*}} {with_fc1_bias, with_fc2_bias, with_ln_bias}
// CHECK-SAME: -> (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>)
func.func @mlp_gelu(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<16x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// RMSNorm + SwiGLU under MXFP8: quantized saves keep both usages (TE saves
// LayerNormMLP's quantized tensors as they are) but the norm output, which
// keeps the columnwise copy FC1's wgrad reads; fc1_out is high precision
// and twice the FFN width.
// CHECK-LABEL: func.func @mlp_swiglu_fwd(
// CHECK: te.saved %{{.*}}["ln_out"] : tensor<32x64xbf16> -> !te.qtensor<32x64xe4m3, #te.mxfp8, columnwise, hopper, swizzled>
// CHECK: te.saved %{{.*}}["fc1_weight"] : tensor<32x64xbf16> -> !te.qtensor<256x64xe4m3, #te.mxfp8, both, hopper, swizzled>
// CHECK: te.saved %{{.*}}["fc1_out"] : tensor<32x64xbf16> -> tensor<32x256xbf16>
// CHECK: te.saved %{{.*}}["act_out"] : tensor<32x64xbf16> -> !te.qtensor<32x128xe4m3, #te.mxfp8, both, hopper, swizzled>
// CHECK: te.saved %{{.*}}["fc2_weight"] : tensor<32x64xbf16> -> !te.qtensor<64x128xe4m3, #te.mxfp8, both, hopper, swizzled>
// CHECK: te.saved %{{.*}}["rsigma"]
// CHECK-LABEL: func.func @mlp_swiglu_bwd(
// CHECK: te.layernorm_mlp_bwd {{.*}} norm rms_norm({{.*}}) rsigma({{.*}}) {{.*}} act swiglu {{.*}} recipe(#te.mxfp8)
// CHECK-SAME: -> (tensor<32x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>)
func.func @mlp_swiglu(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<256x64xbf16>, %w2: tensor<64x128xbf16>) -> tensor<32x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) recipe(#te.mxfp8) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<32x64xbf16>
  return %y : tensor<32x64xbf16>
}

// -----

// A plain Linear under current scaling saves its input's columnwise copy and
// the weight workspace; bf16 saves nothing of its own.
// CHECK-LABEL: func.func @linear_fp8_fwd(
// CHECK-SAME: -> (tensor<16x32xbf16>, !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper> {te.saved = "linear_0.input"}, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper> {te.saved = "linear_0.weight"})
// CHECK-LABEL: func.func @linear_fp8_bwd(
// CHECK: te.linear_bwd %{{.*}} input(%{{.*}}) weight(%{{.*}}) recipe(#te.fp8_current<>) {with_bias}
// CHECK-SAME: -> (tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>)
// CHECK-LABEL: func.func @linear_bf16_fwd(
// CHECK-SAME: -> tensor<16x32xbf16>
// CHECK-LABEL: func.func @linear_bf16_bwd(
// CHECK-SAME: %[[X:.*]]: tensor<16x64xbf16> {te.alias = "input:0", te.saved = "linear_0.input"}, %[[W:.*]]: tensor<32x64xbf16> {te.alias = "input:1", te.saved = "linear_0.weight"}, %[[DY:.*]]: tensor<16x32xbf16> {te.grad_of = "output:0"})
// CHECK: te.linear_bwd %[[DY]] input(%[[X]]) weight(%[[W]])
// CHECK-SAME: -> (tensor<16x64xbf16>, tensor<32x64xbf16>)
func.func @linear_fp8(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16>, %b: tensor<32xbf16>) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w, %b) recipe(#te.fp8_current<>) : (tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}
func.func @linear_bf16(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w) : (tensor<16x64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// Checkpointing: the forward saves nothing of its own (every bundle entry is
// an argument), and the backward recomputes norm + FC1 + activation in a
// te.recompute region from those inputs, then runs the usual backward on
// the recomputed tensors. FC2's output is not yielded (dead). The residual
// add sends the output gradient to the input as well.
// CHECK-LABEL: func.func @mlp_ckpt_fwd(
// CHECK-SAME: -> tensor<64x128xbf16> attributes
// CHECK: te.layernorm_mlp {{.*}} {checkpoint}
// CHECK-NOT: te.saved
// CHECK: return
// CHECK-LABEL: func.func @mlp_ckpt_bwd(
// CHECK-SAME: %[[X:[^:]*]]: tensor<64x128xbf16> {te.alias = "input:0", te.saved = "layernorm_mlp_0.input"}
// CHECK-SAME: %[[G:[^:]*]]: tensor<128xbf16> {te.alias = "input:1", te.saved = "layernorm_mlp_0.ln_weight"}
// CHECK-SAME: %[[W1:[^:]*]]: tensor<512x128xbf16> {te.alias = "input:2", te.saved = "layernorm_mlp_0.fc1_weight"}
// CHECK-SAME: %[[W2:[^:]*]]: tensor<128x256xbf16> {te.alias = "input:3", te.saved = "layernorm_mlp_0.fc2_weight"}
// CHECK-SAME: %[[DY:[^:]*]]: tensor<64x128xbf16> {te.grad_of = "output:0"}
// CHECK-NEXT: %[[R:.*]]:6 = te.recompute(%[[X]], %[[G]], %[[W1]], %[[W2]])
// The recomputed act_out is rowwise, as the non-checkpointed one (its
// transpose is made for FC2's wgrad, TE §2.5).
// CHECK-SAME: -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, columnwise, hopper>, !te.qtensor<512x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<64x512xbf16>, !te.qtensor<64x256xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<128x256xe4m3, #te.fp8_current<>, both, hopper>, tensor<64xf32>)
// CHECK-NEXT: ^bb0(%[[A0:.*]]: tensor<64x128xbf16>, %[[A1:.*]]: tensor<128xbf16>, %[[A2:.*]]: tensor<512x128xbf16>, %[[A3:.*]]: tensor<128x256xbf16>):
// CHECK-NEXT: %[[O:.*]] = te.layernorm_mlp %[[A0]] norm rms_norm(%[[A1]]) fc1(%[[A2]]) act swiglu fc2(%[[A3]]) recipe(#te.fp8_current<>) :
// CHECK-NEXT: %[[S0:.*]] = te.saved %[[O]]["ln_out"]
// CHECK-NEXT: %[[S1:.*]] = te.saved %[[O]]["fc1_weight"]
// CHECK-NEXT: %[[S2:.*]] = te.saved %[[O]]["fc1_out"]
// CHECK-NEXT: %[[S3:.*]] = te.saved %[[O]]["act_out"]
// CHECK-NEXT: %[[S4:.*]] = te.saved %[[O]]["fc2_weight"]
// CHECK-NEXT: %[[S5:.*]] = te.saved %[[O]]["rsigma"]
// CHECK-NEXT: te.yield %[[S0]], %[[S1]], %[[S2]], %[[S3]], %[[S4]], %[[S5]] :
// CHECK-NEXT: }
// CHECK-NEXT: %[[D:.*]]:4 = te.layernorm_mlp_bwd %[[DY]] input(%[[X]]) norm rms_norm(%[[G]]) rsigma(%[[R]]#5) ln_out(%[[R]]#0) fc1(%[[R]]#1) fc1_out(%[[R]]#2) act swiglu act_out(%[[R]]#3) fc2(%[[R]]#4) recipe(#te.fp8_current<>)
// CHECK-NEXT: %[[DX:.*]] = arith.addf %[[DY]], %[[D]]#0
// CHECK-NEXT: return %[[DX]], %[[D]]#1, %[[D]]#2, %[[D]]#3
func.func @mlp_ckpt(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %w1: tensor<512x128xbf16>, %w2: tensor<128x256xbf16>) -> tensor<64x128xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) recipe(#te.fp8_current<>) {checkpoint} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<512x128xbf16>, tensor<128x256xbf16>) -> tensor<64x128xbf16>
  %r = arith.addf %y, %x : tensor<64x128xbf16>
  return %r : tensor<64x128xbf16>
}

// -----

// Two blocks in a row with residuals: the intermediate %h is the first
// block's result and the second block's input; it is neither an argument nor
// a result, so it is saved, once. The second block saves ln_out etc. The
// gradient of %h sums the residual path and the second block's dgrad.
// CHECK-LABEL: func.func @two_blocks_fwd(
// CHECK-SAME: -> (tensor<8x64xf32>, tensor<8x64xf32> {te.saved = "layernorm_linear_0.ln_out"}, tensor<8xf32> {te.saved = "layernorm_linear_0.mu"}, tensor<8xf32> {te.saved = "layernorm_linear_0.rsigma"}, tensor<8x64xf32> {te.saved = "layernorm_mlp_1.input"}, tensor<8x64xf32> {te.saved = "layernorm_mlp_1.ln_out"}
// CHECK:      %[[Y0:.*]] = te.layernorm_linear
// CHECK:      %[[H:.*]] = arith.addf %[[Y0]], %arg0
// CHECK:      return {{.*}}, %[[H]],
// CHECK-LABEL: func.func @two_blocks_bwd(
// CHECK-SAME: %[[X:[^:]*]]: tensor<8x64xf32> {te.alias = "input:0", te.saved = "layernorm_linear_0.input"}
// CHECK-SAME: %[[HS:[^:]*]]: tensor<8x64xf32> {te.saved = "layernorm_mlp_1.input"}
// CHECK-SAME: %[[DOUT:[^:]*]]: tensor<8x64xf32> {te.grad_of = "output:0"})
// CHECK:      %[[D1:.*]]:5 = te.layernorm_mlp_bwd %[[DOUT]] input(%[[HS]])
// CHECK-NEXT: %[[DH:.*]] = arith.addf %[[DOUT]], %[[D1]]#0
// CHECK-NEXT: %[[D0:.*]]:3 = te.layernorm_linear_bwd %[[DH]] input(%[[X]])
// CHECK-NEXT: %[[DX:.*]] = arith.addf %[[DH]], %[[D0]]#0
// CHECK-NEXT: return %[[DX]], %[[D0]]#1, %[[D0]]#2, %[[D1]]#1, %[[D1]]#2, %[[D1]]#3, %[[D1]]#4
func.func @two_blocks(%x: tensor<8x64xf32>, %g0: tensor<64xf32>, %w0: tensor<64x64xf32>, %g1: tensor<64xf32>, %b1: tensor<64xf32>, %w1: tensor<256x64xf32>, %w2: tensor<64x256xf32>) -> tensor<8x64xf32> {
  %y0 = te.layernorm_linear %x norm layer_norm(%g0) weight(%w0) : (tensor<8x64xf32>, tensor<64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %h = arith.addf %y0, %x : tensor<8x64xf32>
  %y1 = te.layernorm_mlp %h norm layer_norm(%g1, %b1) fc1(%w1) act relu fc2(%w2) : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<64x256xf32>) -> tensor<8x64xf32>
  %out = arith.addf %y1, %h : tensor<8x64xf32>
  return %out : tensor<8x64xf32>
}

// -----

// One input feeding two modules (a shared norm weight and input, like a
// Q and KV projection): saved once, gradients summed.
// CHECK-LABEL: func.func @shared_input_bwd(
// CHECK-SAME: %[[X:[^:]*]]: tensor<8x64xf32> {te.alias = "input:0", te.saved = "layernorm_linear_0.input"}
// CHECK-SAME: %[[G:[^:]*]]: tensor<64xf32> {te.alias = "input:1", te.saved = "layernorm_linear_0.ln_weight"}
// CHECK-NOT: layernorm_linear_1.input
// CHECK-NOT: layernorm_linear_1.ln_weight
// CHECK-SAME: {te.grad_of = "output:1"})
// CHECK:      %[[B:.*]]:3 = te.layernorm_linear_bwd {{.*}} input(%[[X]]) norm rms_norm(%[[G]])
// CHECK:      %[[A:.*]]:3 = te.layernorm_linear_bwd {{.*}} input(%[[X]]) norm rms_norm(%[[G]])
// CHECK-DAG:  %[[DX:.*]] = arith.addf %[[B]]#0, %[[A]]#0
// CHECK-DAG:  %[[DG:.*]] = arith.addf %[[B]]#1, %[[A]]#1
// CHECK:      return %[[DX]], %[[DG]], %[[A]]#2, %[[B]]#2
func.func @shared_input(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>) -> (tensor<8x64xf32>, tensor<8x32xf32>) {
  %q = te.layernorm_linear %x norm rms_norm(%g) weight(%wq) : (tensor<8x64xf32>, tensor<64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %k = te.layernorm_linear %x norm rms_norm(%g) weight(%wk) : (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  return %q, %k : tensor<8x64xf32>, tensor<8x32xf32>
}

// -----

// What the importer leaves around module ops is differentiated: a bf16 cast
// sandwich, a static reshape of the output, and a gated FC1 weight built by
// concatenating two linears' weights (its gradient is split back).
// CHECK-LABEL: func.func @glue_bwd(
// CHECK-SAME: %[[DY:[^:]*]]: tensor<2x4x64xf32> {te.grad_of = "output:0"})
// CHECK:      %[[DYB:.*]] = arith.truncf %[[DY]] : tensor<2x4x64xf32> to tensor<2x4x64xbf16>
// CHECK:      %[[SHAPE:.*]] = arith.constant dense<[8, 64]> : tensor<2xi64>
// CHECK-NEXT: %[[DYR:.*]] = tensor.reshape %[[DYB]](%[[SHAPE]]) : (tensor<2x4x64xbf16>, tensor<2xi64>) -> tensor<8x64xbf16>
// CHECK-NEXT: %[[D:.*]]:4 = te.layernorm_mlp_bwd %[[DYR]]
// CHECK-NEXT: %[[DGATE:.*]] = tensor.extract_slice %[[D]]#2[0, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
// CHECK-NEXT: %[[DUP:.*]] = tensor.extract_slice %[[D]]#2[128, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
// CHECK-NEXT: %[[DX:.*]] = arith.extf %[[D]]#0 : tensor<8x64xbf16> to tensor<8x64xf32>
// CHECK-NEXT: return %[[DX]], %[[D]]#1, %[[DGATE]], %[[DUP]], %[[D]]#3
func.func @glue(%x: tensor<8x64xf32>, %g: tensor<64xbf16>, %wg: tensor<128x64xbf16>, %wu: tensor<128x64xbf16>, %w2: tensor<64x128xbf16>) -> tensor<2x4x64xf32> {
  %xb = arith.truncf %x : tensor<8x64xf32> to tensor<8x64xbf16>
  %w1 = tensor.concat dim(0) %wg, %wu : (tensor<128x64xbf16>, tensor<128x64xbf16>) -> tensor<256x64xbf16>
  %y = te.layernorm_mlp %xb norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<8x64xbf16>
  %shape = arith.constant dense<[2, 4, 64]> : tensor<3xi64>
  %r = tensor.reshape %y(%shape) : (tensor<8x64xbf16>, tensor<3xi64>) -> tensor<2x4x64xbf16>
  %o = arith.extf %r : tensor<2x4x64xbf16> to tensor<2x4x64xf32>
  return %o : tensor<2x4x64xf32>
}

// -----

// Delayed scaling keeps its recipe state in the signature: @f_fwd takes the
// forward amax history [len, 3 slots per GEMM] and scales, quantizes with
// those scales, and returns the updated pair after the bundle; @f_bwd does
// the same with the backward state (2 slots per GEMM) after the gradients.
// A checkpointed MLP also keeps the forward scales it ran with, so the
// recompute quantizes exactly as the forward did: a copy the forward returns
// in its bundle, not an alias of its state argument, which the caller
// updates (with the returned new state) before the backward runs.
// CHECK-LABEL: func.func @delayed_fwd(
// CHECK-SAME: %[[H:[^:]*]]: tensor<16x6xf32> {te.state = "layernorm_mlp_0.amax_history_fwd"}, %[[S:[^:]*]]: tensor<6xf32> {te.state = "layernorm_mlp_0.scales_fwd"})
// CHECK-SAME: -> (tensor<64x128xbf16>, tensor<6xf32> {te.saved = "layernorm_mlp_0.scales"}, tensor<16x6xf32> {te.state = "layernorm_mlp_0.amax_history_fwd"}, tensor<6xf32> {te.state = "layernorm_mlp_0.scales_fwd"})
// CHECK:      %[[Y:.*]] = te.layernorm_mlp {{.*}} recipe(#te.fp8_delayed<amax_history_len = 16>) scales(%[[S]]) {checkpoint}
// CHECK-NEXT: %[[A:.*]] = te.amax %[[Y]] : tensor<64x128xbf16> -> tensor<6xf32>
// CHECK-NEXT: %[[NH:.*]], %[[NS:.*]] = te.amax_update %[[H]], %[[S]], %[[A]] recipe(#te.fp8_delayed<amax_history_len = 16>) : tensor<16x6xf32>, tensor<6xf32>
// CHECK-NEXT: return %[[Y]], %[[S]], %[[NH]], %[[NS]]
// CHECK-LABEL: func.func @delayed_bwd(
// CHECK-SAME: %[[FS:[^:]*]]: tensor<6xf32> {te.saved = "layernorm_mlp_0.scales"}
// CHECK-SAME: %[[DY:[^:]*]]: tensor<64x128xbf16> {te.grad_of = "output:0"}
// CHECK-SAME: %[[BH:[^:]*]]: tensor<16x4xf32> {te.state = "layernorm_mlp_0.amax_history_bwd"}, %[[BS:[^:]*]]: tensor<4xf32> {te.state = "layernorm_mlp_0.scales_bwd"})
// CHECK-SAME: tensor<16x4xf32> {te.state = "layernorm_mlp_0.amax_history_bwd"}, tensor<4xf32> {te.state = "layernorm_mlp_0.scales_bwd"})
// CHECK:      te.recompute({{.*}}, %[[FS]])
// CHECK:      te.layernorm_mlp {{.*}} scales(%{{.*}}) :
// CHECK:      %[[D:.*]]:4 = te.layernorm_mlp_bwd %[[DY]] {{.*}} scales(%[[BS]])
// CHECK-NEXT: %[[BA:.*]] = te.amax %[[D]]#0 : tensor<64x128xbf16> -> tensor<4xf32>
// CHECK-NEXT: %[[BNH:.*]], %[[BNS:.*]] = te.amax_update %[[BH]], %[[BS]], %[[BA]] recipe(#te.fp8_delayed<amax_history_len = 16>) backward
// CHECK-NEXT: return %[[D]]#0, %[[D]]#1, %[[D]]#2, %[[D]]#3, %[[BNH]], %[[BNS]]
func.func @delayed(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %w1: tensor<256x128xbf16>, %w2: tensor<128x256xbf16>) -> tensor<64x128xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) recipe(#te.fp8_delayed<amax_history_len = 16>) {checkpoint} : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<128x256xbf16>) -> tensor<64x128xbf16>
  return %y : tensor<64x128xbf16>
}

// -----

// te.normalization (TE's LayerNorm module), under an FP8 recipe it ignores:
// x and gamma alias forward arguments 0 and 1, mu and rsigma are saved, no
// recipe state is threaded (nothing is quantized), and the backward gives
// dx, dgamma and dbeta.
// CHECK-LABEL: func.func @norm_ln_fwd(
// CHECK-SAME: %{{[^:]*}}: tensor<?x64xbf16>, %{{[^:]*}}: tensor<64xbf16>, %{{[^:]*}}: tensor<64xbf16>)
// CHECK-SAME: -> (tensor<?x64xbf16>, tensor<?xf32> {te.saved = "normalization_0.mu"}, tensor<?xf32> {te.saved = "normalization_0.rsigma"})
// CHECK:      %[[Y:.*]] = te.normalization %{{.*}} norm layer_norm(%{{.*}}, %{{.*}}) recipe(#te.fp8_delayed<>) {zero_centered_gamma}
// CHECK-NEXT: %[[MU:.*]] = te.saved %[[Y]]["mu"] : tensor<?x64xbf16> -> tensor<?xf32>
// CHECK-NEXT: %[[RS:.*]] = te.saved %[[Y]]["rsigma"]
// CHECK-NEXT: return %[[Y]], %[[MU]], %[[RS]]
// CHECK-LABEL: func.func @norm_ln_bwd(
// CHECK-SAME: %[[X:.*]]: tensor<?x64xbf16> {te.alias = "input:0", te.saved = "normalization_0.input"}
// CHECK-SAME: %[[G:.*]]: tensor<64xbf16> {te.alias = "input:1", te.saved = "normalization_0.ln_weight"}
// CHECK-SAME: %[[BMU:.*]]: tensor<?xf32> {te.saved = "normalization_0.mu"}
// CHECK-SAME: %[[BRS:.*]]: tensor<?xf32> {te.saved = "normalization_0.rsigma"}
// CHECK-SAME: %[[DY:.*]]: tensor<?x64xbf16> {te.grad_of = "output:0"})
// CHECK-SAME: -> (tensor<?x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"}, tensor<64xbf16> {te.grad_of = "input:2"})
// CHECK-NEXT: %[[D:.*]]:3 = te.normalization_bwd %[[DY]] input(%[[X]]) norm layer_norm(%[[G]]) mu(%[[BMU]]) rsigma(%[[BRS]]) {with_ln_bias, zero_centered_gamma}
// CHECK-NEXT: return %[[D]]#0, %[[D]]#1, %[[D]]#2
// CHECK-NOT: te.amax
func.func @norm_ln(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = te.normalization %x norm layer_norm(%g, %b) recipe(#te.fp8_delayed<>) {zero_centered_gamma} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// RMSNorm (TE's RMSNorm module) before a Linear: rsigma only, and the
// gradient of the norm output is the Linear's input gradient.
// CHECK-LABEL: func.func @norm_rms_linear_bwd(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x8x64xf32> {te.alias = "input:0", te.saved = "normalization_0.input"}
// CHECK-SAME: %[[G:[^:]*]]: tensor<64xf32> {te.alias = "input:1", te.saved = "normalization_0.ln_weight"}
// CHECK:      %[[L:.*]]:2 = te.linear_bwd
// CHECK-NEXT: %[[D:.*]]:2 = te.normalization_bwd %[[L]]#0 input(%[[X]]) norm rms_norm(%[[G]]) rsigma(%{{.*}}) : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64xf32>, tensor<16xf32>) -> (tensor<2x8x64xf32>, tensor<64xf32>)
// CHECK-NEXT: return %[[D]]#0, %[[D]]#1, %[[L]]#1
func.func @norm_rms_linear(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) -> tensor<2x8x32xf32> {
  %n = te.normalization %x norm rms_norm(%g) : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %y = te.linear %n weight(%w) : (tensor<2x8x64xf32>, tensor<32x64xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}
