// RUN: te-opt %s --split-input-file --verify-roundtrip | FileCheck %s

// LayerNormLinear with every operand, a returned norm output and a
// non-default eps, on a 2-D [tokens, hidden] input.
// CHECK-LABEL: func.func @layernorm_linear_full
// CHECK-SAME: (%[[X:.+]]: tensor<16x64xf32>, %[[G:.+]]: tensor<64xf32>, %[[B:.+]]: tensor<64xf32>, %[[W:.+]]: tensor<128x64xf32>, %[[BIAS:.+]]: tensor<128xf32>)
// CHECK: %{{.+}}, %{{.+}} = te.layernorm_linear %[[X]] norm layer_norm(%[[G]], %[[B]]) weight(%[[W]], %[[BIAS]])
// CHECK-SAME: {eps = 1.000000e-03 : f64, return_layernorm_output, zero_centered_gamma}
// CHECK-SAME: -> (tensor<16x128xf32>, tensor<16x64xf32>)
func.func @layernorm_linear_full(%x: tensor<16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %w: tensor<128x64xf32>, %bias: tensor<128xf32>) -> (tensor<16x128xf32>, tensor<16x64xf32>) {
  %y, %ln = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) {eps = 1.0e-3 : f64, zero_centered_gamma, return_layernorm_output} : (tensor<16x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> (tensor<16x128xf32>, tensor<16x64xf32>)
  return %y, %ln : tensor<16x128xf32>, tensor<16x64xf32>
}

// -----

// RMSNorm without beta and without bias, [batch, seq, hidden] input; the
// default eps is not printed.
// CHECK-LABEL: func.func @rmsnorm_linear_3d
// CHECK: te.layernorm_linear %{{.+}} norm rms_norm(%{{[^,]+}}) weight(%{{[^,]+}}) : (tensor<2x8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>) -> tensor<2x8x32xbf16>
// CHECK-NOT: eps
func.func @rmsnorm_linear_3d(%x: tensor<2x8x64xbf16>, %g: tensor<64xbf16>, %w: tensor<32x64xbf16>) -> tensor<2x8x32xbf16> {
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w) {eps = 1.0e-5 : f64} : (tensor<2x8x64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>) -> tensor<2x8x32xbf16>
  return %y : tensor<2x8x32xbf16>
}

// -----

// LayerNorm without beta (nn.LayerNorm(bias=False)) but with a bias, in f16.
// CHECK-LABEL: func.func @layernorm_no_beta
// CHECK: te.layernorm_linear %{{.+}} norm layer_norm(%{{[^,)]+}}) weight(%{{[^,]+}}, %{{[^)]+}}) : (tensor<4x64xf16>, tensor<64xf16>, tensor<32x64xf16>, tensor<32xf16>) -> tensor<4x32xf16>
func.func @layernorm_no_beta(%x: tensor<4x64xf16>, %g: tensor<64xf16>, %w: tensor<32x64xf16>, %b: tensor<32xf16>) -> tensor<4x32xf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w, %b) : (tensor<4x64xf16>, tensor<64xf16>, tensor<32x64xf16>, tensor<32xf16>) -> tensor<4x32xf16>
  return %y : tensor<4x32xf16>
}

// -----

// Dynamic leading dimensions (tokens, or batch and sequence).
// CHECK-LABEL: func.func @dynamic_leading
// CHECK: te.layernorm_linear {{.*}} -> tensor<?x128xbf16>
// CHECK: te.layernorm_mlp {{.*}} -> tensor<?x?x64xbf16>
// CHECK: te.linear {{.*}} -> tensor<?x8x32xbf16>
func.func @dynamic_leading(%x: tensor<?x64xbf16>, %x3: tensor<?x?x64xbf16>, %xs: tensor<?x8x64xbf16>, %g: tensor<64xbf16>, %w: tensor<128x64xbf16>, %w1: tensor<256x64xbf16>, %w2: tensor<64x256xbf16>, %wl: tensor<32x64xbf16>) -> (tensor<?x128xbf16>, tensor<?x?x64xbf16>, tensor<?x8x32xbf16>) {
  %a = te.layernorm_linear %x norm layer_norm(%g) weight(%w) : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %b = te.layernorm_mlp %x3 norm layer_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<?x?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x256xbf16>) -> tensor<?x?x64xbf16>
  %c = te.linear %xs weight(%wl) : (tensor<?x8x64xbf16>, tensor<32x64xbf16>) -> tensor<?x8x32xbf16>
  return %a, %b, %c : tensor<?x128xbf16>, tensor<?x?x64xbf16>, tensor<?x8x32xbf16>
}

// -----

// LayerNormMLP with both biases, checkpointing and a returned norm output.
// CHECK-LABEL: func.func @layernorm_mlp_full
// CHECK: te.layernorm_mlp %{{.+}} norm layer_norm(%{{[^,]+}}, %{{[^)]+}}) fc1(%{{[^,]+}}, %{{[^)]+}}) act gelu fc2(%{{[^,]+}}, %{{[^)]+}}) {checkpoint, return_layernorm_output}
// CHECK-SAME: -> (tensor<8x64xf32>, tensor<8x64xf32>)
func.func @layernorm_mlp_full(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %w1: tensor<256x64xf32>, %b1: tensor<256xf32>, %w2: tensor<64x256xf32>, %b2: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %y, %ln = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) {checkpoint, return_layernorm_output} : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<256xf32>, tensor<64x256xf32>, tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>)
  return %y, %ln : tensor<8x64xf32>, tensor<8x64xf32>
}

// -----

// All twelve TE activations and PyTorch's erf GELU; the gated ones have a
// 2F-wide FC1.
// CHECK-LABEL: func.func @activations
// CHECK: act gelu
// CHECK: act qgelu
// CHECK: act relu
// CHECK: act srelu
// CHECK: act silu
// CHECK: act gelu_erf
// CHECK: act geglu
// CHECK: act glu
// CHECK: act qgeglu
// CHECK: act reglu
// CHECK: act sreglu
// CHECK: act swiglu
// CHECK: act clamped_swiglu fc2
// CHECK: act clamped_swiglu<limit = 5.000000e+00, glu_linear_offset = 5.000000e-01> fc2
func.func @activations(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %w1g: tensor<256x64xbf16>, %w2: tensor<64x128xbf16>) {
  %0 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  %1 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act qgelu fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  %2 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act relu fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  %3 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act srelu fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  %4 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act silu fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  %12 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu_erf fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  %5 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1g) act geglu fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  %6 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1g) act glu fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  %7 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1g) act qgeglu fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  %8 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1g) act reglu fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  %9 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1g) act sreglu fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  %10 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1g) act swiglu fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  %11 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1g) act clamped_swiglu<limit = 7.0, alpha = 1.702, glu_linear_offset = 1.0> fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  %13 = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1g) act clamped_swiglu<glu_linear_offset = 0.5, limit = 5.0> fc2(%w2) : (tensor<4x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<4x64xbf16>
  return
}

// -----

// Every recipe, with defaults elided and non-defaults printed.
// CHECK-LABEL: func.func @recipes
// CHECK: recipe(#te.bf16)
// CHECK: recipe(#te.fp8_delayed<>)
// CHECK: recipe(#te.fp8_delayed<margin = 1, amax_history_len = 16, amax_compute_algo = most_recent, format = e4m3>)
// CHECK: recipe(#te.fp8_current<>)
// CHECK: recipe(#te.fp8_current<format = e5m2, power_2_scales = true>)
// CHECK: recipe(#te.mxfp8)
// CHECK: recipe(#te.fp8_block<>)
// CHECK: recipe(#te.fp8_block<x_block_dim = 2, w_block_dim = 1, fp32_scales = true>)
// CHECK: recipe(#te.nvfp4<>)
// CHECK: recipe(#te.nvfp4<rht = false, stochastic_rounding = false, weight_2d = false>)
func.func @recipes(%x: tensor<128x128xbf16>, %w: tensor<128x128xbf16>) {
  %0 = te.linear %x weight(%w) recipe(#te.bf16) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xbf16>
  %1 = te.linear %x weight(%w) recipe(#te.fp8_delayed<>) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xbf16>
  %2 = te.linear %x weight(%w) recipe(#te.fp8_delayed<margin = 1, amax_history_len = 16, amax_compute_algo = most_recent, format = e4m3>) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xbf16>
  %3 = te.linear %x weight(%w) recipe(#te.fp8_current<format = hybrid, power_2_scales = false>) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xbf16>
  %4 = te.linear %x weight(%w) recipe(#te.fp8_current<format = e5m2, power_2_scales = true>) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xbf16>
  %5 = te.linear %x weight(%w) recipe(#te.mxfp8) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xbf16>
  %6 = te.linear %x weight(%w) recipe(#te.fp8_block<x_block_dim = 1, w_block_dim = 2, grad_block_dim = 1>) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xbf16>
  %7 = te.linear %x weight(%w) recipe(#te.fp8_block<x_block_dim = 2, w_block_dim = 1, fp32_scales = true>) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xbf16>
  %8 = te.linear %x weight(%w) recipe(#te.nvfp4<>) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xbf16>
  %9 = te.linear %x weight(%w) recipe(#te.nvfp4<rht = false, stochastic_rounding = false, weight_2d = false>) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xbf16>
  return
}

// -----

// NVFP4 without RHT runs on f32 activations.
// CHECK-LABEL: func.func @nvfp4_f32_no_rht
// CHECK: te.layernorm_mlp {{.*}} recipe(#te.nvfp4<rht = false>)
func.func @nvfp4_f32_no_rht(%x: tensor<32x64xf32>, %g: tensor<64xf32>, %w1: tensor<256x64xf32>, %w2: tensor<64x256xf32>) -> tensor<32x64xf32> {
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1) act silu fc2(%w2) recipe(#te.nvfp4<rht = false>) : (tensor<32x64xf32>, tensor<64xf32>, tensor<256x64xf32>, tensor<64x256xf32>) -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}

// -----

// The generic form parses too (properties carry the attributes).
// CHECK-LABEL: func.func @generic_form
// CHECK: te.linear %{{.+}} weight(%{{[^,]+}}, %{{[^)]+}}) recipe(#te.mxfp8) : (tensor<4x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<4x32xbf16>
func.func @generic_form(%x: tensor<4x64xbf16>, %w: tensor<32x64xbf16>, %b: tensor<32xbf16>) -> tensor<4x32xbf16> {
  %y = "te.linear"(%x, %w, %b) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, recipe = #te.mxfp8}> : (tensor<4x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<4x32xbf16>
  return %y : tensor<4x32xbf16>
}

// -----

// The GEMMs with GELU in their epilogue (te-fuse-gemm-epilogues
// act-epilogues): with and without bias and pre-activation, dynamic tokens.
// CHECK-LABEL: func.func @gemm_act_forms
// CHECK:       %{{.+}}, %[[PRE:.+]] = te.gemm_act gelu %arg0, %arg1 bias(%arg2) : (tensor<?x4x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> (tensor<?x4x128xbf16>, tensor<?x4x128xbf16>)
// CHECK-NEXT:  te.gemm_act gelu %arg0, %arg1 : (tensor<?x4x64xbf16>, tensor<128x64xbf16>) -> tensor<?x4x128xbf16>{{$}}
// CHECK-NEXT:  te.gemm_dact gelu %arg3, %arg4 pre(%[[PRE]]) : (tensor<?x4x64xbf16>, tensor<64x128xbf16>, tensor<?x4x128xbf16>) -> tensor<?x4x128xbf16>
func.func @gemm_act_forms(%x: tensor<?x4x64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %dy: tensor<?x4x64xbf16>, %w2: tensor<64x128xbf16>) {
  %y, %pre = te.gemm_act gelu %x, %w1 bias(%b1) : (tensor<?x4x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> (tensor<?x4x128xbf16>, tensor<?x4x128xbf16>)
  %y2 = te.gemm_act gelu %x, %w1 : (tensor<?x4x64xbf16>, tensor<128x64xbf16>) -> tensor<?x4x128xbf16>
  %dx = te.gemm_dact gelu %dy, %w2 pre(%pre) : (tensor<?x4x64xbf16>, tensor<64x128xbf16>, tensor<?x4x128xbf16>) -> tensor<?x4x128xbf16>
  return
}

// -----

// te.normalization: a standalone LayerNorm with beta, a dynamic token dim,
// zero-centered gamma and a non-default eps.
// CHECK-LABEL: func.func @normalization_layer_norm
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xbf16>, %[[G:.+]]: tensor<64xbf16>, %[[B:.+]]: tensor<64xbf16>)
// CHECK: te.normalization %[[X]] norm layer_norm(%[[G]], %[[B]]) {eps = 1.000000e-03 : f64, zero_centered_gamma} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
func.func @normalization_layer_norm(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = te.normalization %x norm layer_norm(%g, %b) {eps = 1.0e-3 : f64, zero_centered_gamma} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// RMSNorm on [batch, seq, hidden] under an FP8 recipe: the recipe is kept
// (and ignored: no GEMM), no scales.
// CHECK-LABEL: func.func @normalization_rms_norm_recipe
// CHECK: te.normalization %{{.+}} norm rms_norm(%{{[^,]+}}) recipe(#te.fp8_delayed<>) : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
func.func @normalization_rms_norm_recipe(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %y = te.normalization %x norm rms_norm(%g) recipe(#te.fp8_delayed<>) : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

// Its result type is inferred (the input's).
// CHECK-LABEL: func.func @normalization_generic
// CHECK: te.normalization %{{.+}} norm layer_norm(%{{[^,]+}}) : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
func.func @normalization_generic(%x: tensor<4x16xf16>, %g: tensor<16xf16>) -> tensor<4x16xf16> {
  %y = "te.normalization"(%x, %g) <{normalization = #te<normalization layer_norm>}> : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
  return %y : tensor<4x16xf16>
}
