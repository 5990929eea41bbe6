// Near misses of Hugging Face blocks (tools/hf_blocks.py NEGATIVES, exported by
// `tools/hf_models.py --write-negatives test/Import/Inputs/hf_negative`) that
// te-import-torch must NOT raise to a TransformerEngine module: a tanh GELU
// with 0.0447 for 0.044715, an RMSNorm over the wrong dimension, a SiLU
// written as g * sigmoid(2 g), an RMSNorm without its square root, a quick
// GELU with 1.7 for 1.702. Today the importer rejects them with an error; a
// later importer may leave them as torch ops with a remark. Either is fine:
// the importer must say why (an error or a remark from te-import-torch) and
// produce no te.layernorm_mlp / te.layernorm_linear.
//
// RUN: te-opt %S/Inputs/hf_negative/gelu_tanh_0447_bf16.raw.mlir --te-import-torch > %t.gelu_tanh_0447_bf16.out 2> %t.gelu_tanh_0447_bf16.err || true
// RUN: FileCheck %s --check-prefix=NOTE --input-file %t.gelu_tanh_0447_bf16.err
// RUN: FileCheck %s --check-prefix=NONE --allow-empty --input-file %t.gelu_tanh_0447_bf16.out
// RUN: te-opt %S/Inputs/hf_negative/gelu_tanh_0447_f32.raw.mlir --te-import-torch > %t.gelu_tanh_0447_f32.out 2> %t.gelu_tanh_0447_f32.err || true
// RUN: FileCheck %s --check-prefix=NOTE --input-file %t.gelu_tanh_0447_f32.err
// RUN: FileCheck %s --check-prefix=NONE --allow-empty --input-file %t.gelu_tanh_0447_f32.out
// RUN: te-opt %S/Inputs/hf_negative/quick_gelu_1p7_bf16.raw.mlir --te-import-torch > %t.quick_gelu_1p7_bf16.out 2> %t.quick_gelu_1p7_bf16.err || true
// RUN: FileCheck %s --check-prefix=NOTE --input-file %t.quick_gelu_1p7_bf16.err
// RUN: FileCheck %s --check-prefix=NONE --allow-empty --input-file %t.quick_gelu_1p7_bf16.out
// RUN: te-opt %S/Inputs/hf_negative/quick_gelu_1p7_f32.raw.mlir --te-import-torch > %t.quick_gelu_1p7_f32.out 2> %t.quick_gelu_1p7_f32.err || true
// RUN: FileCheck %s --check-prefix=NOTE --input-file %t.quick_gelu_1p7_f32.err
// RUN: FileCheck %s --check-prefix=NONE --allow-empty --input-file %t.quick_gelu_1p7_f32.out
// RUN: te-opt %S/Inputs/hf_negative/rmsnorm_no_rsqrt_bf16.raw.mlir --te-import-torch > %t.rmsnorm_no_rsqrt_bf16.out 2> %t.rmsnorm_no_rsqrt_bf16.err || true
// RUN: FileCheck %s --check-prefix=NOTE --input-file %t.rmsnorm_no_rsqrt_bf16.err
// RUN: FileCheck %s --check-prefix=NONE --allow-empty --input-file %t.rmsnorm_no_rsqrt_bf16.out
// RUN: te-opt %S/Inputs/hf_negative/rmsnorm_no_rsqrt_f32.raw.mlir --te-import-torch > %t.rmsnorm_no_rsqrt_f32.out 2> %t.rmsnorm_no_rsqrt_f32.err || true
// RUN: FileCheck %s --check-prefix=NOTE --input-file %t.rmsnorm_no_rsqrt_f32.err
// RUN: FileCheck %s --check-prefix=NONE --allow-empty --input-file %t.rmsnorm_no_rsqrt_f32.out
// RUN: te-opt %S/Inputs/hf_negative/rmsnorm_wrong_dim_bf16.raw.mlir --te-import-torch > %t.rmsnorm_wrong_dim_bf16.out 2> %t.rmsnorm_wrong_dim_bf16.err || true
// RUN: FileCheck %s --check-prefix=NOTE --input-file %t.rmsnorm_wrong_dim_bf16.err
// RUN: FileCheck %s --check-prefix=NONE --allow-empty --input-file %t.rmsnorm_wrong_dim_bf16.out
// RUN: te-opt %S/Inputs/hf_negative/rmsnorm_wrong_dim_f32.raw.mlir --te-import-torch > %t.rmsnorm_wrong_dim_f32.out 2> %t.rmsnorm_wrong_dim_f32.err || true
// RUN: FileCheck %s --check-prefix=NOTE --input-file %t.rmsnorm_wrong_dim_f32.err
// RUN: FileCheck %s --check-prefix=NONE --allow-empty --input-file %t.rmsnorm_wrong_dim_f32.out
// RUN: te-opt %S/Inputs/hf_negative/silu_sigmoid_2x_bf16.raw.mlir --te-import-torch > %t.silu_sigmoid_2x_bf16.out 2> %t.silu_sigmoid_2x_bf16.err || true
// RUN: FileCheck %s --check-prefix=NOTE --input-file %t.silu_sigmoid_2x_bf16.err
// RUN: FileCheck %s --check-prefix=NONE --allow-empty --input-file %t.silu_sigmoid_2x_bf16.out
// RUN: te-opt %S/Inputs/hf_negative/silu_sigmoid_2x_f32.raw.mlir --te-import-torch > %t.silu_sigmoid_2x_f32.out 2> %t.silu_sigmoid_2x_f32.err || true
// RUN: FileCheck %s --check-prefix=NOTE --input-file %t.silu_sigmoid_2x_f32.err
// RUN: FileCheck %s --check-prefix=NONE --allow-empty --input-file %t.silu_sigmoid_2x_f32.out
//
// NOTE: {{(error|remark)}}: te-import-torch
// NONE-NOT: te.layernorm_mlp
// NONE-NOT: te.layernorm_linear
