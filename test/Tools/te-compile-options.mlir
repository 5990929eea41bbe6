// RUN: not te-compile %s --arch=sm_80 -o %t.so 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: not te-compile %s --gemm-act-epilogues=maybe --emit=mlir -o %t.mlir 2>&1 | FileCheck %s --check-prefix=ACT
// RUN: not te-compile %s --dedup-layers= --emit=mlir -o %t.mlir 2>&1 | FileCheck %s --check-prefix=DEDUP
// RUN: te-compile %s --gemm-act-epilogues= --emit=mlir -o - | FileCheck %s --check-prefix=EMPTY-ON
// RUN: te-compile %s --arch=sm_100a --emit=mlir -o - | FileCheck %s --check-prefix=BLACKWELL
// RUN: not te-compile %s --gemm-dact-epilogue-max-rows=-2 --emit=mlir -o %t.mlir 2>&1 | FileCheck %s --check-prefix=DACT-ROWS
// RUN: not te-compile %s --gemm-bias-grad-epilogue-max-rows=-3 --emit=mlir -o %t.mlir 2>&1 | FileCheck %s --check-prefix=BGRAD-ROWS
// RUN: te-compile %s --train --gemm-act-epilogues=on --emit=mlir -o - | FileCheck %s --check-prefix=DACT-ON
// RUN: te-compile %s --train --gemm-act-epilogues=on --gemm-dact-epilogue-max-rows=4 --emit=mlir -o - | FileCheck %s --check-prefix=DACT-OFF
//
// te-compile's enum-valued flags (te/Transforms/PassOptions.h): an invalid
// value is te-compile's error, before anything is compiled; an empty
// --gemm-act-epilogues is the bare flag (on); --arch names the target of
// the architecture class every pass gets.

// ARCH:      te-compile: error: --arch must be sm_90a or sm_100a, got 'sm_80'
// ACT:       te-compile: error: --gemm-act-epilogues must be off, auto or on, got 'maybe'
// DEDUP:     te-compile: error: --dedup-layers must be off, auto or on, got ''
// DACT-ROWS: te-compile: error: --gemm-dact-epilogue-max-rows must be >= 0 (or -1: no limit)
// BGRAD-ROWS: te-compile: error: --gemm-bias-grad-epilogue-max-rows must be >= 0 (or -1: no limit)

// The 8-token backward's dGELU folds into the dgrad GEMM (DGELU) unless
// --gemm-dact-epilogue-max-rows is below 8.
// DACT-ON:   llvm.call @te_rt_gemm_dgrad_dact(
// DACT-OFF-NOT: llvm.call @te_rt_gemm_dgrad_dact(
// DACT-OFF:  llvm.call @te_rt_act_bwd(

// The GELU of this 8-token MLP folds into the fprop GEMM only when forced.
// EMPTY-ON:  llvm.call @te_rt_gemm_fprop_act(
// EMPTY-ON-NOT: llvm.call @te_rt_act_fwd(

// BLACKWELL: \22arch\22:\22sm_100a\22

func.func @mlp(%x: tensor<8x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %w2: tensor<64x128xbf16>) -> tensor<8x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<8x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}

// A module without a public function with a body compiles to nothing: refused.
// RUN: printf 'module {\n  func.func private @f() {\n    return\n  }\n}\n' > %t.empty.mlir
// RUN: not te-compile %t.empty.mlir -o %t.empty.so 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: te-compile: error: {{.*}}empty.mlir has no public function with a body: nothing to compile
