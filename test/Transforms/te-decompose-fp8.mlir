// RUN: te-opt %s --te-generate-backward --te-thread-recipe-state --te-decompose --split-input-file --verify-diagnostics | FileCheck %s
// RUN: te-opt %s --te-generate-backward --te-thread-recipe-state --te-decompose --split-input-file --verify-diagnostics | te-opt --split-input-file | FileCheck %s
//
// te-decompose under the per-tensor FP8 recipes (HYBRID: E4M3 forward,
// E5M2 gradients): TE's quantization points (reference §1.3, §1.5, §2.3,
// §2.5), quantizer slots (§0.2) and the Hopper usages each GEMM reads.

// LayerNormLinear, current scaling. Inference quantizes rowwise only; the
// training forward quantizes the norm output with both copies (the GEMM
// reads rowwise) and saves only the columnwise one (a te.drop_usage view);
// the weight is saved with both (dgrad reads its transpose). The backward
// quantizes dy to E5M2 for the dgrad (nn) and wgrad (nt) GEMMs and takes the
// bias gradient from the high-precision dy.
// CHECK-LABEL: func.func @lnl(
// CHECK:      %[[LN:.*]], %{{.*}}, %{{.*}} = te.norm_fwd %arg0
// CHECK-NEXT: %[[Q:.*]], %{{.*}} = te.quantize %[[LN]] : tensor<16x64xbf16> -> !te.qtensor<16x64xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<1xf32>
// CHECK-NEXT: %[[W:.*]], %{{.*}} = te.quantize %arg3 {weight} : tensor<32x64xbf16> -> !te.qtensor<32x64xe4m3, #te.fp8_current<>, rowwise, hopper>, tensor<1xf32>
// The fprop accumulates fast, as TE's per-tensor recipes do by default;
// dgrad and wgrad split.
// CHECK-NEXT: %[[Y:.*]] = te.gemm tn %[[Q]], %[[W]] bias(%arg4) {fast_accumulate} : ({{.*}}) -> tensor<16x32xbf16>
// CHECK-NEXT: return %[[Y]]
// CHECK-LABEL: func.func @lnl_fwd(
// CHECK-SAME: -> (tensor<16x32xbf16>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper> {te.saved = "layernorm_linear_0.weight"}, !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper> {te.saved = "layernorm_linear_0.ln_out"}
// CHECK:      %[[FQ:.*]], %{{.*}} = te.quantize %{{.*}} : tensor<16x64xbf16> -> !te.qtensor<16x64xe4m3, #te.fp8_current<>, both, hopper>
// CHECK-NEXT: %[[COL:.*]] = te.drop_usage %[[FQ]] : !te.qtensor<16x64xe4m3, #te.fp8_current<>, both, hopper> -> !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper>
// CHECK-NEXT: %[[FW:.*]], %{{.*}} = te.quantize %arg3 {weight} : tensor<32x64xbf16> -> !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>
// CHECK-NEXT: %[[FY:.*]] = te.gemm tn %[[FQ]], %[[FW]] bias(%arg4) {fast_accumulate}
// CHECK-NEXT: return %[[FY]], %[[FW]], %[[COL]],
// The saved norm output is quantized (it cannot hold the dgrad's output):
// the wgrad last, after the norm's backward, so that the dgrad's output is
// dead before the weight gradient's buffer is written (a result's loan).
// CHECK-LABEL: func.func @lnl_bwd(
// CHECK:      %[[DYQ:.*]], %{{.*}} = te.quantize %arg6 : tensor<16x32xbf16> -> !te.qtensor<16x32xe5m2, #te.fp8_current<>, both, hopper>, tensor<1xf32>
// CHECK-NEXT: %[[DLN:.*]] = te.gemm nn %[[DYQ]], %arg2 : ({{.*}}) -> tensor<16x64xbf16>
// CHECK-NEXT: %[[DB:.*]] = te.bias_grad %arg6
// CHECK-NEXT: %[[DX:.*]], %[[DG:.*]], %[[DBETA:.*]] = te.norm_bwd %[[DLN]] input(%arg0)
// CHECK-NEXT: %[[DW:.*]] = te.gemm nt %[[DYQ]], %arg3 : ({{.*}}) -> tensor<32x64xbf16>
// CHECK-NEXT: return %[[DX]], %[[DG]], %[[DBETA]], %[[DW]], %[[DB]]
func.func @lnl(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w: tensor<32x64xbf16>, %bias: tensor<32xbf16>) -> tensor<16x32xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) recipe(#te.fp8_current<>) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// LayerNormMLP, delayed scaling: every quantization takes its scale from the
// op's scales at TE's slot (fc1 input 0, fc1 weight 1, fc2 input 3, fc2
// weight 4; backward: fc1 grad output 0, fc2 grad output 2), the amax
// vectors are the recorded amaxes with 0 in the unused (output / grad
// input) slots, and the inference entry gets the forward state too.
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: %[[H:[^:]*]]: tensor<16x6xf32> {te.state = "layernorm_mlp_0.amax_history_fwd"}, %[[S:[^:]*]]: tensor<6xf32> {te.state = "layernorm_mlp_0.scales_fwd"})
// CHECK-SAME: -> (tensor<16x32xbf16>, tensor<16x6xf32> {te.state = "layernorm_mlp_0.amax_history_fwd"}, tensor<6xf32> {te.state = "layernorm_mlp_0.scales_fwd"})
// CHECK:      %[[Q0:.*]], %[[A0:.*]] = te.quantize %{{.*}} scale(%[[S]][0])
// CHECK-NEXT: %[[Q1:.*]], %[[A1:.*]] = te.quantize %arg3 scale(%[[S]][1])
// CHECK-NEXT: te.gemm tn %[[Q0]], %[[Q1]]
// CHECK-NEXT: %[[ACT:.*]] = te.act gelu
// CHECK-NEXT: %[[Q3:.*]], %[[A3:.*]] = te.quantize %[[ACT]] scale(%[[S]][3])
// CHECK-NEXT: %[[Q4:.*]], %[[A4:.*]] = te.quantize %arg5 scale(%[[S]][4])
// CHECK-NEXT: %[[Y:.*]] = te.gemm tn %[[Q3]], %[[Q4]]
// CHECK-NEXT: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK-NEXT: %[[AM:.*]] = tensor.concat dim(0) %[[A0]], %[[A1]], %[[Z]], %[[A3]], %[[A4]], %[[Z]] : {{.*}} -> tensor<6xf32>
// CHECK-NEXT: %[[NH:.*]], %[[NS:.*]] = te.amax_update %[[H]], %[[S]], %[[AM]] recipe(#te.fp8_delayed<amax_history_len = 16>)
// CHECK-NEXT: return %[[Y]], %[[NH]], %[[NS]]
// FC2's input (act_out) is quantized rowwise only and saved so (TE §0.2,
// §2.5: per-tensor FP8 on Hopper); the backward transposes its bytes for
// FC2's wgrad first (te.add_columnwise, TE's update_usage): the saved
// act_out is then dead, a donor for the quantized dy.
// CHECK-LABEL: func.func @mlp_fwd(
// CHECK-SAME: !te.qtensor<16x64xe4m3, #te.fp8_delayed<amax_history_len = 16>, rowwise, hopper> {te.saved = "layernorm_mlp_0.act_out"}
// CHECK:      %[[FACT:.*]] = te.act gelu
// CHECK-NEXT: %[[FQ3:.*]], %{{.*}} = te.quantize %[[FACT]] scale(%{{.*}}[3]) : tensor<16x64xbf16>, tensor<6xf32> -> !te.qtensor<16x64xe4m3, #te.fp8_delayed<amax_history_len = 16>, rowwise, hopper>
// CHECK-NOT:  te.drop_usage
// CHECK:      return {{.*}}, %[[FQ3]],
// CHECK-LABEL: func.func @mlp_bwd(
// CHECK-SAME: %arg5: !te.qtensor<16x64xe4m3, #te.fp8_delayed<amax_history_len = 16>, rowwise, hopper> {te.saved = "layernorm_mlp_0.act_out"}
// CHECK:      %[[ACOL:.*]] = te.add_columnwise %arg5 : !te.qtensor<16x64xe4m3, #te.fp8_delayed<amax_history_len = 16>, rowwise, hopper> -> !te.qtensor<16x64xe4m3, #te.fp8_delayed<amax_history_len = 16>, columnwise, hopper>
// CHECK-NEXT: %[[DYQ:.*]], %[[ADY:.*]] = te.quantize %arg9 scale(%arg11[2]) : tensor<16x32xbf16>, tensor<4xf32> -> !te.qtensor<16x32xe5m2, #te.fp8_delayed<amax_history_len = 16>, both, hopper>
// CHECK-NEXT: te.gemm nt %[[DYQ]], %[[ACOL]]
// CHECK-NEXT: te.gemm nn %[[DYQ]], %arg6
// CHECK-NEXT: te.bias_grad %arg9
// CHECK-NEXT: %[[DACT:.*]] = te.dact gelu
// CHECK-NEXT: te.bias_grad %[[DACT]]
// Delayed scaling at few static rows (16 x 64): the derivative is cast
// with both usages in one kernel (te-fuse-act-quantize fuses the cast into
// the te.dact); @mlp_dynamic_rows below takes the other path.
// CHECK-NEXT: %[[DQ:.*]], %[[AD:.*]] = te.quantize %[[DACT]] scale(%arg11[0]) : tensor<16x64xbf16>, tensor<4xf32> -> !te.qtensor<16x64xe5m2, #te.fp8_delayed<amax_history_len = 16>, both, hopper>
// CHECK-NOT:  te.add_columnwise
// CHECK:      te.gemm nt %[[DQ]], %arg2
// CHECK-NEXT: te.gemm nn %[[DQ]], %arg3
// CHECK:      %[[BZ:.*]] = arith.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK-NEXT: %[[BAM:.*]] = tensor.concat dim(0) %[[AD]], %[[BZ]], %[[ADY]], %[[BZ]] : {{.*}} -> tensor<4xf32>
// CHECK-NEXT: te.amax_update %arg10, %arg11, %[[BAM]] recipe(#te.fp8_delayed<amax_history_len = 16>) backward
// CHECK-NOT: te.layernorm_mlp
func.func @mlp(%x: tensor<16x32xbf16>, %g: tensor<32xbf16>, %b: tensor<32xbf16>, %w1: tensor<64x32xbf16>, %b1: tensor<64xbf16>, %w2: tensor<32x64xbf16>, %b2: tensor<32xbf16>) -> tensor<16x32xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) recipe(#te.fp8_delayed<amax_history_len = 16>) : (tensor<16x32xbf16>, tensor<32xbf16>, tensor<32xbf16>, tensor<64x32xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// Delayed scaling at a row count known only at run time (the PyTorch
// modules' entries; likewise above 1 MiB of FP8 derivative): the derivative
// is cast rowwise and its columnwise copy for FC1's wgrad added after, a
// byte transpose into the dead dAct's buffer (no both-usage buffer in the
// arena: 256 MiB at 8192 x 16384).
// CHECK-LABEL: func.func @mlp_dynamic_rows_bwd(
// CHECK:      %[[DACT:.*]] = te.dact gelu
// CHECK:      %[[DQ:.*]], %{{.*}} = te.quantize %[[DACT]] scale(%{{.*}}[0]) : tensor<?x64xbf16>, tensor<4xf32> -> !te.qtensor<?x64xe5m2, #te.fp8_delayed<amax_history_len = 16>, rowwise, hopper>
// CHECK-NEXT: %[[DQC:.*]] = te.add_columnwise %[[DQ]] : {{.*}} -> !te.qtensor<?x64xe5m2, #te.fp8_delayed<amax_history_len = 16>, columnwise, hopper>
// CHECK-NEXT: te.gemm nt %[[DQC]], %{{.*}}
// CHECK-NEXT: te.gemm nn %[[DQ]], %{{.*}}
func.func @mlp_dynamic_rows(%x: tensor<?x32xbf16>, %g: tensor<32xbf16>, %b: tensor<32xbf16>, %w1: tensor<64x32xbf16>, %b1: tensor<64xbf16>, %w2: tensor<32x64xbf16>, %b2: tensor<32xbf16>) -> tensor<?x32xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) recipe(#te.fp8_delayed<amax_history_len = 16>) : (tensor<?x32xbf16>, tensor<32xbf16>, tensor<32xbf16>, tensor<64x32xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// -----

// Linear under fp8-current with power-of-two scales and E4M3 everywhere:
// the input itself is quantized and saved.
// CHECK-LABEL: func.func @linear_fwd(
// CHECK:      %[[X:.*]], %{{.*}} = te.quantize %arg0 : tensor<32x64xbf16> -> !te.qtensor<32x64xe4m3, #te.fp8_current<format = e4m3, power_2_scales = true>
// CHECK-LABEL: func.func @linear_bwd(
// CHECK:      te.quantize %arg2 : tensor<32x32xbf16> -> !te.qtensor<32x32xe4m3,
func.func @linear(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<32x32xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_current<format = e4m3, power_2_scales = true>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return %y : tensor<32x32xbf16>
}

// -----

// Blackwell keeps no transposed copy; its per-tensor layout is not lowered.
func.func @blackwell(%x: !te.qtensor<32x64xe4m3, #te.fp8_current<>, columnwise, blackwell>, %w: !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, blackwell>, %dy: tensor<32x32xbf16>) -> (tensor<32x64xbf16>, tensor<32x64xbf16>) {
  // expected-error @+1 {{te-decompose: fp8-current is lowered for Hopper's TN-only GEMMs (a transposed copy per columnwise operand); '!te.qtensor<32x64xe4m3, #te.fp8_current<>, columnwise, blackwell>' has another layout}}
  %g:2 = te.linear_bwd %dy input(%x) weight(%w) recipe(#te.fp8_current<>) : (tensor<32x32xbf16>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, columnwise, blackwell>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, blackwell>) -> (tensor<32x64xbf16>, tensor<32x64xbf16>)
  return %g#0, %g#1 : tensor<32x64xbf16>, tensor<32x64xbf16>
}

