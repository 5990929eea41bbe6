func.func @step(%x: tensor<8192x4096xbf16>, %g: tensor<4096xbf16>, %b: tensor<4096xbf16>, %w: tensor<12288x4096xbf16>, %bias: tensor<12288xbf16>) -> tensor<8192x12288xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) : (tensor<8192x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>, tensor<12288x4096xbf16>, tensor<12288xbf16>) -> tensor<8192x12288xbf16>
  return %y : tensor<8192x12288xbf16>
}
