// te-import-torch on real torch-mlir exports (the high-level forms, in which
// layer_norm / rms_norm / linear survive; see Inputs/README.md).
//
// RUN: te-opt %S/Inputs/ln_linear.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=LNL
// LNL-LABEL: func.func @main
// LNL-SAME: (%[[X:.+]]: tensor<2x4x32xf32>) -> tensor<2x4x64xf32>
// LNL-DAG: %[[G:.+]] = arith.constant dense_resource<torch_tensor_32_torch.float32> : tensor<32xf32>
// LNL-DAG: %[[B:.+]] = arith.constant dense_resource<torch_tensor_32_torch.float32_1> : tensor<32xf32>
// LNL-DAG: %[[W:.+]] = arith.constant dense_resource<torch_tensor_64_32_torch.float32> : tensor<64x32xf32>
// LNL-DAG: %[[BIAS:.+]] = arith.constant dense_resource<torch_tensor_64_torch.float32> : tensor<64xf32>
// LNL: %[[Y:.+]] = te.layernorm_linear %[[X]] norm layer_norm(%[[G]], %[[B]]) weight(%[[W]], %[[BIAS]]) : (tensor<2x4x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<2x4x64xf32>
// LNL: return %[[Y]]
// LNL-NOT: {{torch\.(aten|prim|constant|vtensor)}}
//
// RUN: te-opt %S/Inputs/ln_linear_retnorm.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=RET
// RET: %[[Y:.+]], %[[LN:.+]] = te.layernorm_linear {{.*}} {return_layernorm_output}
// RET: return %[[Y]], %[[LN]] : tensor<2x4x64xf32>, tensor<2x4x32xf32>
//
// RUN: te-opt %S/Inputs/ln_linear_nobias.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=NOBIAS
// NOBIAS: te.layernorm_linear %{{.+}} norm layer_norm(%{{[^,]+}}, %{{[^)]+}}) weight(%{{[^,)]+}}) :
//
// RUN: te-opt %S/Inputs/ln_linear_zc_gamma.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=ZC
// ZC-NOT: arith.addf
// ZC: te.layernorm_linear {{.*}} {zero_centered_gamma}
//
// RUN: te-opt %S/Inputs/ln_linear_bf16.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=BF16
// BF16: te.layernorm_linear {{.*}} : (tensor<2x4x32xbf16>, tensor<32xbf16>, tensor<32xbf16>, tensor<64x32xbf16>, tensor<64xbf16>) -> tensor<2x4x64xbf16>
//
// RUN: te-opt %S/Inputs/ln_linear_dynbatch.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=DYN
// DYN: func.func @main(%{{.+}}: tensor<?x4x32xf32>) -> tensor<?x4x64xf32>
// DYN: te.layernorm_linear {{.*}} -> tensor<?x4x64xf32>
// DYN-NOT: {{torch\.(aten|prim|constant|vtensor|symbolic_int|bind_symbolic_shape)}}
//
// RUN: te-opt %S/Inputs/ln_mlp_gelu_tanh.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=GELU
// GELU: te.layernorm_mlp %{{.+}} norm layer_norm(%{{[^,]+}}, %{{[^)]+}}) fc1(%{{[^,]+}}, %{{[^)]+}}) act gelu fc2(%{{[^,]+}}, %{{[^)]+}}) : {{.*}} -> tensor<2x4x32xf32>
// RUN: te-opt %S/Inputs/ln_mlp_gelu.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=ERF
// ERF: te.layernorm_mlp {{.*}} act gelu_erf fc2
// RUN: te-opt %S/Inputs/ln_mlp_relu.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=RELU
// RELU: te.layernorm_mlp {{.*}} act relu fc2
// RUN: te-opt %S/Inputs/ln_mlp_silu.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=SILU
// SILU: te.layernorm_mlp {{.*}} act silu fc2
// RUN: te-opt %S/Inputs/ln_mlp_quick_gelu.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=QGELU
// QGELU: te.layernorm_mlp {{.*}} act qgelu fc2
// RUN: te-opt %S/Inputs/ln_mlp_srelu.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=SRELU
// SRELU: te.layernorm_mlp {{.*}} act srelu fc2
//
// Gated, from two linears: FC1 = [gate; up] (the activated half first).
// RUN: te-opt %S/Inputs/ln_mlp_swiglu.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=SWIGLU
// SWIGLU-DAG: %[[WG:.+]] = arith.constant dense_resource<torch_tensor_64_32_torch.float32> : tensor<64x32xf32>
// SWIGLU-DAG: %[[WU:.+]] = arith.constant dense_resource<torch_tensor_64_32_torch.float32_1> : tensor<64x32xf32>
// SWIGLU: %[[W1:.+]] = tensor.concat dim(0) %[[WG]], %[[WU]] : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<128x32xf32>
// SWIGLU: %[[B1:.+]] = tensor.concat dim(0)
// SWIGLU: te.layernorm_mlp %{{.+}} norm layer_norm(%{{[^)]+}}) fc1(%[[W1]], %[[B1]]) act swiglu fc2
//
// Gated, from one linear split in halves.
// RUN: te-opt %S/Inputs/ln_mlp_swiglu_chunk.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=CHUNK
// CHUNK-NOT: tensor.concat
// CHUNK: te.layernorm_mlp {{.*}} act swiglu fc2{{.*}}: (tensor<2x4x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<128x32xf32>, tensor<128xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
// RUN: te-opt %S/Inputs/ln_mlp_geglu.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=GEGLU
// GEGLU: te.layernorm_mlp {{.*}} act geglu fc2
//
// LLaMA-style RMSNorm + SwiGLU without biases.
// RUN: te-opt %S/Inputs/rmsnorm_swiglu.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=RMS
// RMS: te.layernorm_mlp %{{.+}} norm rms_norm(%{{[^)]+}}) fc1(%{{[^,)]+}}) act swiglu fc2(%{{[^,)]+}}) {eps = 9.9999999999999995E-7 : f64}
//
// Residual block: x + mlp(ln(x)).
// RUN: te-opt %S/Inputs/residual_ln_mlp.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=RES
// RES: func.func @main(%[[X:.+]]: tensor<2x4x32xf32>)
// RES: %[[M:.+]] = te.layernorm_mlp %[[X]]
// RES: %[[S:.+]] = arith.addf %[[X]], %[[M]] : tensor<2x4x32xf32>
// RES: return %[[S]]
//
// A lone linear.
// RUN: te-opt %S/Inputs/linear.raw_hl.mlir --te-import-torch | FileCheck %s --check-prefix=LIN
// LIN: te.linear %{{.+}} weight(%{{[^,]+}}, %{{[^)]+}}) : (tensor<4x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<4x64xf32>
//
// The recipe option, and the result feeds te-describe.
// RUN: te-opt %S/Inputs/ln_mlp_gelu_tanh.raw_hl.mlir --te-import-torch="recipe=fp8-delayed" --te-describe -o /dev/null | FileCheck %s --check-prefix=DESCRIBE
// DESCRIBE: "effective_recipe":"fp8-delayed"
// DESCRIBE-SAME: "op":"te.layernorm_mlp"
// RUN: not te-opt %S/Inputs/linear.raw_hl.mlir --te-import-torch="recipe=fp9" 2>&1 | FileCheck %s --check-prefix=RECIPE
// RECIPE: error: te-import-torch: unknown recipe 'fp9'; expected one of: bf16, fp8-delayed, fp8-current, fp8-block, mxfp8, nvfp4
//
// The imported modules verify and round-trip.
// RUN: te-opt %S/Inputs/ln_mlp_swiglu.raw_hl.mlir --te-import-torch --verify-roundtrip > /dev/null

