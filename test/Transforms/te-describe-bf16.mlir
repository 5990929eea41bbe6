// RUN: te-opt %s --te-describe -o /dev/null | FileCheck %s
// RUN: te-opt %s --te-describe="mode=inference" -o /dev/null | FileCheck %s --check-prefix=INFER
//
// Unquantized modules: what is saved for backward and what it aliases,
// checkpointing, the optional gradient of a returned norm output, and the
// gradients produced. Byte counts computed by hand (f32 = 4 bytes).

// LayerNormLinear with every operand and the norm output returned: the
// saved norm output is the op's own output #1; x, gamma and W alias inputs
// 0, 1 and 3 (beta is operand 2 and is not needed by the backward).
// CHECK: {"arch":"hopper","effective_recipe":"bf16","fallback":null
// CHECK-SAME: "grads":{"in":[{"bytes":1024,"dtype":"float32","name":"grad_output","of":"output","optional":false,"shape":[8,32]},{"bytes":2048,"dtype":"float32","name":"grad_ln_output","of":"ln_output","optional":true,"shape":[8,64]}]
// CHECK-SAME: "out":[{{.*}}"name":"grad_input","of":"input"{{.*}}"name":"grad_ln_weight","of":"ln_weight"{{.*}}"name":"grad_ln_bias","of":"ln_bias"{{.*}}"name":"grad_weight","of":"weight","optional":false,"shape":[32,64]}{{.*}}"name":"grad_bias","of":"bias","optional":false,"shape":[32]}]}
// CHECK-SAME: "quantized":[]
// CHECK-SAME: "saved":[{"aliases":"input:0",{{[^}]*}}"name":"input",{{[^}]*}}},{"aliases":"input:1",{{[^}]*}}"name":"ln_weight",{{[^}]*}}},{"aliases":"input:3",{{[^}]*}}"name":"weight",{{[^}]*}}},{"aliases":"output:1","bytes":2048,"dtype":"float32","name":"ln_out","shape":[8,64]},{"aliases":null,"bytes":32,"dtype":"float32","name":"mu","shape":[8]},{"aliases":null,"bytes":32,"dtype":"float32","name":"rsigma","shape":[8]}],"saved_bytes":64
// CHECK-SAME: "state":[],"workspace_bytes":0}
// Without the norm output returned, ln_out is a fresh saved buffer.
// CHECK: "grads":{"in":[{"bytes":1024,"dtype":"float32","name":"grad_output","of":"output","optional":false,"shape":[8,32]}]
// CHECK-SAME: {"aliases":null,"bytes":2048,"dtype":"float32","name":"ln_out","shape":[8,64]}
// CHECK-SAME: "saved_bytes":2112
// INFER: "grads":{"in":[],"out":[]}
// INFER-SAME: "saved":[],"saved_bytes":0,"state":[],"workspace_bytes":64}
// INFER: "saved":[],"saved_bytes":0,"state":[],"workspace_bytes":2112}
func.func @ln_linear(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %w: tensor<32x64xf32>, %bias: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x64xf32>, tensor<8x32xf32>) {
  %y, %ln = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) {return_layernorm_output} : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x64xf32>)
  %z = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %y, %ln, %z : tensor<8x32xf32>, tensor<8x64xf32>, tensor<8x32xf32>
}

// LayerNormMLP: the stored backward keeps ln_out, fc1_out and act_out.
// ln_out 2048 + fc1_out 8192 + act_out 8192 + mu 32 + rsigma 32 = 18496.
// CHECK: "op":"te.layernorm_mlp"
// CHECK-SAME: "saved":[{"aliases":"input:0",{{.*}}{"aliases":null,"bytes":2048,"dtype":"float32","name":"ln_out","shape":[8,64]},{"aliases":"input:3",{{[^}]*}}"name":"fc1_weight",{{[^}]*}}},{"aliases":null,"bytes":8192,"dtype":"float32","name":"fc1_out","shape":[8,256]},{"aliases":null,"bytes":8192,"dtype":"float32","name":"act_out","shape":[8,256]},{"aliases":"input:5",{{[^}]*}}"name":"fc2_weight"
// CHECK-SAME: "saved_bytes":18496
// CHECK-SAME: "workspace_bytes":0}
// Checkpointed: only inputs and parameters are saved (all aliases, 0 bytes);
// the intermediates become forward workspace.
// CHECK: "op":"te.layernorm_mlp"
// CHECK-SAME: "saved":[{"aliases":"input:0",{{[^}]*}}},{"aliases":"input:1",{{[^}]*}}},{"aliases":"input:2",{{[^}]*}}},{"aliases":"input:3",{{[^}]*}}},{"aliases":"input:4",{{[^}]*}}},{"aliases":"input:5",{{[^}]*}}},{"aliases":"input:6",{{[^}]*}}}],"saved_bytes":0
// CHECK-SAME: "workspace_bytes":18496}
func.func @mlp(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %w1: tensor<256x64xf32>, %b1: tensor<256xf32>, %w2: tensor<64x256xf32>, %b2: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<64x256xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %z = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) {checkpoint} : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<64x256xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  return %y, %z : tensor<8x64xf32>, tensor<8x64xf32>
}

// te.normalization (TE's LayerNorm module) under mxfp8: the recipe is
// reported, it runs unquantized by design (effective bf16, no fallback, no
// quantized tensors, no state); x and gamma are aliases, mu and rsigma
// (8 rows x 4 bytes each) are saved; in inference they are workspace.
// CHECK: {"arch":"hopper","effective_recipe":"bf16","fallback":null
// CHECK-SAME: "out":[{{.*}}"name":"grad_input","of":"input"{{.*}}"name":"grad_ln_weight","of":"ln_weight"{{.*}}"name":"grad_ln_bias","of":"ln_bias","optional":false,"shape":[64]}]}
// CHECK-SAME: "op":"te.normalization"
// CHECK-SAME: "quantized":[],"recipe":"mxfp8"
// CHECK-SAME: "saved":[{"aliases":"input:0",{{[^}]*}}"name":"input",{{[^}]*}}},{"aliases":"input:1",{{[^}]*}}"name":"ln_weight",{{[^}]*}}},{"aliases":null,"bytes":32,"dtype":"float32","name":"mu","shape":[8]},{"aliases":null,"bytes":32,"dtype":"float32","name":"rsigma","shape":[8]}],"saved_bytes":64,"state":[],"workspace_bytes":0}
// INFER: "op":"te.normalization"
// INFER-SAME: "saved":[],"saved_bytes":0,"state":[],"workspace_bytes":64}
func.func @norm(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %y = te.normalization %x norm layer_norm(%g, %b) recipe(#te.mxfp8) : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}
