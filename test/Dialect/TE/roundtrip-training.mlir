// RUN: te-opt %s | te-opt | FileCheck %s
//
// Every training op (TETrainingOps.td) parses, prints and parses again to
// the same form, as te-generate-backward (checkpoint=true) and
// te-thread-recipe-state write them: te.saved, te.layernorm_linear_bwd,
// te.layernorm_mlp_bwd reading a te.recompute region (and its te.yield),
// te.linear_bwd under fp8-delayed, te.amax and te.amax_update (forward and
// backward).

// CHECK-LABEL: func.func @lnl_fwd(
// CHECK-SAME:  %[[ARG0:[^ ,:()#]+]]: tensor<16x64xbf16>, %[[ARG1:[^ ,:()#]+]]: tensor<64xbf16>, %[[ARG2:[^ ,:()#]+]]: tensor<64xbf16>, %[[ARG3:[^ ,:()#]+]]: tensor<32x64xbf16>, %[[ARG4:[^ ,:()#]+]]: tensor<32xbf16>) -> (tensor<16x32xbf16>, tensor<16x64xbf16> {te.saved = "layernorm_linear_0.ln_out"}, tensor<16xf32> {te.saved = "layernorm_linear_0.mu"}, tensor<16xf32> {te.saved = "layernorm_linear_0.rsigma"}) attributes {te.forward_of = @lnl} {
// CHECK-NEXT:  %[[OUTPUT:[^ ,:()#]+]] = te.layernorm_linear %[[ARG0]] norm layer_norm(%[[ARG1]], %[[ARG2]]) weight(%[[ARG3]], %[[ARG4]]) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
// CHECK-NEXT:  %[[V0:[^ ,:()#]+]] = te.saved %[[OUTPUT]]["ln_out"] : tensor<16x32xbf16> -> tensor<16x64xbf16>
// CHECK-NEXT:  %[[V1:[^ ,:()#]+]] = te.saved %[[OUTPUT]]["mu"] : tensor<16x32xbf16> -> tensor<16xf32>
// CHECK-NEXT:  %[[V2:[^ ,:()#]+]] = te.saved %[[OUTPUT]]["rsigma"] : tensor<16x32xbf16> -> tensor<16xf32>
// CHECK-NEXT:  return %[[OUTPUT]], %[[V0]], %[[V1]], %[[V2]] : tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<16xf32>, tensor<16xf32>
func.func @lnl_fwd(%arg0: tensor<16x64xbf16>, %arg1: tensor<64xbf16>, %arg2: tensor<64xbf16>, %arg3: tensor<32x64xbf16>, %arg4: tensor<32xbf16>) -> (tensor<16x32xbf16>, tensor<16x64xbf16> {te.saved = "layernorm_linear_0.ln_out"}, tensor<16xf32> {te.saved = "layernorm_linear_0.mu"}, tensor<16xf32> {te.saved = "layernorm_linear_0.rsigma"}) attributes {te.forward_of = @lnl} {
  %output = te.layernorm_linear %arg0 norm layer_norm(%arg1, %arg2) weight(%arg3, %arg4) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  %0 = te.saved %output["ln_out"] : tensor<16x32xbf16> -> tensor<16x64xbf16>
  %1 = te.saved %output["mu"] : tensor<16x32xbf16> -> tensor<16xf32>
  %2 = te.saved %output["rsigma"] : tensor<16x32xbf16> -> tensor<16xf32>
  return %output, %0, %1, %2 : tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<16xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @lnl_bwd(
// CHECK-SAME:  %[[ARG0:[^ ,:()#]+]]: tensor<16x64xbf16> {te.alias = "input:0", te.saved = "layernorm_linear_0.input"}, %[[ARG1:[^ ,:()#]+]]: tensor<64xbf16> {te.alias = "input:1", te.saved = "layernorm_linear_0.ln_weight"}, %[[ARG2:[^ ,:()#]+]]: tensor<32x64xbf16> {te.alias = "input:3", te.saved = "layernorm_linear_0.weight"}, %[[ARG3:[^ ,:()#]+]]: tensor<16x64xbf16> {te.saved = "layernorm_linear_0.ln_out"}, %[[ARG4:[^ ,:()#]+]]: tensor<16xf32> {te.saved = "layernorm_linear_0.mu"}, %[[ARG5:[^ ,:()#]+]]: tensor<16xf32> {te.saved = "layernorm_linear_0.rsigma"}, %[[ARG6:[^ ,:()#]+]]: tensor<16x32xbf16> {te.grad_of = "output:0"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"}, tensor<64xbf16> {te.grad_of = "input:2"}, tensor<32x64xbf16> {te.grad_of = "input:3"}, tensor<32xbf16> {te.grad_of = "input:4"}) attributes {te.backward_of = @lnl} {
// CHECK-NEXT:  %[[V0:[^ ,:()#]+]]:5 = te.layernorm_linear_bwd %[[ARG6]] input(%[[ARG0]]) norm layer_norm(%[[ARG1]]) mu(%[[ARG4]]) rsigma(%[[ARG5]]) weight(%[[ARG2]]) ln_out(%[[ARG3]]) {with_bias, with_ln_bias} : (tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<64xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<32x64xbf16>, tensor<16x64xbf16>) -> (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>)
// CHECK-NEXT:  return %[[V0]]#0, %[[V0]]#1, %[[V0]]#2, %[[V0]]#3, %[[V0]]#4 : tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>
func.func @lnl_bwd(%arg0: tensor<16x64xbf16> {te.alias = "input:0", te.saved = "layernorm_linear_0.input"}, %arg1: tensor<64xbf16> {te.alias = "input:1", te.saved = "layernorm_linear_0.ln_weight"}, %arg2: tensor<32x64xbf16> {te.alias = "input:3", te.saved = "layernorm_linear_0.weight"}, %arg3: tensor<16x64xbf16> {te.saved = "layernorm_linear_0.ln_out"}, %arg4: tensor<16xf32> {te.saved = "layernorm_linear_0.mu"}, %arg5: tensor<16xf32> {te.saved = "layernorm_linear_0.rsigma"}, %arg6: tensor<16x32xbf16> {te.grad_of = "output:0"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"}, tensor<64xbf16> {te.grad_of = "input:2"}, tensor<32x64xbf16> {te.grad_of = "input:3"}, tensor<32xbf16> {te.grad_of = "input:4"}) attributes {te.backward_of = @lnl} {
  %0:5 = te.layernorm_linear_bwd %arg6 input(%arg0) norm layer_norm(%arg1) mu(%arg4) rsigma(%arg5) weight(%arg2) ln_out(%arg3) {with_bias, with_ln_bias} : (tensor<16x32xbf16>, tensor<16x64xbf16>, tensor<64xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<32x64xbf16>, tensor<16x64xbf16>) -> (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>)
  return %0#0, %0#1, %0#2, %0#3, %0#4 : tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>
}

// CHECK-LABEL: func.func @mlp_bwd(
// CHECK-SAME:  %[[ARG0:[^ ,:()#]+]]: tensor<16x64xbf16> {te.alias = "input:0", te.saved = "layernorm_mlp_0.input"}, %[[ARG1:[^ ,:()#]+]]: tensor<64xbf16> {te.alias = "input:1", te.saved = "layernorm_mlp_0.ln_weight"}, %[[ARG2:[^ ,:()#]+]]: tensor<128x64xbf16> {te.alias = "input:2", te.saved = "layernorm_mlp_0.fc1_weight"}, %[[ARG3:[^ ,:()#]+]]: tensor<64x128xbf16> {te.alias = "input:3", te.saved = "layernorm_mlp_0.fc2_weight"}, %[[ARG4:[^ ,:()#]+]]: tensor<16x64xbf16> {te.grad_of = "output:0"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"}, tensor<128x64xbf16> {te.grad_of = "input:2"}, tensor<64x128xbf16> {te.grad_of = "input:3"}) attributes {te.backward_of = @mlp} {
// CHECK-NEXT:  %[[V0:[^ ,:()#]+]]:4 = te.recompute(%[[ARG0]], %[[ARG1]], %[[ARG2]], %[[ARG3]]) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> (tensor<16x64xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<16xf32>) {
// CHECK-NEXT:  ^bb0(%[[ARG5:[^ ,:()#]+]]: tensor<16x64xbf16>, %[[ARG6:[^ ,:()#]+]]: tensor<64xbf16>, %[[ARG7:[^ ,:()#]+]]: tensor<128x64xbf16>, %[[ARG8:[^ ,:()#]+]]: tensor<64x128xbf16>):
// CHECK-NEXT:  %[[OUTPUT:[^ ,:()#]+]] = te.layernorm_mlp %[[ARG5]] norm rms_norm(%[[ARG6]]) fc1(%[[ARG7]]) act gelu fc2(%[[ARG8]]) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<16x64xbf16>
// CHECK-NEXT:  %[[V2:[^ ,:()#]+]] = te.saved %[[OUTPUT]]["ln_out"] : tensor<16x64xbf16> -> tensor<16x64xbf16>
// CHECK-NEXT:  %[[V3:[^ ,:()#]+]] = te.saved %[[OUTPUT]]["fc1_out"] : tensor<16x64xbf16> -> tensor<16x128xbf16>
// CHECK-NEXT:  %[[V4:[^ ,:()#]+]] = te.saved %[[OUTPUT]]["act_out"] : tensor<16x64xbf16> -> tensor<16x128xbf16>
// CHECK-NEXT:  %[[V5:[^ ,:()#]+]] = te.saved %[[OUTPUT]]["rsigma"] : tensor<16x64xbf16> -> tensor<16xf32>
// CHECK-NEXT:  te.yield %[[V2]], %[[V3]], %[[V4]], %[[V5]] : tensor<16x64xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<16xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[V1:[^ ,:()#]+]]:4 = te.layernorm_mlp_bwd %[[ARG4]] input(%[[ARG0]]) norm rms_norm(%[[ARG1]]) rsigma(%[[V0]]#3) ln_out(%[[V0]]#0) fc1(%[[ARG2]]) fc1_out(%[[V0]]#1) act gelu act_out(%[[V0]]#2) fc2(%[[ARG3]]) : (tensor<16x64xbf16>, tensor<16x64xbf16>, tensor<64xbf16>, tensor<16xf32>, tensor<16x64xbf16>, tensor<128x64xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<64x128xbf16>) -> (tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>)
// CHECK-NEXT:  return %[[V1]]#0, %[[V1]]#1, %[[V1]]#2, %[[V1]]#3 : tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>
func.func @mlp_bwd(%arg0: tensor<16x64xbf16> {te.alias = "input:0", te.saved = "layernorm_mlp_0.input"}, %arg1: tensor<64xbf16> {te.alias = "input:1", te.saved = "layernorm_mlp_0.ln_weight"}, %arg2: tensor<128x64xbf16> {te.alias = "input:2", te.saved = "layernorm_mlp_0.fc1_weight"}, %arg3: tensor<64x128xbf16> {te.alias = "input:3", te.saved = "layernorm_mlp_0.fc2_weight"}, %arg4: tensor<16x64xbf16> {te.grad_of = "output:0"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"}, tensor<128x64xbf16> {te.grad_of = "input:2"}, tensor<64x128xbf16> {te.grad_of = "input:3"}) attributes {te.backward_of = @mlp} {
  %0:4 = te.recompute(%arg0, %arg1, %arg2, %arg3) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> (tensor<16x64xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<16xf32>) {
  ^bb0(%arg5: tensor<16x64xbf16>, %arg6: tensor<64xbf16>, %arg7: tensor<128x64xbf16>, %arg8: tensor<64x128xbf16>):
    %output = te.layernorm_mlp %arg5 norm rms_norm(%arg6) fc1(%arg7) act gelu fc2(%arg8) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<16x64xbf16>
    %2 = te.saved %output["ln_out"] : tensor<16x64xbf16> -> tensor<16x64xbf16>
    %3 = te.saved %output["fc1_out"] : tensor<16x64xbf16> -> tensor<16x128xbf16>
    %4 = te.saved %output["act_out"] : tensor<16x64xbf16> -> tensor<16x128xbf16>
    %5 = te.saved %output["rsigma"] : tensor<16x64xbf16> -> tensor<16xf32>
    te.yield %2, %3, %4, %5 : tensor<16x64xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<16xf32>
  }
  %1:4 = te.layernorm_mlp_bwd %arg4 input(%arg0) norm rms_norm(%arg1) rsigma(%0#3) ln_out(%0#0) fc1(%arg2) fc1_out(%0#1) act gelu act_out(%0#2) fc2(%arg3) : (tensor<16x64xbf16>, tensor<16x64xbf16>, tensor<64xbf16>, tensor<16xf32>, tensor<16x64xbf16>, tensor<128x64xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<64x128xbf16>) -> (tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>)
  return %1#0, %1#1, %1#2, %1#3 : tensor<16x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>
}

// CHECK-LABEL: func.func @lin(
// CHECK-SAME:  %[[ARG0:[^ ,:()#]+]]: tensor<16x64xbf16>, %[[ARG1:[^ ,:()#]+]]: tensor<32x64xbf16>, %[[ARG2:[^ ,:()#]+]]: tensor<4x3xf32> {te.state = "linear_0.amax_history_fwd"}, %[[ARG3:[^ ,:()#]+]]: tensor<3xf32> {te.state = "linear_0.scales_fwd"}) -> (tensor<16x32xbf16>, tensor<4x3xf32> {te.state = "linear_0.amax_history_fwd"}, tensor<3xf32> {te.state = "linear_0.scales_fwd"}) {
// CHECK-NEXT:  %[[V0:[^ ,:()#]+]] = te.linear %[[ARG0]] weight(%[[ARG1]]) recipe(#te.fp8_delayed<amax_history_len = 4>) scales(%[[ARG3]]) : (tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<3xf32>) -> tensor<16x32xbf16>
// CHECK-NEXT:  %[[V1:[^ ,:()#]+]] = te.amax %[[V0]] : tensor<16x32xbf16> -> tensor<3xf32>
// CHECK-NEXT:  %[[NEW_AMAX_HISTORY:[^ ,:()#]+]], %[[NEW_SCALES:[^ ,:()#]+]] = te.amax_update %[[ARG2]], %[[ARG3]], %[[V1]] recipe(#te.fp8_delayed<amax_history_len = 4>) : tensor<4x3xf32>, tensor<3xf32>
// CHECK-NEXT:  return %[[V0]], %[[NEW_AMAX_HISTORY]], %[[NEW_SCALES]] : tensor<16x32xbf16>, tensor<4x3xf32>, tensor<3xf32>
func.func @lin(%arg0: tensor<16x64xbf16>, %arg1: tensor<32x64xbf16>, %arg2: tensor<4x3xf32> {te.state = "linear_0.amax_history_fwd"}, %arg3: tensor<3xf32> {te.state = "linear_0.scales_fwd"}) -> (tensor<16x32xbf16>, tensor<4x3xf32> {te.state = "linear_0.amax_history_fwd"}, tensor<3xf32> {te.state = "linear_0.scales_fwd"}) {
  %0 = te.linear %arg0 weight(%arg1) recipe(#te.fp8_delayed<amax_history_len = 4>) scales(%arg3) : (tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<3xf32>) -> tensor<16x32xbf16>
  %1 = te.amax %0 : tensor<16x32xbf16> -> tensor<3xf32>
  %new_amax_history, %new_scales = te.amax_update %arg2, %arg3, %1 recipe(#te.fp8_delayed<amax_history_len = 4>) : tensor<4x3xf32>, tensor<3xf32>
  return %0, %new_amax_history, %new_scales : tensor<16x32xbf16>, tensor<4x3xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @lin_bwd(
// CHECK-SAME:  %[[ARG0:[^ ,:()#]+]]: !te.qtensor<16x64xe4m3, #te.fp8_delayed<amax_history_len = 4>, columnwise, hopper> {te.saved = "linear_0.input"}, %[[ARG1:[^ ,:()#]+]]: !te.qtensor<32x64xe4m3, #te.fp8_delayed<amax_history_len = 4>, both, hopper> {te.saved = "linear_0.weight"}, %[[ARG2:[^ ,:()#]+]]: tensor<16x32xbf16> {te.grad_of = "output:0"}, %[[ARG3:[^ ,:()#]+]]: tensor<4x2xf32> {te.state = "linear_0.amax_history_bwd"}, %[[ARG4:[^ ,:()#]+]]: tensor<2xf32> {te.state = "linear_0.scales_bwd"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<32x64xbf16> {te.grad_of = "input:1"}, tensor<4x2xf32> {te.state = "linear_0.amax_history_bwd"}, tensor<2xf32> {te.state = "linear_0.scales_bwd"}) attributes {te.backward_of = @lin} {
// CHECK-NEXT:  %[[V0:[^ ,:()#]+]]:2 = te.linear_bwd %[[ARG2]] input(%[[ARG0]]) weight(%[[ARG1]]) recipe(#te.fp8_delayed<amax_history_len = 4>) scales(%[[ARG4]]) : (tensor<16x32xbf16>, !te.qtensor<16x64xe4m3, #te.fp8_delayed<amax_history_len = 4>, columnwise, hopper>, !te.qtensor<32x64xe4m3, #te.fp8_delayed<amax_history_len = 4>, both, hopper>, tensor<2xf32>) -> (tensor<16x64xbf16>, tensor<32x64xbf16>)
// CHECK-NEXT:  %[[V1:[^ ,:()#]+]] = te.amax %[[V0]]#0 : tensor<16x64xbf16> -> tensor<2xf32>
// CHECK-NEXT:  %[[NEW_AMAX_HISTORY:[^ ,:()#]+]], %[[NEW_SCALES:[^ ,:()#]+]] = te.amax_update %[[ARG3]], %[[ARG4]], %[[V1]] recipe(#te.fp8_delayed<amax_history_len = 4>) backward : tensor<4x2xf32>, tensor<2xf32>
// CHECK-NEXT:  return %[[V0]]#0, %[[V0]]#1, %[[NEW_AMAX_HISTORY]], %[[NEW_SCALES]] : tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<4x2xf32>, tensor<2xf32>
func.func @lin_bwd(%arg0: !te.qtensor<16x64xe4m3, #te.fp8_delayed<amax_history_len = 4>, columnwise, hopper> {te.saved = "linear_0.input"}, %arg1: !te.qtensor<32x64xe4m3, #te.fp8_delayed<amax_history_len = 4>, both, hopper> {te.saved = "linear_0.weight"}, %arg2: tensor<16x32xbf16> {te.grad_of = "output:0"}, %arg3: tensor<4x2xf32> {te.state = "linear_0.amax_history_bwd"}, %arg4: tensor<2xf32> {te.state = "linear_0.scales_bwd"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<32x64xbf16> {te.grad_of = "input:1"}, tensor<4x2xf32> {te.state = "linear_0.amax_history_bwd"}, tensor<2xf32> {te.state = "linear_0.scales_bwd"}) attributes {te.backward_of = @lin} {
  %0:2 = te.linear_bwd %arg2 input(%arg0) weight(%arg1) recipe(#te.fp8_delayed<amax_history_len = 4>) scales(%arg4) : (tensor<16x32xbf16>, !te.qtensor<16x64xe4m3, #te.fp8_delayed<amax_history_len = 4>, columnwise, hopper>, !te.qtensor<32x64xe4m3, #te.fp8_delayed<amax_history_len = 4>, both, hopper>, tensor<2xf32>) -> (tensor<16x64xbf16>, tensor<32x64xbf16>)
  %1 = te.amax %0#0 : tensor<16x64xbf16> -> tensor<2xf32>
  %new_amax_history, %new_scales = te.amax_update %arg3, %arg4, %1 recipe(#te.fp8_delayed<amax_history_len = 4>) backward : tensor<4x2xf32>, tensor<2xf32>
  return %0#0, %0#1, %new_amax_history, %new_scales : tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<4x2xf32>, tensor<2xf32>
}
