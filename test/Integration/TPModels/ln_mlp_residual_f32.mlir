// Two f32 LayerNormMLP layers [batch, seq, hidden] with residual adds:
// under sequence parallelism the first's output rows feed the second as
// they are.
func.func @main(%x: tensor<8x4x64xf32>, %g: tensor<64xf32>, %w1: tensor<128x64xf32>,
                %b1: tensor<128xf32>, %w2: tensor<64x128xf32>, %b2: tensor<64xf32>,
                %g2: tensor<64xf32>, %v1: tensor<256x64xf32>, %v2: tensor<64x128xf32>)
    -> tensor<8x4x64xf32> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1, %b1) act gelu fc2(%w2, %b2)
      : (tensor<8x4x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128xf32>,
         tensor<64x128xf32>, tensor<64xf32>) -> tensor<8x4x64xf32>
  %h = arith.addf %x, %y : tensor<8x4x64xf32>
  %z = te.layernorm_mlp %h norm rms_norm(%g2) fc1(%v1) act swiglu fc2(%v2)
      : (tensor<8x4x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<64x128xf32>)
      -> tensor<8x4x64xf32>
  %r = arith.addf %h, %z : tensor<8x4x64xf32>
  return %r : tensor<8x4x64xf32>
}
