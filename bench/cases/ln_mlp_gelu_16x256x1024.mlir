func.func @step(%x: tensor<16x256xbf16>, %g: tensor<256xbf16>, %b: tensor<256xbf16>, %w1: tensor<1024x256xbf16>, %b1: tensor<1024xbf16>, %w2: tensor<256x1024xbf16>, %b2: tensor<256xbf16>) -> tensor<16x256xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<16x256xbf16>, tensor<256xbf16>, tensor<256xbf16>, tensor<1024x256xbf16>, tensor<1024xbf16>, tensor<256x1024xbf16>, tensor<256xbf16>) -> tensor<16x256xbf16>
  return %y : tensor<16x256xbf16>
}
