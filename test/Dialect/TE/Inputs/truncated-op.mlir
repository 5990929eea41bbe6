func.func @f(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<512x64xbf16>, %w2: tensor<64x256xbf16>) -> tensor<?x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2
