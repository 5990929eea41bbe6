// A LayerNormMLP (LayerNorm with beta, GELU, both biases) in bf16 with
// dynamic rows: one device's model, compiled for tensor parallelism by
// te-compile --tp (utils/tp_check.sh).
func.func @main(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %beta: tensor<64xbf16>,
                %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>,
                %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %beta) fc1(%w1, %b1) act gelu fc2(%w2, %b2)
      : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>,
         tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
