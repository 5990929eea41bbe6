// The fusion passes' work is linear in the function: report-work counts the
// candidates, the remarks and the operations numbered to print the remarks'
// operations (the "see current operation" note). Each function is numbered
// once (again only after a fusion), so 4x the layers is 4x the work; with a
// numbering per remark (Operation::emitRemark) the 8-layer model would
// number 24 x 200 operations instead of 200 (quadratic). No timing here:
// the counts are exact (under FP8 each backward also transposes its rowwise
// act_out, te.add_columnwise, and each forward keeps its norm output's
// columnwise copy, te.drop_usage).
//
// RUN: te-opt %s --split-input-file --te-generate-backward --te-decompose --cse --te-fuse-gemm-epilogues="act-epilogues=auto report-work" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BF16
// RUN: te-opt %s --split-input-file --te-apply-recipe="recipe=fp8-current override=true" --te-generate-backward --te-thread-recipe-state --te-decompose --cse --te-fuse-gemm-epilogues="act-epilogues=auto report-work" --te-fuse-dbias-dact=report-work --te-fuse-norm-quantize=report-work --te-fuse-act-quantize=report-work -o /dev/null 2>&1 | FileCheck %s --check-prefix=FP8
//
// BF16: remark: te-fuse-gemm-epilogues: work: 10 candidates, 6 remarks, 50 operations numbered for the remarks
// BF16: remark: te-fuse-gemm-epilogues: work: 40 candidates, 24 remarks, 200 operations numbered for the remarks
// FP8: remark: te-fuse-gemm-epilogues: work: 10 candidates, 10 remarks, 70 operations numbered for the remarks
// FP8: remark: te-fuse-dbias-dact: work: 4 candidates, 0 remarks, 0 operations numbered for the remarks
// FP8: remark: te-fuse-norm-quantize: work: 16 candidates, 0 remarks, 0 operations numbered for the remarks
// FP8: remark: te-fuse-act-quantize: work: 0 candidates, 0 remarks, 0 operations numbered for the remarks
// FP8: remark: te-fuse-gemm-epilogues: work: 40 candidates, 40 remarks, 268 operations numbered for the remarks
// FP8: remark: te-fuse-dbias-dact: work: 16 candidates, 0 remarks, 0 operations numbered for the remarks
// FP8: remark: te-fuse-norm-quantize: work: 52 candidates, 0 remarks, 0 operations numbered for the remarks

// Two layers.
func.func @two(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %c1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %c2: tensor<64xbf16>) -> tensor<16x64xbf16> {
  %m0 = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %c1) act gelu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h0 = arith.addf %x, %m0 : tensor<16x64xbf16>
  %m1 = te.layernorm_mlp %h0 norm layer_norm(%g, %b) fc1(%w1, %c1) act gelu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h1 = arith.addf %h0, %m1 : tensor<16x64xbf16>
  return %h1 : tensor<16x64xbf16>
}

// -----

// Eight layers.
func.func @eight(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %c1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %c2: tensor<64xbf16>) -> tensor<16x64xbf16> {
  %m0 = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %c1) act gelu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h0 = arith.addf %x, %m0 : tensor<16x64xbf16>
  %m1 = te.layernorm_mlp %h0 norm layer_norm(%g, %b) fc1(%w1, %c1) act gelu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h1 = arith.addf %h0, %m1 : tensor<16x64xbf16>
  %m2 = te.layernorm_mlp %h1 norm layer_norm(%g, %b) fc1(%w1, %c1) act gelu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h2 = arith.addf %h1, %m2 : tensor<16x64xbf16>
  %m3 = te.layernorm_mlp %h2 norm layer_norm(%g, %b) fc1(%w1, %c1) act gelu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h3 = arith.addf %h2, %m3 : tensor<16x64xbf16>
  %m4 = te.layernorm_mlp %h3 norm layer_norm(%g, %b) fc1(%w1, %c1) act gelu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h4 = arith.addf %h3, %m4 : tensor<16x64xbf16>
  %m5 = te.layernorm_mlp %h4 norm layer_norm(%g, %b) fc1(%w1, %c1) act gelu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h5 = arith.addf %h4, %m5 : tensor<16x64xbf16>
  %m6 = te.layernorm_mlp %h5 norm layer_norm(%g, %b) fc1(%w1, %c1) act gelu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h6 = arith.addf %h5, %m6 : tensor<16x64xbf16>
  %m7 = te.layernorm_mlp %h6 norm layer_norm(%g, %b) fc1(%w1, %c1) act gelu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h7 = arith.addf %h6, %m7 : tensor<16x64xbf16>
  return %h7 : tensor<16x64xbf16>
}
