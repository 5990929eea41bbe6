// RUN: te-opt %s --te-describe -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=HOPPER
// RUN: te-opt %s --te-describe="arch=blackwell" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=BLACKWELL
// RUN: te-opt %s --te-describe="arch=blackwell" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=NVTYPES
// RUN: te-opt %s --te-describe -o /dev/null --verify-diagnostics > /dev/null
//
// Float8 block scaling (§4.4): fp32 scales, 1x128 blocks for activations
// and gradients, 128x128 for weights, transposed columnwise data
// [K, d0, ..., d_{n-2}]. NVFP4 (§4.5): packed E2M1 (K/2 bytes per row),
// E4M3 block scales per 16, fp32 amaxes, columnwise data forced 2-D
// [K, M/2] by TE's C++ allocator. Values computed by hand.

// HOPPER: {"arch":"hopper","effective_recipe":"fp8-block"
// HOPPER-SAME: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":[256,128]},{"dtype":"float32","name":"rowwise_scale_inv","shape":[1,256]},{"dtype":"uint8","name":"columnwise_data","shape":[128,256]},{"dtype":"float32","name":"columnwise_scale_inv","shape":[2,128]}],"name":"ln_out","role":"activation"
// HOPPER-SAME: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":[256,128]},{"dtype":"float32","name":"rowwise_scale_inv","shape":[2,4]},{"dtype":"uint8","name":"columnwise_data","shape":[128,256]},{"dtype":"float32","name":"columnwise_scale_inv","shape":[1,4]}],"name":"weight","role":"weight","shape":[256,128],"type":"!te.qtensor<256x128xe4m3, #te.fp8_block<>, both, hopper, block_2d>"
// HOPPER-SAME: "dtype":"e4m3","inner":[{"dtype":"uint8","name":"rowwise_data","shape":[256,256]},{"dtype":"float32","name":"rowwise_scale_inv","shape":[2,256]},{"dtype":"uint8","name":"columnwise_data","shape":[256,256]},{"dtype":"float32","name":"columnwise_scale_inv","shape":[2,256]}],"name":"grad_output","role":"grad"
func.func @block(%x: tensor<256x128xbf16>, %g: tensor<128xbf16>, %w: tensor<256x128xbf16>) -> tensor<256x256xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) recipe(#te.fp8_block<>) : (tensor<256x128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>) -> tensor<256x256xbf16>
  return %y : tensor<256x256xbf16>
}

// 3-D block scaling: the columnwise copy is [K, d0, d1].
// HOPPER: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":[2,128,128]},{"dtype":"float32","name":"rowwise_scale_inv","shape":[1,256]},{"dtype":"uint8","name":"columnwise_data","shape":[128,2,128]},{"dtype":"float32","name":"columnwise_scale_inv","shape":[2,128]}],"name":"input"
func.func @block3d(%x: tensor<2x128x128xbf16>, %w: tensor<256x128xbf16>) -> tensor<2x128x256xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_block<>) : (tensor<2x128x128xbf16>, tensor<256x128xbf16>) -> tensor<2x128x256xbf16>
  return %y : tensor<2x128x256xbf16>
}

// Block scaling needs 128-multiples: a 64-wide hidden size falls back.
// HOPPER: "effective_recipe":"bf16","fallback":"recipe fp8-block needs the columns of every GEMM operand divisible by 128; ln_out has 64: this op runs unquantized (bf16 path)"
func.func @block_unaligned(%x: tensor<256x64xbf16>, %g: tensor<64xbf16>, %w: tensor<256x64xbf16>) -> tensor<256x256xbf16> {
  // expected-remark @+1 {{recipe fp8-block needs the columns of every GEMM operand divisible by 128; ln_out has 64}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) recipe(#te.fp8_block<>) : (tensor<256x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>) -> tensor<256x256xbf16>
  return %y : tensor<256x256xbf16>
}

// NVFP4 on Blackwell.
// BLACKWELL: "effective_recipe":"nvfp4"
// BLACKWELL-SAME: "dtype":"e2m1","inner":[{"dtype":"uint8","name":"rowwise_data","shape":[256,64]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":[256,8]},{"dtype":"uint8","name":"columnwise_data","shape":[128,128]},{"dtype":"uint8","name":"columnwise_scale_inv","shape":[128,16]},{"dtype":"float32","name":"amax_rowwise","shape":[1]},{"dtype":"float32","name":"amax_columnwise","shape":[1]}],"name":"input","role":"activation"
// BLACKWELL-SAME: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":[64,64]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":[128,8]},{"dtype":"uint8","name":"columnwise_data","shape":[128,32]},{"dtype":"uint8","name":"columnwise_scale_inv","shape":[128,4]},{"dtype":"float32","name":"amax_rowwise","shape":[1]},{"dtype":"float32","name":"amax_columnwise","shape":[1]}],"name":"weight"
// BLACKWELL-SAME: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":[256,32]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":[256,4]},{"dtype":"uint8","name":"columnwise_data","shape":[64,128]},{"dtype":"uint8","name":"columnwise_scale_inv","shape":[128,16]},{"dtype":"float32","name":"amax_rowwise","shape":[1]},{"dtype":"float32","name":"amax_columnwise","shape":[1]}],"name":"grad_output"
// Saved columnwise copies keep only the columnwise buffers and amax.
// BLACKWELL-SAME: "saved":[{"aliases":null,"bytes":18436,"dtype":"e2m1","inner":[{"dtype":"uint8","name":"columnwise_data","shape":[128,128]},{"dtype":"uint8","name":"columnwise_scale_inv","shape":[128,16]},{"dtype":"float32","name":"amax_columnwise","shape":[1]}],"name":"input"
// Types: 16x16 blocks for the weight, the Hadamard transform on the
// columnwise (wgrad) copies of the input and the gradient, swizzled scales.
// NVTYPES: "effective_recipe":"nvfp4"
// NVTYPES-SAME: "type":"!te.qtensor<256x128xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>"
// NVTYPES-SAME: "type":"!te.qtensor<64x128xe2m1, #te.nvfp4<>, both, blackwell, block_2d, swizzled>"
// NVTYPES-SAME: "type":"!te.qtensor<256x64xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>"
// NVTYPES-SAME: "type":"!te.qtensor<256x128xe2m1, #te.nvfp4<>, columnwise, blackwell, swizzled, rht>"
func.func @nvfp4(%x: tensor<256x128xbf16>, %w: tensor<64x128xbf16>) -> tensor<256x64xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.nvfp4<>) : (tensor<256x128xbf16>, tensor<64x128xbf16>) -> tensor<256x64xbf16>
  return %y : tensor<256x64xbf16>
}

// NVFP4 on a 3-D input: rowwise data stays 3-D (packed), columnwise is 2-D.
// BLACKWELL: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":[2,128,64]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":[256,8]},{"dtype":"uint8","name":"columnwise_data","shape":[128,128]},{"dtype":"uint8","name":"columnwise_scale_inv","shape":[128,16]},{"dtype":"float32","name":"amax_rowwise","shape":[1]},{"dtype":"float32","name":"amax_columnwise","shape":[1]}],"name":"input"
func.func @nvfp4_3d(%x: tensor<2x128x128xbf16>, %w: tensor<64x128xbf16>) -> tensor<2x128x64xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.nvfp4<>) : (tensor<2x128x128xbf16>, tensor<64x128xbf16>) -> tensor<2x128x64xbf16>
  return %y : tensor<2x128x64xbf16>
}

// Row-scaled NVFP4: per-row amax on activations, rowwise only, and the
// high-precision backward TE runs it with (saved tensors alias the inputs).
// BLACKWELL: "effective_recipe":"nvfp4"
// BLACKWELL-SAME: "inner":[{"dtype":"uint8","name":"rowwise_data","shape":[256,64]},{"dtype":"uint8","name":"rowwise_scale_inv","shape":[256,8]},{"dtype":"float32","name":"amax_rowwise","shape":[256]}],"name":"input","role":"activation","shape":[256,128],"type":"!te.qtensor<256x128xe2m1, #te.nvfp4<row_scaled = true>, rowwise, blackwell, swizzled, row_scaled>","usage":"rowwise"
// BLACKWELL-SAME: "amax_rowwise","shape":[1]}],"name":"weight"
// BLACKWELL-SAME: "saved":[{"aliases":"input:0",{{.*}}},{"aliases":"input:1",
func.func @nvfp4_row_scaled(%x: tensor<256x128xbf16>, %w: tensor<64x128xbf16>) -> tensor<256x64xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.nvfp4<row_scaled = true>) : (tensor<256x128xbf16>, tensor<64x128xbf16>) -> tensor<256x64xbf16>
  return %y : tensor<256x64xbf16>
}

// NVFP4 needs 16-multiples: 24 tokens fall back.
// BLACKWELL: "effective_recipe":"bf16","fallback":"recipe nvfp4 needs the rows of every GEMM operand divisible by 16; input has 24: this op runs unquantized (bf16 path)"
func.func @nvfp4_unaligned(%x: tensor<24x128xbf16>, %w: tensor<64x128xbf16>) -> tensor<24x64xbf16> {
  // expected-remark @+1 {{recipe nvfp4 needs the rows of every GEMM operand divisible by 16; input has 24}}
  %y = te.linear %x weight(%w) recipe(#te.nvfp4<>) : (tensor<24x128xbf16>, tensor<64x128xbf16>) -> tensor<24x64xbf16>
  return %y : tensor<24x64xbf16>
}
