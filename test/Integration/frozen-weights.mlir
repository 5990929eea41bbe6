// Frozen weights end to end: the gradients a library with te.frozen weights
// still produces are bit-identical to the same model's without te.frozen
// (every weight trained), as is the forward result; the frozen weights get
// no gradient file, and the saved bundle is smaller. The one exception, the
// bias gradient of a frozen weight's layer where the full library sums it
// in the wgrad GEMM's epilogue, is listed with `CLOSE:` (check_frozen.py). bf16, fp8-current and
// fp8-delayed (whose backward state, updated from rowwise-only output
// gradients, is identical too), stored and checkpointed MLPs.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: sed 's/ {te.frozen}//g' %s > %t/full.mlir
// RUN: %python %S/check_frozen.py %te_bin %t %s %t/full.mlir bf16
// RUN: %python %S/check_frozen.py %te_bin %t %s %t/full.mlir bf16 --checkpoint
// RUN: %python %S/check_frozen.py %te_bin %t %s %t/full.mlir fp8-current
// RUN: %python %S/check_frozen.py %te_bin %t %s %t/full.mlir fp8-delayed
// RUN: %python %S/check_frozen.py %te_bin %t %s %t/full.mlir fp8-delayed --checkpoint

// FC1's weight frozen, its bias trained: the bias gradient comes from the
// activation's derivative instead of the FC1 wgrad GEMM's epilogue.
// CLOSE: mlp_fc1 3
func.func @mlp_fc1(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16> {te.frozen}, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<32x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<32x64xbf16>
  return %y : tensor<32x64xbf16>
}

// FC2's weight and bias frozen.
func.func @mlp_fc2(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16> {te.frozen}, %b2: tensor<64xbf16> {te.frozen}) -> tensor<32x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<32x64xbf16>
  return %y : tensor<32x64xbf16>
}

// Both MLP weights frozen (swiglu, RMSNorm).
func.func @mlp_both(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<256x64xbf16> {te.frozen}, %w2: tensor<64x128xbf16> {te.frozen}) -> tensor<32x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<32x64xbf16>
  return %y : tensor<32x64xbf16>
}

// A frozen LayerNormLinear weight feeding a frozen Linear weight (biases
// trained): the input gradient flows through both dgrads.
func.func @lnl_lin(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w: tensor<128x64xbf16> {te.frozen}, %b: tensor<128xbf16>, %w2: tensor<64x128xbf16> {te.frozen}, %b2: tensor<64xbf16>) -> tensor<32x64xbf16> {
  %h = te.layernorm_linear %x norm layer_norm(%g) weight(%w, %b) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<32x128xbf16>
  %y = te.linear %h weight(%w2, %b2) : (tensor<32x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<32x64xbf16>
  return %y : tensor<32x64xbf16>
}
