// Near misses of Hugging Face blocks (test/Integration/hf/hf_blocks.py NEGATIVES, exported by
// `test/Integration/hf/hf_models.py --write-negatives test/Conversion/TorchToTE/Inputs/hf_negative`) that
// te-import-torch must NOT raise to a TransformerEngine module: a tanh GELU
// with 0.0447 for 0.044715, an RMSNorm over the wrong dimension, a SiLU
// written as g * sigmoid(2 g), an RMSNorm without its square root, a quick
// GELU with 1.7 for 1.702.
// strict=true: an error from te-import-torch. Partial (the default): a
// remark, no te.layernorm_mlp; for the activation near misses the norm and
// FC1 may be raised as a te.layernorm_linear, but the activation stays in
// torch as written; for the norm near misses nothing of the norm is raised.
//
// RUN: not te-opt %S/Inputs/hf_negative/gelu_tanh_0447_bf16.raw.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: te-opt %S/Inputs/hf_negative/gelu_tanh_0447_bf16.raw.mlir --te-import-torch > %t.gelu_tanh_0447_bf16.out 2> %t.gelu_tanh_0447_bf16.err
// RUN: FileCheck %s --check-prefix=REMARK --input-file %t.gelu_tanh_0447_bf16.err
// RUN: FileCheck %s --check-prefix=ACT --input-file %t.gelu_tanh_0447_bf16.out
// RUN: not te-opt %S/Inputs/hf_negative/gelu_tanh_0447_f32.raw.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: te-opt %S/Inputs/hf_negative/gelu_tanh_0447_f32.raw.mlir --te-import-torch > %t.gelu_tanh_0447_f32.out 2> %t.gelu_tanh_0447_f32.err
// RUN: FileCheck %s --check-prefix=REMARK --input-file %t.gelu_tanh_0447_f32.err
// RUN: FileCheck %s --check-prefix=ACT --input-file %t.gelu_tanh_0447_f32.out
// RUN: not te-opt %S/Inputs/hf_negative/quick_gelu_1p7_bf16.raw.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: te-opt %S/Inputs/hf_negative/quick_gelu_1p7_bf16.raw.mlir --te-import-torch > %t.quick_gelu_1p7_bf16.out 2> %t.quick_gelu_1p7_bf16.err
// RUN: FileCheck %s --check-prefix=REMARK --input-file %t.quick_gelu_1p7_bf16.err
// RUN: FileCheck %s --check-prefix=ACT --input-file %t.quick_gelu_1p7_bf16.out
// RUN: not te-opt %S/Inputs/hf_negative/quick_gelu_1p7_f32.raw.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: te-opt %S/Inputs/hf_negative/quick_gelu_1p7_f32.raw.mlir --te-import-torch > %t.quick_gelu_1p7_f32.out 2> %t.quick_gelu_1p7_f32.err
// RUN: FileCheck %s --check-prefix=REMARK --input-file %t.quick_gelu_1p7_f32.err
// RUN: FileCheck %s --check-prefix=ACT --input-file %t.quick_gelu_1p7_f32.out
// RUN: not te-opt %S/Inputs/hf_negative/silu_sigmoid_2x_bf16.raw.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: te-opt %S/Inputs/hf_negative/silu_sigmoid_2x_bf16.raw.mlir --te-import-torch > %t.silu_sigmoid_2x_bf16.out 2> %t.silu_sigmoid_2x_bf16.err
// RUN: FileCheck %s --check-prefix=REMARK --input-file %t.silu_sigmoid_2x_bf16.err
// RUN: FileCheck %s --check-prefix=ACT --input-file %t.silu_sigmoid_2x_bf16.out
// RUN: not te-opt %S/Inputs/hf_negative/silu_sigmoid_2x_f32.raw.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: te-opt %S/Inputs/hf_negative/silu_sigmoid_2x_f32.raw.mlir --te-import-torch > %t.silu_sigmoid_2x_f32.out 2> %t.silu_sigmoid_2x_f32.err
// RUN: FileCheck %s --check-prefix=REMARK --input-file %t.silu_sigmoid_2x_f32.err
// RUN: FileCheck %s --check-prefix=ACT --input-file %t.silu_sigmoid_2x_f32.out
// RUN: not te-opt %S/Inputs/hf_negative/rmsnorm_no_rsqrt_bf16.raw.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: te-opt %S/Inputs/hf_negative/rmsnorm_no_rsqrt_bf16.raw.mlir --te-import-torch > %t.rmsnorm_no_rsqrt_bf16.out 2> %t.rmsnorm_no_rsqrt_bf16.err
// RUN: FileCheck %s --check-prefix=REMARK --input-file %t.rmsnorm_no_rsqrt_bf16.err
// RUN: FileCheck %s --check-prefix=NORM --input-file %t.rmsnorm_no_rsqrt_bf16.out
// RUN: not te-opt %S/Inputs/hf_negative/rmsnorm_no_rsqrt_f32.raw.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: te-opt %S/Inputs/hf_negative/rmsnorm_no_rsqrt_f32.raw.mlir --te-import-torch > %t.rmsnorm_no_rsqrt_f32.out 2> %t.rmsnorm_no_rsqrt_f32.err
// RUN: FileCheck %s --check-prefix=REMARK --input-file %t.rmsnorm_no_rsqrt_f32.err
// RUN: FileCheck %s --check-prefix=NORM --input-file %t.rmsnorm_no_rsqrt_f32.out
// RUN: not te-opt %S/Inputs/hf_negative/rmsnorm_wrong_dim_bf16.raw.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: te-opt %S/Inputs/hf_negative/rmsnorm_wrong_dim_bf16.raw.mlir --te-import-torch > %t.rmsnorm_wrong_dim_bf16.out 2> %t.rmsnorm_wrong_dim_bf16.err
// RUN: FileCheck %s --check-prefix=REMARK --input-file %t.rmsnorm_wrong_dim_bf16.err
// RUN: FileCheck %s --check-prefix=NORM --input-file %t.rmsnorm_wrong_dim_bf16.out
// RUN: not te-opt %S/Inputs/hf_negative/rmsnorm_wrong_dim_f32.raw.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: te-opt %S/Inputs/hf_negative/rmsnorm_wrong_dim_f32.raw.mlir --te-import-torch > %t.rmsnorm_wrong_dim_f32.out 2> %t.rmsnorm_wrong_dim_f32.err
// RUN: FileCheck %s --check-prefix=REMARK --input-file %t.rmsnorm_wrong_dim_f32.err
// RUN: FileCheck %s --check-prefix=NORM --input-file %t.rmsnorm_wrong_dim_f32.out
//
// STRICT: error: te-import-torch
// REMARK: remark: te-import-torch
// ACT-NOT: te.layernorm_mlp
// ACT: torch.aten.{{tanh|sigmoid}}
// ACT-NOT: te.layernorm_mlp
// NORM-NOT: te.layernorm_mlp
// NORM-NOT: te.layernorm_linear
// NORM: torch.aten.
