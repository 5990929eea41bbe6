// A LayerNormMLP (RMSNorm, SwiGLU, FC2 bias) in bf16 with dynamic rows:
// FC1's gated weight [2F, H] is split per half over the ranks.
func.func @main(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<256x64xbf16>,
                %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2, %b2)
      : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>,
         tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
