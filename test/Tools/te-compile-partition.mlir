// te-compile --partition on whole decoder layers (Inputs/layers under
// test/Conversion/TorchToTE; docs/partition.md): a library of the raised modules, one
// entry each, and a residual torch-mlir module calling them.
//
// RUN: rm -rf %t && mkdir -p %t
//
// Without --partition: an error at the first op left, with its reason.
// RUN: not te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/gpt2_block.f32.mlir -o %t/whole.so 2>&1 | FileCheck %s --check-prefix=WHOLE
// WHOLE: gpt2_block.f32.mlir:43:11: error: te-compile: te-import-torch: left 'torch.aten.split_with_sizes' as is: splitting a projection's output (e.g. attention's fused QKV) is not part of a TransformerEngine module; the linear before it is raised on its own (28 torch ops left in the module); --partition compiles the raised modules and writes the rest as a residual torch-mlir module (te-opt --te-import-torch=strict=true reports each op that is not raised as an error)
// WHOLE: te-compile: error: cannot compile {{.+}}gpt2_block.f32.mlir as a whole: it is not fully raised to te ops
// RUN: not ls %t/whole.so
//
// GPT-2 f32: three regions; the summary names them and the files.
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/gpt2_block.f32.mlir -o %t/gpt2.so --partition 2>&1 | FileCheck %s --check-prefix=SUMMARY
// SUMMARY: te-compile: --partition: 3 regions raised; library entries (main_layernorm_linear_0, main_linear_0, main_layernorm_mlp_0) in {{.+}}gpt2.so (+ {{.+}}gpt2.h); 28 torch ops left in {{.+}}gpt2.residual.mlir
// RUN: te-run %t/gpt2.so --list | FileCheck %s --check-prefix=LIST
// LIST:      main_layernorm_linear_0
// LIST-NEXT:   arg0: float32 [1,4,32]
// LIST-NEXT:   arg1: float32 [32]
// LIST-NEXT:   arg2: float32 [32]
// LIST-NEXT:   arg3: float32 [32,96]
// LIST-NEXT:   arg4: float32 [96]
// LIST-NEXT:   -> result0: float32 [1,4,96]
// LIST:      main_linear_0
// LIST:      main_layernorm_mlp_0
// LIST-NEXT:   arg0: float32 [1,4,32]
// LIST:        arg6: float32 [32]
// LIST-NEXT:   -> result0: float32 [1,4,32]
// RUN: FileCheck %s --check-prefix=HEADER < %t/gpt2.h
// HEADER: int32_t te_entry_main_layernorm_mlp_0(
//
// The residual: te-opt parses it; it declares each entry with its torch
// signature and calls it with the torch values (no bridge left).
// RUN: te-opt %t/gpt2.residual.mlir | FileCheck %s --check-prefix=RESIDUAL
// RESIDUAL:      func.func private @main_layernorm_linear_0(!torch.vtensor<[1,4,32],f32>, !torch.vtensor<[32],f32>, !torch.vtensor<[32],f32>, !torch.vtensor<[32,96],f32>, !torch.vtensor<[96],f32>) -> !torch.vtensor<[1,4,96],f32>
// RESIDUAL:      func.func private @main_linear_0(!torch.vtensor<[1,4,32],f32>, !torch.vtensor<[32,32],f32>, !torch.vtensor<[32],f32>) -> !torch.vtensor<[1,4,32],f32>
// RESIDUAL:      func.func private @main_layernorm_mlp_0(
// RESIDUAL-LABEL: func.func @main(
// RESIDUAL-SAME:   %[[X:[a-z0-9]+]]: !torch.vtensor<[1,4,32],f32>, %[[G:[a-z0-9]+]]: !torch.vtensor<[32],f32>, %[[B:[a-z0-9]+]]: !torch.vtensor<[32],f32>, %[[W:[a-z0-9]+]]: !torch.vtensor<[32,96],f32>, %[[BW:[a-z0-9]+]]: !torch.vtensor<[96],f32>
// RESIDUAL-NOT:    torch_c
// RESIDUAL:        %[[QKV:.+]] = call @main_layernorm_linear_0(%[[X]], %[[G]], %[[B]], %[[W]], %[[BW]]) : ({{.+}}) -> !torch.vtensor<[1,4,96],f32>
// RESIDUAL:        torch.aten.split_with_sizes %[[QKV]]
// RESIDUAL:        torch.aten._softmax
// RESIDUAL:        call @main_linear_0(
// RESIDUAL:        call @main_layernorm_mlp_0(
// RESIDUAL:        return
// RESIDUAL-NOT:  te.
// RESIDUAL-NOT:  torch_c
// RUN: FileCheck %s --check-prefix=NOTE < %t/gpt2.residual.mlir
// NOTE-NOT: {{(^|[^v])tensor<}}
//
// Numerics: the LayerNormMLP entry on the MLP sub-block's inputs as PyTorch
// saw them inside the layer, against PyTorch's output (f32: TE's fp32
// tolerances).
// RUN: te-run %t/gpt2.so --entry main_layernorm_mlp_0 --backend cpu --inputs %te_src/test/Conversion/TorchToTE/Inputs/layers/gpt2_block.f32.mlp --outputs %t/gpt2-mlp
// RUN: %python %te_src/utils/compare_npy.py --expected %te_src/test/Conversion/TorchToTE/Inputs/layers/gpt2_block.f32.mlp --actual %t/gpt2-mlp --names result0 --atol 1e-5 --rtol 1.3e-6 | FileCheck %s --check-prefix=NUM
// NUM: OK result0.npy
// NUM: PASSED: 1 files
//
// LLaMA f32: five regions, the MLP's numerics; --residual names the file.
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/llama_layer.f32.mlir -o %t/llama.so --partition --residual=%t/llama-rest.mlir 2>&1 | FileCheck %s --check-prefix=LLAMA
// LLAMA: 5 regions raised; library entries (main_layernorm_linear_0, main_linear_0, main_linear_1, main_linear_2, main_layernorm_mlp_0) in {{.+}}llama.so (+ {{.+}}llama.h); 48 torch ops left in {{.+}}llama-rest.mlir
// RUN: te-opt %t/llama-rest.mlir | FileCheck %s --check-prefix=LLAMA-RESIDUAL
// LLAMA-RESIDUAL: func.func private @main_layernorm_linear_0({{.+}}) -> (!torch.vtensor<[1,4,32],f32>, !torch.vtensor<[1,4,32],f32>)
// LLAMA-RESIDUAL: func.func private @main_layernorm_mlp_0(!torch.vtensor<[1,4,32],f32>, !torch.vtensor<[32],f32>, !torch.vtensor<[64,32],f32>, !torch.vtensor<[64,32],f32>, !torch.vtensor<[32,64],f32>) -> !torch.vtensor<[1,4,32],f32>
// LLAMA-RESIDUAL: %[[LN:.+]]:2 = call @main_layernorm_linear_0(
// LLAMA-RESIDUAL: call @main_linear_0(%[[LN]]#1,
// RUN: te-run %t/llama.so --entry main_layernorm_mlp_0 --backend cpu --inputs %te_src/test/Conversion/TorchToTE/Inputs/layers/llama_layer.f32.mlp --outputs %t/llama-mlp
// RUN: %python %te_src/utils/compare_npy.py --expected %te_src/test/Conversion/TorchToTE/Inputs/layers/llama_layer.f32.mlp --actual %t/llama-mlp --names result0 --atol 1e-5 --rtol 1.3e-6 | FileCheck %s --check-prefix=NUM
//
// LLaMA bf16: the same five regions (the bf16 norms, upcast/downcast and
// SiLU in f32 casts, are raised); the MLP's numerics under TE's bf16
// LayerNormMLP tolerances (make_goldens.py TOLS).
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/llama_layer.bf16.mlir -o %t/llama-bf16.so --partition 2>&1 | FileCheck %s --check-prefix=BF16
// BF16: 5 regions raised; library entries (main_layernorm_linear_0, main_linear_0, main_linear_1, main_linear_2, main_layernorm_mlp_0)
// RUN: te-run %t/llama-bf16.so --list | FileCheck %s --check-prefix=BF16-LIST
// BF16-LIST:      main_layernorm_mlp_0
// BF16-LIST-NEXT:   arg0: bfloat16 [1,4,32]
// BF16-LIST-NEXT:   arg1: bfloat16 [32]
// BF16-LIST-NEXT:   arg2: bfloat16 [64,32]
// BF16-LIST-NEXT:   arg3: bfloat16 [64,32]
// BF16-LIST-NEXT:   arg4: bfloat16 [32,64]
// BF16-LIST-NEXT:   -> result0: bfloat16 [1,4,32]
// RUN: te-run %t/llama-bf16.so --entry main_layernorm_mlp_0 --backend cpu --inputs %te_src/test/Conversion/TorchToTE/Inputs/layers/llama_layer.bf16.mlp --outputs %t/llama-bf16-mlp
// RUN: %python %te_src/utils/compare_npy.py --expected %te_src/test/Conversion/TorchToTE/Inputs/layers/llama_layer.bf16.mlp --actual %t/llama-bf16-mlp --names result0 --atol 5e-2 --rtol 4e-2 | FileCheck %s --check-prefix=NUM-BF16
// NUM-BF16: OK result0.bf16.npy
// RUN: te-opt %t/llama-bf16.residual.mlir | FileCheck %s --check-prefix=BF16-RESIDUAL
// BF16-RESIDUAL: func.func private @main_layernorm_mlp_0(!torch.vtensor<[1,4,32],bf16>, !torch.vtensor<[32],bf16>, !torch.vtensor<[64,32],bf16>, !torch.vtensor<[64,32],bf16>, !torch.vtensor<[32,64],bf16>) -> !torch.vtensor<[1,4,32],bf16>
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/gpt2_block.bf16.mlir -o %t/gpt2-bf16.so --partition 2>&1 | FileCheck %s --check-prefix=GPT2-BF16
// GPT2-BF16: 3 regions raised; library entries (main_layernorm_linear_0, main_linear_0, main_layernorm_mlp_0)
// RUN: te-run %t/gpt2-bf16.so --entry main_layernorm_mlp_0 --backend cpu --inputs %te_src/test/Conversion/TorchToTE/Inputs/layers/gpt2_block.bf16.mlp --outputs %t/gpt2-bf16-mlp
// RUN: %python %te_src/utils/compare_npy.py --expected %te_src/test/Conversion/TorchToTE/Inputs/layers/gpt2_block.bf16.mlp --actual %t/gpt2-bf16-mlp --names result0 --atol 5e-2 --rtol 4e-2 | FileCheck %s --check-prefix=NUM-BF16
//
// --train: each region has <name>_fwd / <name>_bwd and keeps the inference
// entry <name>, which the residual calls.
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/gpt2_block.f32.mlir -o %t/gpt2-train.so --partition --train 2>&1 | FileCheck %s --check-prefix=TRAIN
// TRAIN: 3 regions raised{{.+}} (it calls the inference entries <name>)
// RUN: te-run %t/gpt2-train.so --list | FileCheck %s --check-prefix=TRAIN-LIST
// TRAIN-LIST-DAG: {{^}}main_layernorm_mlp_0{{$}}
// TRAIN-LIST-DAG: {{^}}main_layernorm_mlp_0_fwd{{$}}
// TRAIN-LIST-DAG: {{^}}main_layernorm_mlp_0_bwd{{$}}
// TRAIN-LIST-DAG: {{^}}main_layernorm_linear_0_fwd{{$}}
// TRAIN-LIST-DAG: {{^}}main_linear_0_bwd{{$}}
// RUN: te-opt %t/gpt2-train.residual.mlir | FileCheck %s --check-prefix=TRAIN-RESIDUAL
// TRAIN-RESIDUAL: func.func private @main_layernorm_mlp_0(
// TRAIN-RESIDUAL-NOT: _fwd
// TRAIN-RESIDUAL: call @main_layernorm_mlp_0(
// RUN: te-run %t/gpt2-train.so --entry main_layernorm_mlp_0 --backend cpu --inputs %te_src/test/Conversion/TorchToTE/Inputs/layers/gpt2_block.f32.mlp --outputs %t/gpt2-train-mlp
// RUN: %python %te_src/utils/compare_npy.py --expected %te_src/test/Conversion/TorchToTE/Inputs/layers/gpt2_block.f32.mlp --actual %t/gpt2-train-mlp --names result0 --atol 1e-5 --rtol 1.3e-6 | FileCheck %s --check-prefix=NUM
//
// A module that imports as a whole compiles as before, with a note.
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/ln_linear.raw.mlir -o %t/lnl.so --partition 2>&1 | FileCheck %s --check-prefix=WHOLE-OK
// WHOLE-OK: te-compile: --partition: {{.+}}ln_linear.raw.mlir is raised as a whole; no residual module written
// RUN: not ls %t/lnl.residual.mlir
// RUN: te-run %t/lnl.so --list | FileCheck %s --check-prefix=WHOLE-LIST
// WHOLE-LIST: {{^}}main{{$}}
//
// Two raised modules, the second reading the first's result: the residual
// passes the first call's torch result to the second call.
// RUN: te-compile %S/Inputs/partition-chain.mlir -o %t/chain.so --partition 2>&1 | FileCheck %s --check-prefix=CHAIN
// CHAIN: te-compile: --partition: 2 regions raised; library entries (f_layernorm_linear_0, f_linear_0) in {{.+}}chain.so (+ {{.+}}chain.h); 1 torch op left in {{.+}}chain.residual.mlir
// RUN: te-opt %t/chain.residual.mlir | FileCheck %s --check-prefix=CHAIN-RESIDUAL
// CHAIN-RESIDUAL-LABEL: func.func @f(
// CHAIN-RESIDUAL-SAME:    %[[X:[a-z0-9]+]]: !torch.vtensor<[4,32],f32>, %[[W:[a-z0-9]+]]: !torch.vtensor<[64,32],f32>, %[[W2:[a-z0-9]+]]: !torch.vtensor<[16,64],f32>)
// CHAIN-RESIDUAL:         %[[H:.+]] = call @f_layernorm_linear_0(%[[X]], %[[W]]) : (!torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>) -> !torch.vtensor<[4,64],f32>
// CHAIN-RESIDUAL:         %[[Y:.+]] = call @f_linear_0(%[[H]], %[[W2]])
// CHAIN-RESIDUAL:         torch.aten.softmax.int %[[Y]]
//
// RUN: not te-compile %S/Inputs/partition-chain.mlir -o %t/x.so --residual=%t/x.mlir 2>&1 | FileCheck %s --check-prefix=RESIDUAL-ALONE
// RESIDUAL-ALONE: te-compile: error: --residual needs --partition
//
// Qwen3 (Qwen3DecoderLayer; test/Integration/hf/export_decoder_layers.py): LLaMA's five
// regions; the attention's q_norm / k_norm stay in the residual (norms of a
// linear's output: TE has no module for them). The MLP's numerics against
// PyTorch inside the layer: f32 within 1e-5 / 1.3e-6 (tighter than TE's
// fp32 LayerNormMLP 2e-2 / 1e-3), bf16 within TE's LayerNormMLP tolerances.
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/qwen3_layer.f32.mlir -o %t/qwen3.so --partition 2>&1 | FileCheck %s --check-prefix=QWEN3
// QWEN3: te-compile: --partition: 5 regions raised; library entries (main_layernorm_linear_0, main_linear_0, main_linear_1, main_linear_2, main_layernorm_mlp_0) in {{.+}}qwen3.so (+ {{.+}}qwen3.h); 50 torch ops left in {{.+}}qwen3.residual.mlir
// RUN: te-opt %t/qwen3.residual.mlir | FileCheck %s --check-prefix=QWEN3-RESIDUAL
// QWEN3-RESIDUAL: func.func private @main_layernorm_linear_0(!torch.vtensor<[1,4,32],f32>, !torch.vtensor<[32],f32>, !torch.vtensor<[32,32],f32>) -> (!torch.vtensor<[1,4,32],f32>, !torch.vtensor<[1,4,32],f32>)
// QWEN3-RESIDUAL: func.func private @main_layernorm_mlp_0(!torch.vtensor<[1,4,32],f32>, !torch.vtensor<[32],f32>, !torch.vtensor<[64,32],f32>, !torch.vtensor<[64,32],f32>, !torch.vtensor<[32,64],f32>) -> !torch.vtensor<[1,4,32],f32>
// QWEN3-RESIDUAL: %[[LN:.+]]:2 = call @main_layernorm_linear_0(
// QWEN3-RESIDUAL: torch.aten.rms_norm
// QWEN3-RESIDUAL: call @main_linear_0(%[[LN]]#1,
// QWEN3-RESIDUAL: torch.aten.rms_norm
// QWEN3-RESIDUAL: call @main_linear_1(%[[LN]]#1,
// QWEN3-RESIDUAL: torch.aten._softmax
// QWEN3-RESIDUAL: call @main_linear_2(
// QWEN3-RESIDUAL: call @main_layernorm_mlp_0(
// RUN: te-run %t/qwen3.so --entry main_layernorm_mlp_0 --backend cpu --inputs %te_src/test/Conversion/TorchToTE/Inputs/layers/qwen3_layer.f32.mlp --outputs %t/qwen3-mlp
// RUN: %python %te_src/utils/compare_npy.py --expected %te_src/test/Conversion/TorchToTE/Inputs/layers/qwen3_layer.f32.mlp --actual %t/qwen3-mlp --names result0 --atol 1e-5 --rtol 1.3e-6 | FileCheck %s --check-prefix=NUM
// RUN: te-compile %te_src/test/Conversion/TorchToTE/Inputs/layers/qwen3_layer.bf16.mlir -o %t/qwen3-bf16.so --partition 2>&1 | FileCheck %s --check-prefix=QWEN3-BF16
// QWEN3-BF16: 5 regions raised; library entries (main_layernorm_linear_0, main_linear_0, main_linear_1, main_linear_2, main_layernorm_mlp_0) in {{.+}}; 52 torch ops left
// RUN: te-run %t/qwen3-bf16.so --list | FileCheck %s --check-prefix=BF16-LIST
// RUN: te-run %t/qwen3-bf16.so --entry main_layernorm_mlp_0 --backend cpu --inputs %te_src/test/Conversion/TorchToTE/Inputs/layers/qwen3_layer.bf16.mlp --outputs %t/qwen3-bf16-mlp
// RUN: %python %te_src/utils/compare_npy.py --expected %te_src/test/Conversion/TorchToTE/Inputs/layers/qwen3_layer.bf16.mlp --actual %t/qwen3-bf16-mlp --names result0 --atol 5e-2 --rtol 4e-2 | FileCheck %s --check-prefix=NUM-BF16
// RUN: te-opt %t/qwen3-bf16.residual.mlir | FileCheck %s --check-prefix=BF16-RESIDUAL
