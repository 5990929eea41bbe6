// RUN: te-opt %s --te-describe -o /dev/null | FileCheck %s --check-prefix=HOPPER
// RUN: te-opt %s --te-describe="arch=blackwell" -o /dev/null | FileCheck %s --check-prefix=BLACKWELL
// RUN: te-opt %s --te-describe="mode=inference" -o /dev/null | FileCheck %s --check-prefix=INFER
//
// Per-tensor FP8, delayed and current scaling (reference §4.1-4.2): `data`
// (logical shape) when rowwise or on Blackwell, `transpose`
// [K, d0, ..., d_{n-2}] when columnwise on Hopper, `scale_inv` [1] fp32.
// HYBRID: E4M3 forward, E5M2 gradients. Values computed by hand.

// LayerNormMLP, 3-D input [2,64,128] (M = 128), gelu, FFN 256. The
// backward makes act_out's transpose (128 x 256 = 32768 bytes, below).
// HOPPER: {"arch":"hopper","backward_workspace_bytes":32768,"effective_recipe":"fp8-delayed"
// HOPPER-SAME: "inner":[{"dtype":"uint8","name":"data","shape":[2,64,128]},{"dtype":"uint8","name":"transpose","shape":[128,2,64]},{"dtype":"float32","name":"scale_inv","shape":[1]}],"name":"ln_out","role":"activation"
// HOPPER-SAME: "inner":[{"dtype":"uint8","name":"data","shape":[256,128]},{"dtype":"uint8","name":"transpose","shape":[128,256]},{"dtype":"float32","name":"scale_inv","shape":[1]}],"name":"fc1_weight","role":"weight"
// act_out (FC2's input) is quantized rowwise only: per-tensor FP8 on Hopper
// (TE §0.2, §2.5).
// HOPPER-SAME: "inner":[{"dtype":"uint8","name":"data","shape":[2,64,256]},{"dtype":"float32","name":"scale_inv","shape":[1]}],"name":"act_out","role":"activation","shape":[2,64,256],"type":"!te.qtensor<2x64x256xe4m3, #te.fp8_delayed<amax_history_len = 16>, rowwise, hopper>","usage":"rowwise"
// HOPPER-SAME: "inner":[{"dtype":"uint8","name":"data","shape":[128,256]},{"dtype":"uint8","name":"transpose","shape":[256,128]},{"dtype":"float32","name":"scale_inv","shape":[1]}],"name":"fc2_weight","role":"weight"
// HOPPER-SAME: "dtype":"e5m2","inner":[{"dtype":"uint8","name":"data","shape":[2,64,128]},{"dtype":"uint8","name":"transpose","shape":[128,2,64]},{"dtype":"float32","name":"scale_inv","shape":[1]}],"name":"fc2_grad_output","role":"grad"
// HOPPER-SAME: "dtype":"e5m2","inner":[{"dtype":"uint8","name":"data","shape":[2,64,256]},{"dtype":"uint8","name":"transpose","shape":[256,2,64]},{"dtype":"float32","name":"scale_inv","shape":[1]}],"name":"fc1_grad_output","role":"grad"
// Saved (TE §2.4): the quantized weights as they are (both copies), the
// pre-activation fc1_out in bf16, act_out rowwise (its transpose is made in
// the backward, TE's update_usage), rsigma (RMSNorm has no mu), and the
// quantized ln_out's columnwise copy only, the one FC1's wgrad reads (TE
// keeps both). 16388 + 65540 + 65536 + 32772 + 65540 + 512 = 246288.
// HOPPER-SAME: "saved":[{"aliases":"input:0"
// HOPPER-SAME: {"aliases":null,"bytes":16388,"dtype":"e4m3","inner":[{"dtype":"uint8","name":"transpose","shape":[128,2,64]},{"dtype":"float32","name":"scale_inv","shape":[1]}],"name":"ln_out"
// HOPPER-SAME: {"aliases":null,"bytes":65536,"dtype":"bfloat16","name":"fc1_out","shape":[2,64,256]}
// HOPPER-SAME: {"aliases":null,"bytes":32772,"dtype":"e4m3","inner":[{"dtype":"uint8","name":"data","shape":[2,64,256]},{"dtype":"float32","name":"scale_inv","shape":[1]}],"name":"act_out"
// HOPPER-SAME: {"aliases":null,"bytes":512,"dtype":"float32","name":"rsigma","shape":[128]}],"saved_bytes":246288
// Delayed scaling state: 3 forward and 2 backward slots per GEMM.
// HOPPER-SAME: "state":[{"bytes":384,"dtype":"float32","name":"amax_history_fwd","shape":[16,6]},{"bytes":24,"dtype":"float32","name":"scale_fwd","shape":[6]},{"bytes":256,"dtype":"float32","name":"amax_history_bwd","shape":[16,4]},{"bytes":16,"dtype":"float32","name":"scale_bwd","shape":[4]}]
// The forward frees ln_out's rowwise copy (2 x 64 x 128 bytes) early.
// HOPPER-SAME: "workspace_bytes":16384}
//
// Blackwell: one `data` buffer serves both uses (act_out keeps usage both:
// nothing to transpose in the backward).
// BLACKWELL: {"arch":"blackwell","effective_recipe":"fp8-delayed"
// BLACKWELL-SAME: "inner":[{"dtype":"uint8","name":"data","shape":[2,64,128]},{"dtype":"float32","name":"scale_inv","shape":[1]}],"name":"ln_out","role":"activation"
// BLACKWELL-SAME: "saved":[
// BLACKWELL-SAME: "inner":[{"dtype":"uint8","name":"data","shape":[2,64,128]},{"dtype":"float32","name":"scale_inv","shape":[1]}],"name":"ln_out","shape"
// BLACKWELL-SAME: "saved_bytes":180752
// BLACKWELL-SAME: "workspace_bytes":0}
//
// Inference: rowwise only, nothing saved, no backward state.
// INFER: "effective_recipe":"fp8-delayed"
// INFER-SAME: "inner":[{"dtype":"uint8","name":"data","shape":[2,64,128]},{"dtype":"float32","name":"scale_inv","shape":[1]}],"name":"ln_out","role":"activation","shape":[2,64,128],"type":"!te.qtensor<2x64x128xe4m3, #te.fp8_delayed<amax_history_len = 16>, rowwise, hopper>","usage":"rowwise"
// INFER-SAME: "saved":[],"saved_bytes":0,"state":[{"bytes":384,"dtype":"float32","name":"amax_history_fwd","shape":[16,6]},{"bytes":24,"dtype":"float32","name":"scale_fwd","shape":[6]}],"workspace_bytes":180752}
func.func @mlp(%x: tensor<2x64x128xbf16>, %g: tensor<128xbf16>, %w1: tensor<256x128xbf16>, %w2: tensor<128x256xbf16>) -> tensor<2x64x128xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) recipe(#te.fp8_delayed<amax_history_len = 16>) : (tensor<2x64x128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<128x256xbf16>) -> tensor<2x64x128xbf16>
  return %y : tensor<2x64x128xbf16>
}

// Current scaling on a dynamic [?, 8, 64] input: transposes are
// [64, d0, 8]; no state; M = d0*8 is always a multiple of 8, so no runtime
// check is needed.
// HOPPER: {"arch":"hopper","effective_recipe":"fp8-current"
// HOPPER-SAME: "inner":[{"dtype":"uint8","name":"data","shape":["d0",8,64]},{"dtype":"uint8","name":"transpose","shape":[64,"d0",8]},{"dtype":"float32","name":"scale_inv","shape":[1]}],"name":"input","role":"activation"
// HOPPER-SAME: "dtype":"e5m2","inner":[{"dtype":"uint8","name":"data","shape":["d0",8,32]},{"dtype":"uint8","name":"transpose","shape":[32,"d0",8]},{"dtype":"float32","name":"scale_inv","shape":[1]}],"name":"grad_output"
// HOPPER-SAME: "runtime_checks":[]
// HOPPER-SAME: "state":[]
// The input keeps its transpose; its rowwise data is transient.
// HOPPER-SAME: "workspace_bytes":"d0*512"}
func.func @linear(%x: tensor<?x8x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<?x8x32xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_current<>) : (tensor<?x8x64xbf16>, tensor<32x64xbf16>) -> tensor<?x8x32xbf16>
  return %y : tensor<?x8x32xbf16>
}

// Unaligned for FP8 GEMMs (K % 16): falls back.
// HOPPER: "effective_recipe":"bf16","fallback":"recipe fp8-current needs the columns of every GEMM operand divisible by 16; input has 40: this op runs unquantized (bf16 path)"
func.func @unaligned(%x: tensor<8x40xbf16>, %w: tensor<32x40xbf16>) -> tensor<8x32xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_current<>) : (tensor<8x40xbf16>, tensor<32x40xbf16>) -> tensor<8x32xbf16>
  return %y : tensor<8x32xbf16>
}

// Checkpointed LayerNormMLP: only inputs and parameters are saved; ln_out
// and act_out are quantized rowwise only (recomputed for the backward), the
// weights both; every forward buffer is workspace:
// 16388 + 65540 + 32772 + 65540 + 65536 (fc1_out) + 512 (rsigma) = 246288.
// HOPPER: "op":"te.layernorm_mlp"
// HOPPER-SAME: "name":"ln_out","role":"activation","shape":[2,64,128],"type":"!te.qtensor<2x64x128xe4m3, #te.fp8_delayed<>, rowwise, hopper>","usage":"rowwise"
// HOPPER-SAME: "name":"fc1_weight","role":"weight","shape":[256,128],"type":"!te.qtensor<256x128xe4m3, #te.fp8_delayed<>, both, hopper>","usage":"both"
// HOPPER-SAME: "name":"act_out","role":"activation","shape":[2,64,256],"type":"!te.qtensor<2x64x256xe4m3, #te.fp8_delayed<>, rowwise, hopper>","usage":"rowwise"
// HOPPER-SAME: "saved":[{"aliases":"input:0",{{[^}]*}}},{"aliases":"input:1",{{[^}]*}}},{"aliases":"input:2",{{[^}]*}}},{"aliases":"input:3",{{[^}]*}}}],"saved_bytes":0
// HOPPER-SAME: "workspace_bytes":246288}
func.func @mlp_checkpoint(%x: tensor<2x64x128xbf16>, %g: tensor<128xbf16>, %w1: tensor<256x128xbf16>, %w2: tensor<128x256xbf16>) -> tensor<2x64x128xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) recipe(#te.fp8_delayed<>) {checkpoint} : (tensor<2x64x128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<128x256xbf16>) -> tensor<2x64x128xbf16>
  return %y : tensor<2x64x128xbf16>
}
