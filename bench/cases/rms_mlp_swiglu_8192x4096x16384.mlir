func.func @step(%x: tensor<8192x4096xbf16>, %g: tensor<4096xbf16>, %w1: tensor<32768x4096xbf16>, %w2: tensor<4096x16384xbf16>) -> tensor<8192x4096xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) : (tensor<8192x4096xbf16>, tensor<4096xbf16>, tensor<32768x4096xbf16>, tensor<4096x16384xbf16>) -> tensor<8192x4096xbf16>
  return %y : tensor<8192x4096xbf16>
}
