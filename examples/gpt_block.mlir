// A GPT-2 style transformer block's LayerNorm modules in te IR, with a
// dynamic token count: the attention input projection (LayerNormLinear that
// also returns its norm output, hidden 768 -> 3 x 768) and the MLP
// (LayerNormMLP, tanh-GELU, ffn 3072) with its residual add. Attention itself
// is outside te-mlir's scope; its output comes in as %attn.
//
// scripts/main.sh runs:  te-opt examples/gpt_block.mlir --te-apply-recipe=... --canonicalize
func.func @gpt_block(%x: tensor<?x768xbf16>, %attn: tensor<?x768xbf16>,
                     %ln1_g: tensor<768xbf16>, %ln1_b: tensor<768xbf16>,
                     %qkv_w: tensor<2304x768xbf16>, %qkv_b: tensor<2304xbf16>,
                     %ln2_g: tensor<768xbf16>, %ln2_b: tensor<768xbf16>,
                     %fc1_w: tensor<3072x768xbf16>, %fc1_b: tensor<3072xbf16>,
                     %fc2_w: tensor<768x3072xbf16>, %fc2_b: tensor<768xbf16>)
    -> (tensor<?x2304xbf16>, tensor<?x768xbf16>) {
  // The norm output is not used here: canonicalization drops it so that the
  // norm can emit the quantized GEMM input directly.
  %qkv, %ln1 = te.layernorm_linear %x norm layer_norm(%ln1_g, %ln1_b)
      weight(%qkv_w, %qkv_b) {return_layernorm_output}
      : (tensor<?x768xbf16>, tensor<768xbf16>, tensor<768xbf16>,
         tensor<2304x768xbf16>, tensor<2304xbf16>)
      -> (tensor<?x2304xbf16>, tensor<?x768xbf16>)
  %h = arith.addf %x, %attn : tensor<?x768xbf16>
  %mlp = te.layernorm_mlp %h norm layer_norm(%ln2_g, %ln2_b)
      fc1(%fc1_w, %fc1_b) act gelu fc2(%fc2_w, %fc2_b) {checkpoint}
      : (tensor<?x768xbf16>, tensor<768xbf16>, tensor<768xbf16>,
         tensor<3072x768xbf16>, tensor<3072xbf16>, tensor<768x3072xbf16>,
         tensor<768xbf16>) -> tensor<?x768xbf16>
  %out = arith.addf %h, %mlp : tensor<?x768xbf16>
  return %qkv, %out : tensor<?x2304xbf16>, tensor<?x768xbf16>
}
