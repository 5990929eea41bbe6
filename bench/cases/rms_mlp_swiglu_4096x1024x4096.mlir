func.func @step(%x: tensor<4096x1024xbf16>, %g: tensor<1024xbf16>, %w1: tensor<8192x1024xbf16>, %w2: tensor<1024x4096xbf16>) -> tensor<4096x1024xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) : (tensor<4096x1024xbf16>, tensor<1024xbf16>, tensor<8192x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<4096x1024xbf16>
  return %y : tensor<4096x1024xbf16>
}
