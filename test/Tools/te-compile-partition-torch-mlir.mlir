// REQUIRES: torch-mlir-wheel
//
// The residual modules of te-compile --partition are valid torch-mlir:
// utils/check_residual.py parses them with the torch-mlir wheel and runs its
// pipelines (torchdynamo-export-to-torch-backend-pipeline, then the
// linalg-on-tensors backend pipeline; docs/partition.md says why the
// latter's contract verifier is applied with the calls to the library as
// the one exception). Needs a Python that imports torch_mlir: TE_TORCH_PYTHON,
// or python3 on PATH (test/lit.cfg.py); otherwise UNSUPPORTED.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/gpt2_block.f32.mlir -o %t/gpt2.so --partition
// RUN: %torch_python %te_src/utils/check_residual.py %t/gpt2.residual.mlir 2>%t/gpt2.err | FileCheck %s --check-prefix=GPT2
// RUN: FileCheck %s --check-prefix=NOTE < %t/gpt2.err
// GPT2: check_residual: {{.+}}gpt2.residual.mlir: OK: torch-mlir lowers it to linalg-on-tensors (its passes without torch-verify-linalg-on-tensors-backend-contract, which rejects any func.call; the contract checked here but for the calls to the library); 3 library declarations: main_layernorm_linear_0, main_linear_0, main_layernorm_mlp_0; 3 calls
// NOTE: error: failed to legalize operation 'func.call'
// NOTE: check_residual: note: torch-verify-linalg-on-tensors-backend-contract rejects the 3 calls to the library
//
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/llama_layer.f32.mlir -o %t/llama.so --partition --train
// RUN: %torch_python %te_src/utils/check_residual.py %t/llama.residual.mlir --print 2>/dev/null | FileCheck %s --check-prefix=LLAMA
// The declarations after torch-mlir's lowering: the library entries' own
// builtin signatures.
// LLAMA: func.func private @main_layernorm_mlp_0(tensor<1x4x32xf32>, tensor<32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<1x4x32xf32>
// LLAMA: call @main_layernorm_mlp_0(
// LLAMA: OK: torch-mlir lowers it
//
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/llama_layer.bf16.mlir -o %t/llama-bf16.so --partition
// RUN: %torch_python %te_src/utils/check_residual.py %t/llama-bf16.residual.mlir 2>/dev/null | FileCheck %s --check-prefix=BF16
// BF16: OK: torch-mlir lowers it {{.+}}; 5 library declarations
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/gpt2_block.bf16.mlir -o %t/gpt2-bf16.so --partition
// RUN: %torch_python %te_src/utils/check_residual.py %t/gpt2-bf16.residual.mlir 2>/dev/null | FileCheck %s --check-prefix=GPT2-BF16
// GPT2-BF16: OK: torch-mlir lowers it {{.+}}; 3 library declarations
//
// A module that calls nothing passes torch-mlir's own pipeline as is; a
// declaration on builtin tensors is refused.
// RUN: %torch_python %te_src/utils/check_residual.py %S/Inputs/residual-nocall.mlir | FileCheck %s --check-prefix=NOCALL
// NOCALL: OK: torch-mlir lowers it to linalg-on-tensors (torch-backend-to-linalg-on-tensors-backend-pipeline); 0 library declarations
// RUN: not %torch_python %te_src/utils/check_residual.py %S/Inputs/residual-builtin-decl.mlir 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: check_residual: @main_linear_0: not a !torch.vtensor signature
//
// Qwen3's layer (f32 under --train, bf16): five declarations, the q_norm /
// k_norm RMSNorms lowered by torch-mlir with the attention.
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/qwen3_layer.f32.mlir -o %t/qwen3.so --partition --train
// RUN: %torch_python %te_src/utils/check_residual.py %t/qwen3.residual.mlir 2>/dev/null | FileCheck %s --check-prefix=QWEN3
// QWEN3: check_residual: {{.+}}qwen3.residual.mlir: OK: torch-mlir lowers it {{.+}}; 5 library declarations: main_layernorm_linear_0, main_linear_0, main_linear_1, main_linear_2, main_layernorm_mlp_0; 5 calls
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/qwen3_layer.bf16.mlir -o %t/qwen3-bf16.so --partition
// RUN: %torch_python %te_src/utils/check_residual.py %t/qwen3-bf16.residual.mlir 2>/dev/null | FileCheck %s --check-prefix=QWEN3-BF16
// QWEN3-BF16: OK: torch-mlir lowers it {{.+}}; 5 library declarations
