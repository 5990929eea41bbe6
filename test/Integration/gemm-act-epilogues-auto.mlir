// te-compile's default --gemm-act-epilogues=auto: GELU / dGELU go into the
// fprop / dgrad GEMMs' epilogues (te_rt_gemm_fprop_act,
// te_rt_gemm_dgrad_dact) only for GEMMs of a static row count (tokens) of
// at least --gemm-act-epilogue-min-rows (1024). On the H200 (bf16 LN-MLP
// GELU training step) the epilogues were 2.2% faster at 8192 tokens x 4096
// x 16384 and 2.5% at 4096 x 1024 x 4096, but 5.5% slower at 16 tokens x
// 4096 x 16384: at few rows the plain GEMM + activation kernel wins.
// =off keeps every activation kernel; =on (or the bare flag) folds all.
//
// RUN: te-compile %s --train --emit=mlir -o - | FileCheck %s --check-prefix=AUTO
// RUN: te-compile %s --train --gemm-act-epilogues=auto --emit=mlir -o - | FileCheck %s --check-prefix=AUTO
// AUTO-LABEL: llvm.func @te_entry_big_fwd(
// AUTO-NOT:   llvm.call @te_rt_act_fwd(
// AUTO:       llvm.call @te_rt_gemm_fprop_act(
// AUTO-NOT:   llvm.call @te_rt_act_fwd(
// AUTO-LABEL: llvm.func @te_entry_big_bwd(
// AUTO-NOT:   llvm.call @te_rt_act_bwd(
// AUTO:       llvm.call @te_rt_gemm_dgrad_dact(
// AUTO-NOT:   llvm.call @te_rt_act_bwd(
// AUTO-LABEL: llvm.func @te_entry_small_fwd(
// AUTO-NOT:   llvm.call @te_rt_gemm_fprop_act(
// AUTO:       llvm.call @te_rt_act_fwd(
// AUTO-LABEL: llvm.func @te_entry_small_bwd(
// AUTO-NOT:   llvm.call @te_rt_gemm_dgrad_dact(
// AUTO:       llvm.call @te_rt_act_bwd(
// AUTO-LABEL: llvm.func @te_entry_dyn_fwd(
// AUTO-NOT:   llvm.call @te_rt_gemm_fprop_act(
// AUTO:       llvm.call @te_rt_act_fwd(
// AUTO-LABEL: llvm.func @te_entry_dyn_bwd(
// AUTO-NOT:   llvm.call @te_rt_gemm_dgrad_dact(
// AUTO:       llvm.call @te_rt_act_bwd(
// AUTO-NOT:   llvm.call @te_rt_gemm_{{fprop_act|dgrad_dact}}(
//
// RUN: te-compile %s --train --gemm-act-epilogues=off --emit=mlir -o - | FileCheck %s --check-prefix=OFF
// OFF-LABEL: llvm.func @te_entry_big_fwd(
// OFF-NOT:   llvm.call @te_rt_gemm_fprop_act(
// OFF:       llvm.call @te_rt_act_fwd(
// OFF-LABEL: llvm.func @te_entry_big_bwd(
// OFF-NOT:   llvm.call @te_rt_gemm_dgrad_dact(
// OFF:       llvm.call @te_rt_act_bwd(
// OFF-NOT:   llvm.call @te_rt_gemm_{{fprop_act|dgrad_dact}}(
//
// RUN: te-compile %s --train --gemm-act-epilogues=on --emit=mlir -o - | FileCheck %s --check-prefix=ON
// RUN: te-compile %s --train --gemm-act-epilogues --emit=mlir -o - | FileCheck %s --check-prefix=ON
// ON-LABEL: llvm.func @te_entry_small_fwd(
// ON-NOT:   llvm.call @te_rt_act_fwd(
// ON:       llvm.call @te_rt_gemm_fprop_act(
// ON-LABEL: llvm.func @te_entry_small_bwd(
// ON-NOT:   llvm.call @te_rt_act_bwd(
// ON:       llvm.call @te_rt_gemm_dgrad_dact(
// ON-LABEL: llvm.func @te_entry_dyn_fwd(
// ON-NOT:   llvm.call @te_rt_act_fwd(
// ON:       llvm.call @te_rt_gemm_fprop_act(
// ON-LABEL: llvm.func @te_entry_dyn_bwd(
// ON-NOT:   llvm.call @te_rt_act_bwd(
// ON:       llvm.call @te_rt_gemm_dgrad_dact(
// ON-NOT:   llvm.call @te_rt_act_{{fwd|bwd}}(
//
// A lower threshold folds the 16-row MLP; dynamic tokens still do not.
// RUN: te-compile %s --train --gemm-act-epilogue-min-rows=16 --emit=mlir -o - | FileCheck %s --check-prefix=MIN16
// MIN16-LABEL: llvm.func @te_entry_small_fwd(
// MIN16-NOT:   llvm.call @te_rt_act_fwd(
// MIN16:       llvm.call @te_rt_gemm_fprop_act(
// MIN16-LABEL: llvm.func @te_entry_small_bwd(
// MIN16-NOT:   llvm.call @te_rt_act_bwd(
// MIN16:       llvm.call @te_rt_gemm_dgrad_dact(
// MIN16-LABEL: llvm.func @te_entry_dyn_fwd(
// MIN16-NOT:   llvm.call @te_rt_gemm_fprop_act(
// MIN16:       llvm.call @te_rt_act_fwd(
//
// Why not, with --remarks.
// RUN: te-compile %s --train --remarks --emit=mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// REMARK: remark: te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: 16 rows < 1024; auto folds static row counts >= 1024 only (at few rows the plain GEMM + activation kernel measured faster on the H200), --gemm-act-epilogues (act-epilogues=on) forces it
// REMARK: remark: te-fuse-gemm-epilogues: te.dact not fused into a GEMM epilogue: 16 rows < 1024;
// REMARK: remark: te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: rows are dynamic; auto folds static row counts >= 1024 only, --gemm-act-epilogues (act-epilogues=on) forces it
//
// RUN: not te-compile %s --train --gemm-act-epilogues=maybe -o %t.so 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: te-compile: error: --gemm-act-epilogues must be off, auto or on, got 'maybe'
// RUN: not te-opt %s --te-pipeline="train=true gemm-act-epilogues=maybe" 2>&1 | FileCheck %s --check-prefix=BADPIPE
// BADPIPE: error: te-fuse-gemm-epilogues: act-epilogues must be off, auto or on, got 'maybe'
func.func @big(%x: tensor<1024x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<1024x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<1024x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<1024x64xbf16>
  return %y : tensor<1024x64xbf16>
}
func.func @small(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<16x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}
func.func @dyn(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
