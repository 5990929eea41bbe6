// A bf16 LayerNormMLP with a dynamic token count (te-run-robustness.mlir).
func.func @mlp(%x: tensor<?x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %w1: tensor<256x128xbf16>, %b1: tensor<256xbf16>, %w2: tensor<128x256xbf16>, %b2: tensor<128xbf16>) -> tensor<?x128xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<?x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<256xbf16>, tensor<128x256xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
