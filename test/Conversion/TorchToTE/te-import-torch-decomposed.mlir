// te-import-torch on torch-mlir's default `raw` output, where PyTorch's
// core-ATen decompositions have broken LayerNorm (var_mean/rsqrt/sub/mul/
// mul/add), Linear (view/permute/mm/mul.Scalar/add/view) and SiLU
// (x*sigmoid(x)) apart; the importer recomposes them first.
//
// RUN: te-opt %S/Inputs/ln_linear.raw.mlir --te-import-torch | FileCheck %s --check-prefix=LNL
// LNL: func.func @main(%[[X:.+]]: tensor<2x4x32xf32>) -> tensor<2x4x64xf32>
// LNL: %[[Y:.+]] = te.layernorm_linear %[[X]] norm layer_norm(%{{[^,]+}}, %{{[^)]+}}) weight(%{{[^,]+}}, %{{[^)]+}}) : (tensor<2x4x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<2x4x64xf32>
// LNL-NEXT: return %[[Y]]
//
// Without bias (mm without the addmm tail) and with the norm output returned.
// RUN: te-opt %S/Inputs/ln_linear_nobias.raw.mlir --te-import-torch | FileCheck %s --check-prefix=NOBIAS
// NOBIAS: te.layernorm_linear %{{.+}} weight(%{{[^,)]+}}) :
// RUN: te-opt %S/Inputs/ln_linear_retnorm.raw.mlir --te-import-torch | FileCheck %s --check-prefix=RET
// RET: te.layernorm_linear {{.*}}{return_layernorm_output}
// RUN: te-opt %S/Inputs/ln_linear_zc_gamma.raw.mlir --te-import-torch | FileCheck %s --check-prefix=ZC
// ZC: te.layernorm_linear {{.*}}{zero_centered_gamma}
//
// Dynamic batch and dynamic tokens: symbolic-shape bookkeeping and the
// size arithmetic of the views are dropped; the ? dims stay.
// RUN: te-opt %S/Inputs/ln_linear_dynbatch.raw.mlir --te-import-torch | FileCheck %s --check-prefix=DYN
// DYN: func.func @main(%{{.+}}: tensor<?x4x32xf32>) -> tensor<?x4x64xf32>
// DYN-NEXT: arith.constant
// DYN-NOT: torch.{{(aten|prim|symbolic_int|bind_symbolic_shape)}}
// DYN: te.layernorm_linear {{.*}} -> tensor<?x4x64xf32>
// RUN: te-opt %S/Inputs/ln_linear_2d_dyntokens.raw.mlir --te-import-torch | FileCheck %s --check-prefix=DYN2D
// DYN2D: te.layernorm_linear {{.*}} -> tensor<?x64xf32>
//
// MLPs: SiLU recomposed from x*sigmoid(x); the others keep their op.
// RUN: te-opt %S/Inputs/ln_mlp_silu.raw.mlir --te-import-torch | FileCheck %s --check-prefix=SILU
// SILU: te.layernorm_mlp {{.*}} act silu fc2
// RUN: te-opt %S/Inputs/ln_mlp_gelu_tanh.raw.mlir --te-import-torch | FileCheck %s --check-prefix=GELU
// GELU: te.layernorm_mlp {{.*}} act gelu fc2
// RUN: te-opt %S/Inputs/ln_mlp_swiglu_chunk.raw.mlir --te-import-torch | FileCheck %s --check-prefix=CHUNK
// CHUNK: te.layernorm_mlp {{.*}} act swiglu fc2
// RUN: te-opt %S/Inputs/rmsnorm_swiglu.raw.mlir --te-import-torch | FileCheck %s --check-prefix=RMS
// RMS: te.layernorm_mlp %{{.+}} norm rms_norm({{.*}} act swiglu fc2
//
// A real GPT-2 MLP (transformers GPT2MLP: Conv1D weights stored [in, out],
// gelu_new written out as the tanh formula): the weights are transposed to
// [out, in] and the formula is TransformerEngine's gelu.
// RUN: te-opt %S/Inputs/gpt2_mlp.raw.mlir --te-import-torch | FileCheck %s --check-prefix=GPT2
// GPT2-DAG: %[[W1:.+]] = arith.constant dense_resource<{{.*}}> : tensor<32x64xf32>
// GPT2-DAG: %[[W2:.+]] = arith.constant dense_resource<{{.*}}> : tensor<64x32xf32>
// GPT2-DAG: %[[T1:.+]] = linalg.transpose ins(%[[W1]] : tensor<32x64xf32>) outs(%{{.+}} : tensor<64x32xf32>) permutation = [1, 0]
// GPT2-DAG: %[[T2:.+]] = linalg.transpose ins(%[[W2]] : tensor<64x32xf32>) outs(%{{.+}} : tensor<32x64xf32>) permutation = [1, 0]
// GPT2: te.layernorm_mlp %{{.+}} norm layer_norm(%{{[^)]+}}) fc1(%[[T1]], %{{[^)]+}}) act gelu fc2(%[[T2]], %{{[^)]+}})
//
// A real LLaMA MLP (transformers LlamaRMSNorm written out as pow/mean/
// rsqrt/mul, then gate/up/down projections without bias).
// RUN: te-opt %S/Inputs/llama_mlp.raw.mlir --te-import-torch | FileCheck %s --check-prefix=LLAMA
// LLAMA: %[[W1:.+]] = tensor.concat dim(0)
// LLAMA: te.layernorm_mlp %{{.+}} norm rms_norm(%{{[^)]+}}) fc1(%[[W1]]) act swiglu fc2(%{{[^)]+}}) {eps = 9.9999999999999995E-7 : f64}
//
// The default (erf) nn.GELU, on a dynamic batch and sequence, becomes
// gelu_erf (not TransformerEngine's tanh gelu).
// RUN: te-opt %S/Inputs/ln_mlp_gelu_dynbatchseq.raw.mlir --te-import-torch | FileCheck %s --check-prefix=ERF
// ERF: func.func @main(%{{.+}}: tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
// ERF: te.layernorm_mlp {{.*}} act gelu_erf fc2{{.*}} -> tensor<?x?x32xf32>
