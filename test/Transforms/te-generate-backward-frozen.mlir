// RUN: te-opt %s --te-generate-backward --split-input-file | FileCheck %s
// RUN: te-opt %s --te-generate-backward --split-input-file | te-opt --split-input-file --verify-roundtrip -o /dev/null
// RUN: te-opt %s --te-generate-backward --te-decompose --split-input-file | FileCheck %s --check-prefix=DECOMP
//
// te.frozen: an argument that wants no gradient (a weight with
// requires_grad=False). @f_bwd returns no gradient for it; a frozen
// weight's wgrad GEMM is left out, and so is what only that GEMM reads: the
// saved input of te.linear, the norm output of te.layernorm_linear and of
// te.layernorm_mlp's FC1, the activation output of its FC2. Under FP8 the
// gradient that only the left-out wgrad would read transposed is quantized
// rowwise only. A frozen bias gets no gradient either.

// te.linear, bf16, nothing frozen (the reference): input and weight are
// saved (aliases), three gradients, a dgrad (NN) and a wgrad (NT) GEMM.
// CHECK-LABEL: func.func @lin_bwd(
// CHECK-SAME: {te.alias = "input:0", te.saved = "linear_0.input"}
// CHECK-SAME: {te.alias = "input:1", te.saved = "linear_0.weight"}
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<32x64xbf16> {te.grad_of = "input:1"}, tensor<32xbf16> {te.grad_of = "input:2"})
// CHECK: te.linear_bwd %{{.*}} input(%{{.*}}) weight(%{{.*}}) {with_bias}
// DECOMP-LABEL: func.func @lin_bwd(
// DECOMP: te.gemm nn
// DECOMP: te.gemm nt
// DECOMP: te.bias_grad
// DECOMP: return
func.func @lin(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16>, %b: tensor<32xbf16>) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w, %b) : (tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// Frozen weight: the input is not saved, no weight gradient, no wgrad GEMM;
// the bias gradient stays.
// CHECK-LABEL: func.func @lin_frozen_bwd(
// CHECK-NOT: linear_0.input
// CHECK-SAME: %[[W:.*]]: tensor<32x64xbf16> {te.alias = "input:1", te.saved = "linear_0.weight"}
// CHECK-SAME: %[[DY:.*]]: tensor<16x32xbf16> {te.grad_of = "output:0"})
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<32xbf16> {te.grad_of = "input:2"})
// CHECK-NEXT: %[[D:.*]]:2 = te.linear_bwd %[[DY]] weight(%[[W]]) {with_bias} : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> (tensor<16x64xbf16>, tensor<32xbf16>)
// CHECK-NEXT: return %[[D]]#0, %[[D]]#1
// DECOMP-LABEL: func.func @lin_frozen_bwd(
// DECOMP-NOT: te.gemm nt
// DECOMP: te.gemm nn
// DECOMP-NOT: te.gemm nt
// DECOMP: te.bias_grad
// DECOMP-NOT: te.gemm nt
// DECOMP: return
func.func @lin_frozen(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16> {te.frozen}, %b: tensor<32xbf16>) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w, %b) : (tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// FP8 (current scaling), weight and bias frozen: only the quantized weight
// is saved; the output gradient is quantized rowwise only (no columnwise
// copy for a wgrad) and the input gradient is the only one.
// CHECK-LABEL: func.func @lin_fp8_frozen_fwd(
// CHECK-SAME: -> (tensor<16x32xbf16>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper> {te.saved = "linear_0.weight"})
// CHECK-NOT: te.saved %{{.*}}["input"]
// CHECK-LABEL: func.func @lin_fp8_frozen_bwd(
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"})
// CHECK: te.linear_bwd %{{.*}} weight(%{{.*}}) recipe(#te.fp8_current<>) {with_bias}
// DECOMP-LABEL: func.func @lin_fp8_frozen(
// DECOMP: te.quantize %arg0 : tensor<16x64xbf16> -> !te.qtensor<16x64xe4m3, #te.fp8_current<>, rowwise, hopper>
// DECOMP-LABEL: func.func @lin_fp8_frozen_bwd(
// DECOMP: te.quantize %{{.*}} : tensor<16x32xbf16> -> !te.qtensor<16x32xe5m2, #te.fp8_current<>, rowwise, hopper>
// DECOMP-NEXT: %[[DX:.*]] = te.gemm nn
// DECOMP-NOT: te.gemm
// DECOMP-NOT: te.bias_grad
// DECOMP: return %[[DX]] :
func.func @lin_fp8_frozen(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16> {te.frozen}, %b: tensor<32xbf16> {te.frozen}) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w, %b) recipe(#te.fp8_current<>) : (tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// te.layernorm_linear, bf16, frozen weight: the norm output (read only by
// the wgrad) is not saved, only mu and rsigma are; no weight gradient.
// CHECK-LABEL: func.func @lnl_frozen_fwd(
// CHECK-SAME: -> (tensor<16x32xbf16>, tensor<16xf32> {te.saved = "layernorm_linear_0.mu"}, tensor<16xf32> {te.saved = "layernorm_linear_0.rsigma"})
// CHECK-NOT: te.saved %{{.*}}["ln_out"]
// CHECK-LABEL: func.func @lnl_frozen_bwd(
// CHECK-NOT: ln_out
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"}, tensor<32xbf16> {te.grad_of = "input:3"})
// CHECK-NEXT: te.layernorm_linear_bwd %{{.*}} input(%{{.*}}) norm layer_norm(%{{.*}}) mu(%{{.*}}) rsigma(%{{.*}}) weight(%{{.*}}) {with_bias} :
// CHECK-SAME: -> (tensor<16x64xbf16>, tensor<64xbf16>, tensor<32xbf16>)
// DECOMP-LABEL: func.func @lnl_frozen_bwd(
// DECOMP-NOT: te.gemm nt
// DECOMP: te.gemm nn
// DECOMP-NOT: te.gemm nt
// DECOMP: te.norm_bwd
// DECOMP: return
func.func @lnl_frozen(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %w: tensor<32x64xbf16> {te.frozen}, %b: tensor<32xbf16>) -> tensor<16x32xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w, %b) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// FP8: no columnwise norm output saved (nor quantized in the forward), dy
// quantized rowwise only.
// CHECK-LABEL: func.func @lnl_fp8_frozen_fwd(
// CHECK-SAME: -> (tensor<16x32xbf16>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper> {te.saved = "layernorm_linear_0.weight"}, tensor<16xf32> {te.saved = "layernorm_linear_0.mu"}, tensor<16xf32> {te.saved = "layernorm_linear_0.rsigma"})
// CHECK-LABEL: func.func @lnl_fp8_frozen_bwd(
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"})
// CHECK-NEXT: te.layernorm_linear_bwd {{.*}} weight(%{{.*}}) recipe(#te.fp8_current<>) :
// DECOMP-LABEL: func.func @lnl_fp8_frozen_fwd(
// DECOMP: te.quantize %{{.*}} : tensor<16x64xbf16> -> !te.qtensor<16x64xe4m3, #te.fp8_current<>, rowwise, hopper>
// DECOMP-LABEL: func.func @lnl_fp8_frozen_bwd(
// DECOMP: te.quantize %{{.*}} : tensor<16x32xbf16> -> !te.qtensor<16x32xe5m2, #te.fp8_current<>, rowwise, hopper>
// DECOMP-NEXT: te.gemm nn
// DECOMP-NOT: te.gemm
// DECOMP: return
func.func @lnl_fp8_frozen(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %w: tensor<32x64xbf16> {te.frozen}) -> tensor<16x32xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) recipe(#te.fp8_current<>) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// te.layernorm_mlp, bf16, FC1 frozen: no norm output saved, no FC1 wgrad;
// FC2's dgrad and wgrad and FC1's dgrad remain.
// CHECK-LABEL: func.func @mlp_fc1_frozen_fwd(
// CHECK-SAME: -> (tensor<16x64xbf16>, tensor<16x128xbf16> {te.saved = "layernorm_mlp_0.fc1_out"}, tensor<16x128xbf16> {te.saved = "layernorm_mlp_0.act_out"}, tensor<16xf32> {te.saved = "layernorm_mlp_0.rsigma"})
// CHECK-LABEL: func.func @mlp_fc1_frozen_bwd(
// CHECK-NOT: ln_out
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"}, tensor<64x128xbf16> {te.grad_of = "input:3"})
// CHECK-NEXT: te.layernorm_mlp_bwd {{.*}} rsigma(%{{.*}}) fc1(%{{.*}}) fc1_out(%{{.*}}) act gelu act_out(%{{.*}}) fc2(%{{.*}}) :
// CHECK-SAME: -> (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64x128xbf16>)
// DECOMP-LABEL: func.func @mlp_fc1_frozen_bwd(
// DECOMP: %[[DW2:.*]] = te.gemm nt %arg7, %arg4
// DECOMP-NEXT: te.gemm nn %arg7, %arg5
// DECOMP: te.gemm nn
// DECOMP-NOT: te.gemm
// DECOMP: return %{{.*}}, %{{.*}}, %[[DW2]] :
func.func @mlp_fc1_frozen(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16> {te.frozen}, %w2: tensor<64x128xbf16>) -> tensor<16x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// FC2 frozen: no activation output saved, no FC2 wgrad.
// CHECK-LABEL: func.func @mlp_fc2_frozen_fwd(
// CHECK-SAME: -> (tensor<16x64xbf16>, tensor<16x64xbf16> {te.saved = "layernorm_mlp_0.ln_out"}, tensor<16x128xbf16> {te.saved = "layernorm_mlp_0.fc1_out"}, tensor<16xf32> {te.saved = "layernorm_mlp_0.rsigma"})
// CHECK-LABEL: func.func @mlp_fc2_frozen_bwd(
// CHECK-NOT: act_out
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"}, tensor<128x64xbf16> {te.grad_of = "input:2"})
// CHECK-NEXT: te.layernorm_mlp_bwd {{.*}} ln_out(%{{.*}}) fc1(%{{.*}}) fc1_out(%{{.*}}) act gelu fc2(%{{.*}}) :
// DECOMP-LABEL: func.func @mlp_fc2_frozen_bwd(
// DECOMP: te.gemm nn %arg7, %arg5
// DECOMP-NEXT: te.dact
// DECOMP-NEXT: %[[DW1:.*]] = te.gemm nt
// DECOMP-NEXT: te.gemm nn
// DECOMP-NOT: te.gemm
// DECOMP: return %{{.*}}, %{{.*}}, %[[DW1]] :
func.func @mlp_fc2_frozen(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %w2: tensor<64x128xbf16> {te.frozen}) -> tensor<16x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// Both frozen: only fc1_out (the activation's derivative) and rsigma are
// saved; the dgrads alone remain.
// CHECK-LABEL: func.func @mlp_both_frozen_fwd(
// CHECK-SAME: -> (tensor<16x64xbf16>, tensor<16x128xbf16> {te.saved = "layernorm_mlp_0.fc1_out"}, tensor<16xf32> {te.saved = "layernorm_mlp_0.rsigma"})
// CHECK-LABEL: func.func @mlp_both_frozen_bwd(
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"})
// CHECK-NEXT: te.layernorm_mlp_bwd {{.*}} rsigma(%{{.*}}) fc1(%{{.*}}) fc1_out(%{{.*}}) act gelu fc2(%{{.*}}) :
// DECOMP-LABEL: func.func @mlp_both_frozen_bwd(
// DECOMP-NOT: te.gemm nt
// DECOMP: te.gemm nn
// DECOMP-NOT: te.gemm nt
// DECOMP: te.gemm nn
// DECOMP-NOT: te.gemm
// DECOMP: return
func.func @mlp_both_frozen(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16> {te.frozen}, %w2: tensor<64x128xbf16> {te.frozen}) -> tensor<16x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// FP8, FC1 frozen: dy keeps both usages (FC2's wgrad), the activation's
// gradient is quantized rowwise only (no FC1 wgrad).
// CHECK-LABEL: func.func @mlp_fp8_fc1_frozen_fwd(
// CHECK-NOT: "layernorm_mlp_0.ln_out"
// CHECK-SAME: attributes
// CHECK-LABEL: func.func @mlp_fp8_fc1_frozen_bwd(
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"}, tensor<64x128xbf16> {te.grad_of = "input:3"})
// DECOMP-LABEL: func.func @mlp_fp8_fc1_frozen_bwd(
// DECOMP: te.quantize %arg7 : tensor<16x64xbf16> -> !te.qtensor<16x64xe5m2, #te.fp8_current<>, both, hopper>
// DECOMP: te.gemm nt
// DECOMP-NEXT: te.gemm nn
// DECOMP: te.quantize %{{.*}} : tensor<16x128xbf16> -> !te.qtensor<16x128xe5m2, #te.fp8_current<>, rowwise, hopper>
// DECOMP-NEXT: te.gemm nn
// DECOMP-NOT: te.gemm
// DECOMP: return
func.func @mlp_fp8_fc1_frozen(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16> {te.frozen}, %w2: tensor<64x128xbf16>) -> tensor<16x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) recipe(#te.fp8_current<>) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// FP8, FC2 frozen: dy quantized rowwise only (no FC2 wgrad), the
// activation's gradient with both usages (FC1's wgrad).
// CHECK-LABEL: func.func @mlp_fp8_fc2_frozen_fwd(
// CHECK-NOT: "layernorm_mlp_0.act_out"
// CHECK-SAME: attributes
// CHECK-LABEL: func.func @mlp_fp8_fc2_frozen_bwd(
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"}, tensor<128x64xbf16> {te.grad_of = "input:2"})
// DECOMP-LABEL: func.func @mlp_fp8_fc2_frozen_bwd(
// DECOMP: te.quantize %arg7 : tensor<16x64xbf16> -> !te.qtensor<16x64xe5m2, #te.fp8_current<>, rowwise, hopper>
// DECOMP-NEXT: te.gemm nn
// DECOMP: te.quantize %{{.*}} : tensor<16x128xbf16> -> !te.qtensor<16x128xe5m2, #te.fp8_current<>, both, hopper>
// DECOMP-NEXT: te.gemm nt
// DECOMP-NEXT: te.gemm nn
// DECOMP-NOT: te.gemm
// DECOMP: return
func.func @mlp_fp8_fc2_frozen(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %w2: tensor<64x128xbf16> {te.frozen}) -> tensor<16x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) recipe(#te.fp8_current<>) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// FP8, both frozen: both gradients rowwise only, two dgrads.
// CHECK-LABEL: func.func @mlp_fp8_both_frozen_fwd(
// CHECK-SAME: -> (tensor<16x64xbf16>, !te.qtensor<128x64xe4m3, #te.fp8_current<>, both, hopper> {te.saved = "layernorm_mlp_0.fc1_weight"}, tensor<16x128xbf16> {te.saved = "layernorm_mlp_0.fc1_out"}, !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper> {te.saved = "layernorm_mlp_0.fc2_weight"}, tensor<16xf32> {te.saved = "layernorm_mlp_0.rsigma"})
// CHECK-LABEL: func.func @mlp_fp8_both_frozen_bwd(
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"})
// DECOMP-LABEL: func.func @mlp_fp8_both_frozen_bwd(
// DECOMP: te.quantize %arg6 : tensor<16x64xbf16> -> !te.qtensor<16x64xe5m2, #te.fp8_current<>, rowwise, hopper>
// DECOMP-NEXT: te.gemm nn
// DECOMP: te.quantize %{{.*}} : tensor<16x128xbf16> -> !te.qtensor<16x128xe5m2, #te.fp8_current<>, rowwise, hopper>
// DECOMP-NEXT: te.gemm nn
// DECOMP-NOT: te.gemm
// DECOMP: return
func.func @mlp_fp8_both_frozen(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16> {te.frozen}, %w2: tensor<64x128xbf16> {te.frozen}) -> tensor<16x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) recipe(#te.fp8_current<>) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}
