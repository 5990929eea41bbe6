func.func @step(%x: tensor<16x256xbf16>, %g: tensor<256xbf16>, %w1: tensor<2048x256xbf16>, %w2: tensor<256x1024xbf16>) -> tensor<16x256xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) : (tensor<16x256xbf16>, tensor<256xbf16>, tensor<2048x256xbf16>, tensor<256x1024xbf16>) -> tensor<16x256xbf16>
  return %y : tensor<16x256xbf16>
}
