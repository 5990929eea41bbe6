// RUN: te-opt %s --te-describe -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=TRAIN
// RUN: te-opt %s --te-describe="arch=blackwell mode=inference" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=INFER
// RUN: te-opt %s --te-describe -o /dev/null --verify-diagnostics > /dev/null
//
// MXFP8 (reference §4.3): data keeps the logical shape in both usages,
// E8M0 scales [roundup(M,128), roundup(K/32,4)] rowwise and
// [roundup(M/32,4), roundup(K,128)] columnwise, M = prod(leading dims).
// Expected values below are computed by hand from those formulas.

// (a) aligned 2-D: x [256,128], W [64,128].
// TRAIN: {"arch":"hopper","effective_recipe":"mxfp8","fallback":null
// TRAIN-SAME: "op":"te.layernorm_linear"
// TRAIN-SAME: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":[256,128]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":[256,4]},{"dtype":"uint8","name":"columnwise_data","shape":[256,128]},{"dtype":"uint8","name":"columnwise_scale_inv","shape":[8,128]}],"name":"ln_out","role":"activation","shape":[256,128],"type":"!te.qtensor<256x128xe4m3, #te.mxfp8, both, hopper, swizzled>","usage":"both"
// TRAIN-SAME: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":[64,128]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":[128,4]},{"dtype":"uint8","name":"columnwise_data","shape":[64,128]},{"dtype":"uint8","name":"columnwise_scale_inv","shape":[4,128]}],"name":"weight","role":"weight"
// TRAIN-SAME: "dtype":"e4m3","inner":[{"dtype":"uint8","name":"rowwise_data","shape":[256,64]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":[256,4]},{"dtype":"uint8","name":"columnwise_data","shape":[256,64]},{"dtype":"uint8","name":"columnwise_scale_inv","shape":[8,128]}],"name":"grad_output","role":"grad"
// Saved: x and gamma alias the inputs; ln_out keeps its columnwise copy
// only, the weight both (TE §1.4); mu and rsigma are fp32 [M].
// TRAIN-SAME: "saved":[{"aliases":"input:0",{{[^}]*}}"name":"input"{{[^}]*}}},{"aliases":"input:1",{{[^}]*}}"name":"ln_weight"
// TRAIN-SAME: {"aliases":null,"bytes":17408,"dtype":"e4m3","inner":[{"dtype":"uint8","name":"rowwise_data","shape":[64,128]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":[128,4]},{"dtype":"uint8","name":"columnwise_data","shape":[64,128]},{"dtype":"uint8","name":"columnwise_scale_inv","shape":[4,128]}],"name":"weight"
// TRAIN-SAME: {"aliases":null,"bytes":33792,"dtype":"e4m3","inner":[{"dtype":"uint8","name":"columnwise_data","shape":[256,128]},{"dtype":"uint8","name":"columnwise_scale_inv","shape":[8,128]}],"name":"ln_out"
// TRAIN-SAME: {"aliases":null,"bytes":1024,"dtype":"float32","name":"mu","shape":[256]},{"aliases":null,"bytes":1024,"dtype":"float32","name":"rsigma","shape":[256]}],"saved_bytes":53248
// Workspace: the rowwise half of ln_out, freed after the FC GEMM
// (32768 + 1024).
// TRAIN-SAME: "workspace_bytes":33792}
//
// INFER: {"arch":"blackwell","effective_recipe":"mxfp8"
// INFER-SAME: "grads":{"in":[],"out":[]}
// INFER-SAME: "mode":"inference"
// INFER-SAME: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":[256,128]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":[256,4]}],"name":"ln_out","role":"activation","shape":[256,128],"type":"!te.qtensor<256x128xe4m3, #te.mxfp8, rowwise, blackwell, swizzled>","usage":"rowwise"
// INFER-SAME: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":[64,128]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":[128,4]}],"name":"weight"
// INFER-SAME: "saved":[],"saved_bytes":0
// INFER-SAME: "workspace_bytes":44544}
func.func @aligned(%x: tensor<256x128xbf16>, %g: tensor<128xbf16>, %w: tensor<64x128xbf16>) -> tensor<256x64xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) recipe(#te.mxfp8) : (tensor<256x128xbf16>, tensor<128xbf16>, tensor<64x128xbf16>) -> tensor<256x64xbf16>
  return %y : tensor<256x64xbf16>
}

// (b) 3-D [2,64,128] (M = 128) with the norm output returned: two outputs,
// two incoming gradients (the norm output's optional).
// TRAIN: "grads":{"in":[{"bytes":16384,"dtype":"bfloat16","name":"grad_output","of":"output","optional":false,"shape":[2,64,64]},{"bytes":32768,"dtype":"bfloat16","name":"grad_ln_output","of":"ln_output","optional":true,"shape":[2,64,128]}]
// TRAIN-SAME: "outputs":[{"bytes":16384,"dtype":"bfloat16","name":"output","shape":[2,64,64]},{"bytes":32768,"dtype":"bfloat16","name":"ln_output","shape":[2,64,128]}]
// TRAIN-SAME: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":[2,64,128]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":[128,4]},{"dtype":"uint8","name":"columnwise_data","shape":[2,64,128]},{"dtype":"uint8","name":"columnwise_scale_inv","shape":[4,128]}],"name":"ln_out"
// INFER: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":[2,64,128]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":[128,4]}],"name":"ln_out"
func.func @three_d(%x: tensor<2x64x128xbf16>, %g: tensor<128xbf16>, %w: tensor<64x128xbf16>) -> (tensor<2x64x64xbf16>, tensor<2x64x128xbf16>) {
  %y, %ln = te.layernorm_linear %x norm layer_norm(%g) weight(%w) recipe(#te.mxfp8) {return_layernorm_output} : (tensor<2x64x128xbf16>, tensor<128xbf16>, tensor<64x128xbf16>) -> (tensor<2x64x64xbf16>, tensor<2x64x128xbf16>)
  return %y, %ln : tensor<2x64x64xbf16>, tensor<2x64x128xbf16>
}

// (c) dynamic batch: symbolic sizes over d0, alignment checked at run time.
// TRAIN: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":["d0",128]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":["roundup(d0, 128)",4]},{"dtype":"uint8","name":"columnwise_data","shape":["d0",128]},{"dtype":"uint8","name":"columnwise_scale_inv","shape":["roundup(d0/32, 4)",128]}],"name":"ln_out"
// TRAIN-SAME: "runtime_checks":["d0 % 32 == 0"]
func.func @dynamic(%x: tensor<?x128xbf16>, %g: tensor<128xbf16>, %w: tensor<64x128xbf16>) -> tensor<?x64xbf16> {
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w) recipe(#te.mxfp8) : (tensor<?x128xbf16>, tensor<128xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// (d) unaligned: 4 tokens cannot form 32-row blocks, so the op runs
// unquantized, with a remark.
// TRAIN: {"arch":"hopper","effective_recipe":"bf16","fallback":"recipe mxfp8 needs the rows of every GEMM operand divisible by 32; ln_out has 4: this op runs unquantized (bf16 path)"
// TRAIN-SAME: "quantized":[],"recipe":"mxfp8"
// INFER: "effective_recipe":"bf16"
func.func @unaligned(%x: tensor<4x128xbf16>, %g: tensor<128xbf16>, %w: tensor<64x128xbf16>) -> tensor<4x64xbf16> {
  // expected-remark @+1 {{recipe mxfp8 needs the rows of every GEMM operand divisible by 32; ln_out has 4: this op runs unquantized (bf16 path)}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) recipe(#te.mxfp8) : (tensor<4x128xbf16>, tensor<128xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  return %y : tensor<4x64xbf16>
}
