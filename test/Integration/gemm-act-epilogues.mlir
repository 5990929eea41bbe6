// End to end on the CPU backend with te-compile --gemm-act-epilogues (the
// bare flag: =on, whatever the row count): the
// LayerNorm + GELU MLP's FC1 GEMM computes GELU in its epilogue
// (te_rt_gemm_fprop_act, saving the pre-activation as its aux output) and
// FC2's dgrad GEMM the GELU derivative (te_rt_gemm_dgrad_dact); FC1's bias
// gradient still comes out of its wgrad GEMM. The forward outputs and every
// gradient match the same PyTorch goldens as the unfused build
// (Integration/golden/), under the same TransformerEngine tolerances.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: te-compile %te_src/test/Integration/Inputs/ln_mlp_gelu_bf16/model.mlir --train --gemm-act-epilogues --emit=mlir -o - | FileCheck %s --check-prefix=IR
// IR-LABEL: llvm.func @te_entry_main_fwd(
// IR-NOT:   llvm.call @te_rt_act_fwd(
// IR:       llvm.call @te_rt_norm_fwd(
// IR:       llvm.call @te_rt_gemm_fprop_act(
// IR-NOT:   llvm.call @te_rt_act_fwd(
// IR:       llvm.call @te_rt_gemm_fprop(
// IR-NOT:   llvm.call @te_rt_act_fwd(
// IR-LABEL: llvm.func @te_entry_main_bwd(
// IR-NOT:   llvm.call @te_rt_act_bwd(
// IR-NOT:   llvm.call @te_rt_bias_grad(
// IR-NOT:   llvm.call @te_rt_gemm_dgrad(
// IR:       llvm.call @te_rt_gemm_wgrad(
// IR:       llvm.call @te_rt_gemm_dgrad_dact(
// IR:       llvm.call @te_rt_gemm_wgrad(
// IR:       llvm.call @te_rt_gemm_dgrad(
// IR-NOT:   llvm.call @te_rt_act_bwd(
// IR-NOT:   llvm.call @te_rt_bias_grad(
// IR:       llvm.call @te_rt_norm_bwd(
//
// bf16 (atol/rtol from Inputs/ln_mlp_gelu_bf16/config.json).
// RUN: te-compile %te_src/test/Integration/Inputs/ln_mlp_gelu_bf16/model.mlir --train --gemm-act-epilogues -o %t/bf16.so
// RUN: te-run %t/bf16.so --backend cpu --step main --inputs %te_src/test/Integration/Inputs/ln_mlp_gelu_bf16/args --grads %te_src/test/Integration/Inputs/ln_mlp_gelu_bf16/grads_in --outputs %t/bf16
// RUN: %python %te_src/utils/compare_npy.py --expected %te_src/test/Integration/Inputs/ln_mlp_gelu_bf16/expected/fwd --actual %t/bf16/fwd --atol 0.05 --rtol 0.04 | FileCheck %s --check-prefix=FWD
// RUN: %python %te_src/utils/compare_npy.py --expected %te_src/test/Integration/Inputs/ln_mlp_gelu_bf16/expected/bwd --actual %t/bf16/bwd --atol 0.2 --rtol 0.04 | FileCheck %s --check-prefix=BWD
// FWD: PASSED: 1 files
// BWD: PASSED: 7 files
//
// Checkpointed (FC1 and its GELU recomputed, also fused): the backward is
// bit-identical.
// RUN: te-compile %te_src/test/Integration/Inputs/ln_mlp_gelu_bf16/model.mlir --train --checkpoint --gemm-act-epilogues -o %t/ckpt.so
// RUN: te-run %t/ckpt.so --backend cpu --step main --inputs %te_src/test/Integration/Inputs/ln_mlp_gelu_bf16/args --grads %te_src/test/Integration/Inputs/ln_mlp_gelu_bf16/grads_in --outputs %t/ckpt
// RUN: diff -r %t/bf16/bwd %t/ckpt/bwd
//
// f32 with dynamic tokens: one library at 5 and 16 tokens.
// RUN: te-compile %te_src/test/Integration/Inputs/ln_mlp_gelu_dyn_f32/model.mlir --train --gemm-act-epilogues -o %t/dyn.so
// RUN: te-run %t/dyn.so --backend cpu --step main --inputs %te_src/test/Integration/Inputs/ln_mlp_gelu_dyn_f32/size5/args --grads %te_src/test/Integration/Inputs/ln_mlp_gelu_dyn_f32/size5/grads_in --outputs %t/dyn5
// RUN: te-run %t/dyn.so --backend cpu --step main --inputs %te_src/test/Integration/Inputs/ln_mlp_gelu_dyn_f32/size16/args --grads %te_src/test/Integration/Inputs/ln_mlp_gelu_dyn_f32/size16/grads_in --outputs %t/dyn16
// RUN: %python %te_src/utils/compare_npy.py --expected %te_src/test/Integration/Inputs/ln_mlp_gelu_dyn_f32/size5/expected/fwd --actual %t/dyn5/fwd --atol 0.02 --rtol 0.001 | FileCheck %s --check-prefix=FWD
// RUN: %python %te_src/utils/compare_npy.py --expected %te_src/test/Integration/Inputs/ln_mlp_gelu_dyn_f32/size5/expected/bwd --actual %t/dyn5/bwd --atol 0.02 --rtol 0.001 | FileCheck %s --check-prefix=BWD
// RUN: %python %te_src/utils/compare_npy.py --expected %te_src/test/Integration/Inputs/ln_mlp_gelu_dyn_f32/size16/expected/fwd --actual %t/dyn16/fwd --atol 0.02 --rtol 0.001 | FileCheck %s --check-prefix=FWD
// RUN: %python %te_src/utils/compare_npy.py --expected %te_src/test/Integration/Inputs/ln_mlp_gelu_dyn_f32/size16/expected/bwd --actual %t/dyn16/bwd --atol 0.02 --rtol 0.001 | FileCheck %s --check-prefix=BWD
//
// Without the flag (default auto) the same model keeps the separate
// activation kernels: its 8 tokens are under auto's 1024 rows
// (gemm-act-epilogues-auto.mlir), as with --gemm-act-epilogues=off.
// RUN: te-compile %te_src/test/Integration/Inputs/ln_mlp_gelu_bf16/model.mlir --train --emit=mlir -o - | FileCheck %s --check-prefix=OFF
// OFF-NOT: llvm.call @te_rt_gemm_{{fprop_act|dgrad_dact}}(
// OFF:     llvm.call @te_rt_act_fwd(
// OFF-NOT: llvm.call @te_rt_gemm_{{fprop_act|dgrad_dact}}(
// OFF:     llvm.call @te_rt_act_bwd(
// OFF-NOT: llvm.call @te_rt_gemm_{{fprop_act|dgrad_dact}}(
