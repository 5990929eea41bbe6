// RUN: te-opt %s --split-input-file --te-tensor-parallel="size=2 sequence-parallel" | FileCheck %s --check-prefix=SP
// RUN: te-opt %s --split-input-file --te-tensor-parallel="size=4" | FileCheck %s --check-prefix=TP
// RUN: te-opt %s --split-input-file --te-tensor-parallel="size=2 sequence-parallel reduce-param-grads" | FileCheck %s --check-prefix=RED
// A single-device model becomes one rank's program: the rank's shapes,
// #te.tp on the module ops, te.tp_shard on every argument and result.

// SP-LABEL: func.func @mlp(
// SP-SAME: %arg0: tensor<?x64xbf16> {te.tp_shard = "rows"}
// SP-SAME: %arg1: tensor<64xbf16> {te.tp_grad = "partial", te.tp_shard = "replicated"}
// SP-SAME: %arg2: tensor<64xbf16> {te.tp_grad = "partial", te.tp_shard = "replicated"}
// SP-SAME: %arg3: tensor<128x64xbf16> {te.tp_shard = "gated_rows"}
// SP-SAME: %arg4: tensor<128xbf16> {te.tp_shard = "gated_rows"}
// SP-SAME: %arg5: tensor<64x64xbf16> {te.tp_shard = "cols"}
// SP-SAME: %arg6: tensor<64xbf16> {te.tp_grad = "partial", te.tp_shard = "replicated"}
// SP-SAME: -> (tensor<?x64xbf16> {te.tp_shard = "rows"})
// SP-SAME: attributes {te.sequence_parallel = "true", te.tp = "2"}
// SP: te.layernorm_mlp {{.*}} tp(<size = 2, sequence_parallel = true>) : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
// The residual add keeps the rows' layout.
// SP: arith.addf {{.*}} : tensor<?x64xbf16>

// TP-LABEL: func.func @mlp(
// TP-SAME: %arg0: tensor<?x64xbf16> {te.tp_shard = "replicated"}
// TP-SAME: %arg1: tensor<64xbf16> {te.tp_shard = "replicated"}
// TP-SAME: %arg3: tensor<64x64xbf16> {te.tp_shard = "gated_rows"}
// TP-SAME: %arg5: tensor<64x32xbf16> {te.tp_shard = "cols"}
// TP-SAME: %arg6: tensor<64xbf16> {te.tp_shard = "replicated"}
// TP-SAME: -> (tensor<?x64xbf16> {te.tp_shard = "replicated"})
// TP-SAME: attributes {te.sequence_parallel = "false", te.tp = "4"}
// TP: tp(<size = 4>)

// RED-LABEL: func.func @mlp(
// RED-SAME: %arg1: tensor<64xbf16> {te.tp_shard = "replicated"}
// RED: tp(<size = 2, sequence_parallel = true, reduce_param_grads = true>)
func.func @mlp(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %beta: tensor<64xbf16>, %w1: tensor<256x64xbf16>, %b1: tensor<256xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %beta) fc1(%w1, %b1) act swiglu fc2(%w2, %b2) : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<256xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %r = arith.addf %x, %y : tensor<?x64xbf16>
  return %r : tensor<?x64xbf16>
}

// -----

// LayerNormLinear is column-parallel: weight and bias rows, the output's
// columns; with sequence parallelism its output has the gathered rows.
// SP-LABEL: func.func @linear(
// SP-SAME: %arg0: tensor<8x4x64xf32> {te.tp_shard = "rows"}
// SP-SAME: %arg2: tensor<48x64xf32> {te.tp_shard = "rows"}
// SP-SAME: %arg3: tensor<48xf32> {te.tp_shard = "rows"}
// SP-SAME: -> (tensor<16x4x48xf32> {te.tp_shard = "cols"})
// TP-LABEL: func.func @linear(
// TP-SAME: %arg0: tensor<16x4x64xf32> {te.tp_shard = "replicated"}
// TP-SAME: %arg2: tensor<24x64xf32> {te.tp_shard = "rows"}
// TP-SAME: -> (tensor<16x4x24xf32> {te.tp_shard = "cols"})
func.func @linear(%x: tensor<16x4x64xf32>, %g: tensor<64xf32>, %w: tensor<96x64xf32>, %b: tensor<96xf32>) -> tensor<16x4x96xf32> {
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w, %b) : (tensor<16x4x64xf32>, tensor<64xf32>, tensor<96x64xf32>, tensor<96xf32>) -> tensor<16x4x96xf32>
  return %y : tensor<16x4x96xf32>
}

// -----

// Two MLPs in a row: the first's sequence-parallel output is the second's
// input as it is.
// SP-LABEL: func.func @two_layers(
// SP-SAME: -> (tensor<4x64xbf16> {te.tp_shard = "rows"})
// SP-COUNT-2: te.layernorm_mlp {{.*}} -> tensor<4x64xbf16>
func.func @two_layers(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %w2: tensor<64x128xbf16>) -> tensor<8x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<8x64xbf16>
  %z = te.layernorm_mlp %y norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<8x64xbf16>
  return %z : tensor<8x64xbf16>
}

// -----

// As te-import-torch raises a Llama MLP: the gated FC1 weight is the
// concat of gate_proj and up_proj, each split along its rows.
// SP-LABEL: func.func @llama(
// SP-SAME: %arg2: tensor<32x32xbf16> {te.tp_shard = "rows"}, %arg3: tensor<32x32xbf16> {te.tp_shard = "rows"}, %arg4: tensor<32x32xbf16> {te.tp_shard = "cols"}
// SP: tensor.concat dim(0) %arg2, %arg3 : (tensor<32x32xbf16>, tensor<32x32xbf16>) -> tensor<64x32xbf16>
// SP: te.layernorm_mlp {{.*}} : (tensor<1x4x32xbf16>, tensor<32xbf16>, tensor<64x32xbf16>, tensor<32x32xbf16>) -> tensor<1x4x32xbf16>
func.func @llama(%x: tensor<2x4x32xbf16>, %g: tensor<32xbf16>, %gate: tensor<64x32xbf16>, %up: tensor<64x32xbf16>, %down: tensor<32x64xbf16>) -> tensor<2x4x32xbf16> {
  %w1 = tensor.concat dim(0) %gate, %up : (tensor<64x32xbf16>, tensor<64x32xbf16>) -> tensor<128x32xbf16>
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%down) : (tensor<2x4x32xbf16>, tensor<32xbf16>, tensor<128x32xbf16>, tensor<32x64xbf16>) -> tensor<2x4x32xbf16>
  return %y : tensor<2x4x32xbf16>
}

// -----

// As te-import-torch raises a GPT-2 MLP: Conv1D weights are [in, out] and
// transposed, so c_fc is split along its columns and c_proj along its rows.
// SP-LABEL: func.func @gpt2(
// SP-SAME: %arg3: tensor<32x32xbf16> {te.tp_shard = "cols"}
// SP-SAME: %arg4: tensor<32x32xbf16> {te.tp_shard = "rows"}
// SP: %[[E:.*]] = tensor.empty() : tensor<32x32xbf16>
// SP: linalg.transpose ins(%arg3 : tensor<32x32xbf16>) outs(%[[E]] : tensor<32x32xbf16>)
// SP: linalg.transpose ins(%arg4 : tensor<32x32xbf16>) outs(%{{.*}} : tensor<32x32xbf16>)
// SP: te.layernorm_mlp {{.*}} : (tensor<1x4x32xbf16>, tensor<32xbf16>, tensor<32xbf16>, tensor<32x32xbf16>, tensor<32x32xbf16>) -> tensor<1x4x32xbf16>
func.func @gpt2(%x: tensor<2x4x32xbf16>, %g: tensor<32xbf16>, %b: tensor<32xbf16>, %fc: tensor<32x64xbf16>, %proj: tensor<64x32xbf16>) -> tensor<2x4x32xbf16> {
  %0 = tensor.empty() : tensor<64x32xbf16>
  %w1 = linalg.transpose ins(%fc : tensor<32x64xbf16>) outs(%0 : tensor<64x32xbf16>) permutation = [1, 0]
  %1 = tensor.empty() : tensor<32x64xbf16>
  %w2 = linalg.transpose ins(%proj : tensor<64x32xbf16>) outs(%1 : tensor<32x64xbf16>) permutation = [1, 0]
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1) act gelu fc2(%w2) : (tensor<2x4x32xbf16>, tensor<32xbf16>, tensor<32xbf16>, tensor<64x32xbf16>, tensor<32x64xbf16>) -> tensor<2x4x32xbf16>
  return %y : tensor<2x4x32xbf16>
}
