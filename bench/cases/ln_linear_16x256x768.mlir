func.func @step(%x: tensor<16x256xbf16>, %g: tensor<256xbf16>, %b: tensor<256xbf16>, %w: tensor<768x256xbf16>, %bias: tensor<768xbf16>) -> tensor<16x768xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) : (tensor<16x256xbf16>, tensor<256xbf16>, tensor<256xbf16>, tensor<768x256xbf16>, tensor<768xbf16>) -> tensor<16x768xbf16>
  return %y : tensor<16x768xbf16>
}
