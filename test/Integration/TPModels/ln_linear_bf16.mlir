// A LayerNormLinear (LayerNorm with beta, bias) in bf16 with dynamic rows:
// column-parallel, its output holds the rank's 96/N features.
func.func @main(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %beta: tensor<64xbf16>,
                %w: tensor<96x64xbf16>, %b: tensor<96xbf16>) -> tensor<?x96xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %beta) weight(%w, %b)
      : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<96x64xbf16>,
         tensor<96xbf16>) -> tensor<?x96xbf16>
  return %y : tensor<?x96xbf16>
}
