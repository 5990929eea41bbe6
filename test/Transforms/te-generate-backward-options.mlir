// RUN: te-opt %s --te-generate-backward --te-describe -o /dev/null | FileCheck %s --check-prefix=DEDUP
// RUN: te-opt %s --te-generate-backward="dedup=false" --te-describe -o /dev/null | FileCheck %s --check-prefix=NODEDUP
// RUN: te-opt %s --te-generate-backward="checkpoint=true" --te-describe -o /dev/null | FileCheck %s --check-prefix=CKPT
// RUN: te-opt %s --te-generate-backward="dedup=false" | FileCheck %s --check-prefix=COPIES
// RUN: te-opt %s --te-generate-backward="arch=blackwell" | FileCheck %s --check-prefix=BW
// RUN: te-opt %s --te-generate-backward="checkpoint=true" --cse --canonicalize | FileCheck %s --check-prefix=CSE
// RUN: not te-opt %s --te-generate-backward="arch=ampere" 2>&1 | FileCheck %s --check-prefix=ARCH
//
// The saved bundle's size with and without aliasing (te-describe's bundle
// record, computed by hand), checkpointing every MLP, the architecture of
// quantized saves, and that CSE/canonicalization keep a recompute region.
// An architecture that is neither is an error naming it.
// ARCH: error: te-generate-backward: unknown arch 'ampere' (expected hopper or blackwell)

// bf16 RMSNorm + GELU MLP, 64 tokens, hidden 128, FFN 256. Saved: ln_out
// 64*128*2 = 16384, fc1_out 64*256*2 = 32768, act_out 32768, rsigma 64*4 =
// 256: 82176 bytes. Aliased (x 16384, gamma 256, W1 65536, W2 65536):
// 147712 bytes, which dedup=false saves again: 229888 bytes.
// DEDUP: "aliased_bytes":147712,"backward":"mlp_bwd"
// DEDUP-SAME: "bundle_bytes":82176,"forward":"mlp_fwd","function":"mlp"
// NODEDUP: "aliased_bytes":0,"backward":"mlp_bwd"
// NODEDUP-SAME: "bundle_bytes":229888
// Checkpointed: nothing saved beyond the caller's own tensors.
// CKPT: "aliased_bytes":147712,"backward":"mlp_bwd"
// CKPT-SAME: "bundle_bytes":0
// CKPT-SAME: "of":"output:0","optional":false
// CKPT-SAME: "out":[{{.*}}"of":"input:0"{{.*}}"of":"input:1"{{.*}}"of":"input:2"{{.*}}"of":"input:3"

// Without dedup the forward returns its own arguments as bundle copies.
// COPIES-LABEL: func.func @mlp_fwd(
// COPIES-SAME: tensor<64x128xbf16> {te.saved = "layernorm_mlp_0.input"}
// COPIES: return %{{.*}}, %arg0, %arg1, %{{.*}}, %arg2, %{{.*}}, %{{.*}}, %arg3, %{{.*}} :
// COPIES-LABEL: func.func @mlp_bwd(
// COPIES-NOT: te.alias

// Quantized saves are typed for the requested architecture (Blackwell keeps
// no separate FP8 transpose buffer).
// BW-LABEL: func.func @mlp_fp8_fwd(
// BW: te.saved %{{.*}}["ln_out"] : tensor<64x128xbf16> -> !te.qtensor<64x128xe4m3, #te.fp8_current<>, columnwise, blackwell>
// BW-LABEL: func.func @mlp_fp8_bwd(
// BW-SAME: !te.qtensor<256x128xe4m3, #te.fp8_current<>, both, blackwell> {te.saved = "layernorm_mlp_0.fc1_weight"}

// CSE and canonicalization leave the recompute region and its forward op in
// place (the region is isolated from above).
// CSE-LABEL: func.func @mlp_bwd(
// CSE: te.recompute(
// CSE: te.layernorm_mlp
// CSE: te.yield
// CSE: te.layernorm_mlp_bwd
func.func @mlp(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %w1: tensor<256x128xbf16>, %w2: tensor<128x256xbf16>) -> tensor<64x128xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<128x256xbf16>) -> tensor<64x128xbf16>
  return %y : tensor<64x128xbf16>
}

func.func @mlp_fp8(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %w1: tensor<256x128xbf16>, %w2: tensor<128x256xbf16>) -> tensor<64x128xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) recipe(#te.fp8_current<>) : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<128x256xbf16>) -> tensor<64x128xbf16>
  return %y : tensor<64x128xbf16>
}
