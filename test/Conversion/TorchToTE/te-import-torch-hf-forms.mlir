// The norm and activation spellings of real Hugging Face blocks
// (Inputs/hf_forms, test/Integration/hf/export_hf_forms.py): each raises to one
// te.layernorm_mlp in the block's own dtype, with TE's activation.
//
// RUN: te-opt --te-import-torch %S/Inputs/hf_forms/llama.bfloat16.raw.mlir | FileCheck %s --check-prefix=LLAMA
// RUN: te-opt --te-import-torch %S/Inputs/hf_forms/llama.bfloat16.torch.mlir | FileCheck %s --check-prefix=LLAMA
// LLaMA's RMSNorm: upcast, pow/mean/rsqrt in f32, cast back, then the bf16
// weight; SiLU in f32 between casts; gate_proj (arg2) before up_proj (arg3).
// LLAMA: %[[W1:.+]] = tensor.concat dim(0) %arg2, %arg3
// LLAMA: te.layernorm_mlp %arg0 norm rms_norm(%arg1) fc1(%[[W1]]) act swiglu fc2(%arg4) {eps = 9.9999999999999995E-7 : f64} : (tensor<4x16xbf16>
// LLAMA-NOT: torch.
//
// RUN: te-opt --te-import-torch %S/Inputs/hf_forms/gemma.bfloat16.raw.mlir | FileCheck %s --check-prefix=GEMMA
// Gemma's `x * (1 + weight.float())` in f32 is zero_centered_gamma of the
// bf16 weight; gelu_pytorch_tanh gated.
// GEMMA: te.layernorm_mlp %arg0 norm rms_norm(%arg1) fc1(%{{.+}}) act geglu fc2(%arg4) {eps = 9.9999999999999995E-7 : f64, zero_centered_gamma} : (tensor<4x16xbf16>
// GEMMA-NOT: torch.
//
// RUN: te-opt --te-import-torch %S/Inputs/hf_forms/t5g.bfloat16.raw.mlir | FileCheck %s --check-prefix=T5
// T5LayerNorm scales the bf16 input by the f32 rstd; gelu_new computed in
// bf16 from its formula.
// T5: te.layernorm_mlp %arg0 norm rms_norm(%arg1) fc1(%{{.+}}) act geglu fc2(%arg4) {eps = 9.9999999999999995E-7 : f64} : (tensor<4x16xbf16>
// T5-NOT: torch.
//
// RUN: te-opt --te-import-torch %S/Inputs/hf_forms/cohere.bfloat16.raw.mlir | FileCheck %s --check-prefix=COHERE
// RUN: te-opt --te-import-torch %S/Inputs/hf_forms/cohere.float32.torch.mlir | FileCheck %s --check-prefix=COHERE
// Cohere's LayerNorm written out (mean, centred twice, pow(2).mean, rsqrt),
// weight and no bias.
// COHERE: te.layernorm_mlp %arg0 norm layer_norm(%arg1) fc1(%{{.+}}) act swiglu fc2(%arg4) : (tensor<4x16x{{bf16|f32}}>
// COHERE-NOT: torch.
//
// RUN: te-opt --te-import-torch %S/Inputs/hf_forms/gpt2.bfloat16.raw.mlir | FileCheck %s --check-prefix=GPT2
// GPT-2's Conv1D in bf16: upcasts, addmm on the [in, out] weight, downcast.
// GPT2: %[[T1:.+]] = linalg.transpose ins(%arg3 : tensor<16x32xbf16>)
// GPT2: %[[T2:.+]] = linalg.transpose ins(%arg5 : tensor<32x16xbf16>)
// GPT2: te.layernorm_mlp %arg0 norm layer_norm(%arg1, %arg2) fc1(%[[T1]], %arg4) act gelu fc2(%[[T2]], %arg6)
// GPT2-NOT: torch.
//
// RUN: te-opt --te-import-torch %S/Inputs/hf_forms/bloom.float32.raw.mlir | FileCheck %s --check-prefix=TANH
// RUN: te-opt --te-import-torch %S/Inputs/hf_forms/fast.bfloat16.raw.mlir | FileCheck %s --check-prefix=TANH
// BLOOM's 0.79788456 * x * (1 + 0.044715 x x) and HF's gelu_fast: TE's tanh
// GELU within float rounding.
// TANH: te.layernorm_mlp %arg0 norm layer_norm(%arg1, %arg2) fc1(%arg3, %arg4) act gelu fc2(%arg5, %arg6)
// TANH-NOT: torch.
//
// RUN: te-opt --te-import-torch %S/Inputs/hf_forms/python.float32.raw.mlir | FileCheck %s --check-prefix=ERF
// HF's gelu_python: x * 0.5 * (1 + erf(x / sqrt 2)).
// ERF: te.layernorm_mlp %arg0 norm layer_norm(%arg1, %arg2) fc1(%arg3, %arg4) act gelu_erf fc2(%arg5, %arg6)
// ERF-NOT: torch.
//
// Near misses are not raised; the error, at the activation's first op,
// says what they compute:
// RUN: not te-opt --te-import-torch=strict=true %S/Inputs/hf_forms/badgelu.float32.raw.mlir 2>&1 | FileCheck %s --check-prefix=BADGELU
// A tanh GELU with 0.0447 for 0.044715:
// BADGELU: badgelu.float32.raw.mlir:31:11: error: te-import-torch: cannot import 'torch.aten.mul.Scalar': the pointwise function of the linear's output (aten.mul.Scalar, aten.pow.Tensor_Scalar, aten.add.Tensor, aten.tanh, aten.add.Scalar, aten.mul.Tensor) is not an activation TransformerEngine fuses: the closest, gelu (tanh approximation), differs by 8.72e-06
// BADGELU-NOT: te.layernorm_mlp
// RUN: not te-opt --te-import-torch=strict=true %S/Inputs/hf_forms/badsilu.float32.raw.mlir 2>&1 | FileCheck %s --check-prefix=BADSILU
// x * sigmoid(2x):
// BADSILU: badsilu.float32.raw.mlir:31:11: error: te-import-torch: cannot import 'torch.aten.mul.Scalar': the pointwise function of the linear's output (aten.mul.Scalar, aten.sigmoid, aten.mul.Tensor) is not an activation TransformerEngine fuses: the closest, quick-gelu x*sigmoid(1.702x), differs by 3.82e-02
// BADSILU-NOT: te.layernorm_mlp
//
// RUN: te-opt --te-import-torch %S/Inputs/hf_forms/gemma.float32.raw_hl.mlir | FileCheck %s --check-prefix=TYPEAS
// (the legacy table's form, from test/Integration/hf/hf_blocks.py): Gemma's `type_as` to
// the dtype it already has is no cast.
// TYPEAS: te.layernorm_mlp %arg0 norm rms_norm(%arg1) fc1(%{{.+}}) act geglu fc2(%arg4) {eps = 9.9999999999999995E-7 : f64, zero_centered_gamma} : (tensor<2x4x32xf32>
// TYPEAS-NOT: torch.
