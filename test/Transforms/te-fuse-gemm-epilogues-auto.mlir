// RUN: te-opt %s --split-input-file --te-fuse-gemm-epilogues=act-epilogues=auto --verify-diagnostics | FileCheck %s
// RUN: sed 's/expected-remark.*//' %s | te-opt --split-input-file --te-fuse-gemm-epilogues="act-epilogues=auto act-epilogue-min-rows=16" 2>/dev/null | FileCheck %s --check-prefix=MIN16
// RUN: sed 's/expected-remark.*//' %s | te-opt --split-input-file --te-fuse-gemm-epilogues="act-epilogues=auto act-epilogue-min-rows=16" 2>&1 >/dev/null | FileCheck %s --check-prefix=MIN16-REMARK
// RUN: sed 's/expected-remark.*//' %s | te-opt --split-input-file --te-fuse-gemm-epilogues=act-epilogues=on 2>/dev/null | FileCheck %s --check-prefix=ON
// RUN: sed 's/expected-remark.*//' %s | te-opt --split-input-file --te-fuse-gemm-epilogues=act-epilogues=on 2>&1 >/dev/null | FileCheck %s --check-prefix=ON-REMARK
// RUN: sed 's/expected-remark.*//' %s | not te-opt --split-input-file --te-fuse-gemm-epilogues=act-epilogues=maybe 2>&1 | FileCheck %s --check-prefix=INVALID
// RUN: sed 's/expected-remark.*//' %s | not te-opt --split-input-file --te-fuse-gemm-epilogues="act-epilogues=auto act-epilogue-min-rows=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
//
// act-epilogues=auto (te-compile's and te-pipeline's default): GELU / dGELU
// fold into the GEMMs' epilogues only when the GEMM's row count (the
// product of the leading dims of its lhs: the tokens) is static and at
// least act-epilogue-min-rows (1024). On the H200 the epilogue GEMMs made
// the bf16 LN-MLP step 2-2.5% faster at 4096 and 8192 tokens but 5.5%
// slower at 16. `on` folds them all (te-fuse-gemm-epilogues-act.mlir).

// At the threshold (1024 rows; as 4x256 leading dims for the fprop GEMM):
// both fold.
// CHECK-LABEL: func.func @at_threshold(
// CHECK:       te.gemm_act gelu %arg0, %arg1 : (tensor<4x256x64xbf16>, tensor<128x64xbf16>) -> (tensor<4x256x128xbf16>, tensor<4x256x128xbf16>)
// CHECK:       te.gemm_dact gelu %arg2, %arg3 pre(%{{.*}}) : (tensor<1024x64xbf16>, tensor<64x128xbf16>, tensor<1024x128xbf16>) -> tensor<1024x128xbf16>
// CHECK-NOT:   te.act
// CHECK-NOT:   te.dact
// MIN16-LABEL: func.func @at_threshold(
// MIN16:       te.gemm_act gelu
// MIN16:       te.gemm_dact gelu
// ON-LABEL:    func.func @at_threshold(
// ON:          te.gemm_act gelu
// ON:          te.gemm_dact gelu
func.func @at_threshold(%x: tensor<4x256x64xbf16>, %w1: tensor<128x64xbf16>, %dy: tensor<1024x64xbf16>, %w2: tensor<64x128xbf16>) -> (tensor<4x256x128xbf16>, tensor<4x256x128xbf16>, tensor<1024x128xbf16>) {
  %pre = te.gemm tn %x, %w1 : (tensor<4x256x64xbf16>, tensor<128x64xbf16>) -> tensor<4x256x128xbf16>
  %h = te.act gelu %pre : (tensor<4x256x128xbf16>) -> tensor<4x256x128xbf16>
  %dh = te.gemm nn %dy, %w2 : (tensor<1024x64xbf16>, tensor<64x128xbf16>) -> tensor<1024x128xbf16>
  %p = tensor.collapse_shape %pre [[0, 1], [2]] : tensor<4x256x128xbf16> into tensor<1024x128xbf16>
  %d = te.dact gelu %dh, %p : (tensor<1024x128xbf16>, tensor<1024x128xbf16>) -> tensor<1024x128xbf16>
  return %h, %pre, %d : tensor<4x256x128xbf16>, tensor<4x256x128xbf16>, tensor<1024x128xbf16>
}

// -----

// Just below (1023 rows), and few rows (8): neither folds, each says why.
// With act-epilogue-min-rows=16 the 1023-row pair folds and the 8-row one
// still does not.
// CHECK-LABEL: func.func @below_threshold(
// CHECK:       %[[PRE:.*]] = te.gemm tn %arg0, %arg1
// CHECK-NEXT:  te.act gelu %[[PRE]]
// CHECK-NEXT:  %[[DH:.*]] = te.gemm nn %arg2, %arg3
// CHECK-NEXT:  te.dact gelu %[[DH]], %[[PRE]]
// CHECK-NEXT:  %[[PRE8:.*]] = te.gemm tn %arg4, %arg1
// CHECK-NEXT:  te.act gelu %[[PRE8]]
// CHECK-NOT:   te.gemm_act
// MIN16-LABEL: func.func @below_threshold(
// MIN16:       te.gemm_act gelu %arg0, %arg1 : (tensor<1023x64xbf16>
// MIN16:       te.gemm_dact gelu %arg2, %arg3
// MIN16:       %[[PRE8:.*]] = te.gemm tn %arg4, %arg1
// MIN16-NEXT:  te.act gelu %[[PRE8]]
// MIN16-REMARK-NOT: 1023 rows
// MIN16-REMARK:     remark: te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: 8 rows < 16; auto folds static row counts >= 16 only (at few rows the plain GEMM + activation kernel measured faster on the H200), --gemm-act-epilogues (act-epilogues=on) forces it
// MIN16-REMARK:     remark: te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: rows are dynamic; auto folds static row counts >= 16 only, --gemm-act-epilogues (act-epilogues=on) forces it
// MIN16-REMARK-NOT: 1023 rows
// ON-LABEL:    func.func @below_threshold(
// ON:          te.gemm_act gelu %arg0, %arg1 : (tensor<1023x64xbf16>
// ON:          te.gemm_dact gelu %arg2, %arg3
// ON:          te.gemm_act gelu %arg4, %arg1 : (tensor<8x64xbf16>
func.func @below_threshold(%x: tensor<1023x64xbf16>, %w1: tensor<128x64xbf16>, %dy: tensor<1023x64xbf16>, %w2: tensor<64x128xbf16>, %x8: tensor<8x64xbf16>) -> (tensor<1023x128xbf16>, tensor<1023x128xbf16>, tensor<8x128xbf16>) {
  %pre = te.gemm tn %x, %w1 : (tensor<1023x64xbf16>, tensor<128x64xbf16>) -> tensor<1023x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: 1023 rows < 1024; auto folds static row counts >= 1024 only (at few rows the plain GEMM + activation kernel measured faster on the H200), --gemm-act-epilogues (act-epilogues=on) forces it}}
  %h = te.act gelu %pre : (tensor<1023x128xbf16>) -> tensor<1023x128xbf16>
  %dh = te.gemm nn %dy, %w2 : (tensor<1023x64xbf16>, tensor<64x128xbf16>) -> tensor<1023x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.dact not fused into a GEMM epilogue: 1023 rows < 1024; auto folds static row counts >= 1024 only (at few rows the plain GEMM + activation kernel measured faster on the H200), --gemm-act-epilogues (act-epilogues=on) forces it}}
  %d = te.dact gelu %dh, %pre : (tensor<1023x128xbf16>, tensor<1023x128xbf16>) -> tensor<1023x128xbf16>
  %pre8 = te.gemm tn %x8, %w1 : (tensor<8x64xbf16>, tensor<128x64xbf16>) -> tensor<8x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: 8 rows < 1024; auto folds static row counts >= 1024 only (at few rows the plain GEMM + activation kernel measured faster on the H200), --gemm-act-epilogues (act-epilogues=on) forces it}}
  %h8 = te.act gelu %pre8 : (tensor<8x128xbf16>) -> tensor<8x128xbf16>
  return %h, %d, %h8 : tensor<1023x128xbf16>, tensor<1023x128xbf16>, tensor<8x128xbf16>
}

// -----

// Dynamic tokens: not under auto (whatever the threshold), only under on.
// CHECK-LABEL: func.func @dynamic(
// CHECK:       te.gemm tn
// CHECK-NEXT:  te.act gelu
// CHECK-NEXT:  te.gemm nn
// CHECK-NEXT:  te.dact gelu
// MIN16-LABEL: func.func @dynamic(
// MIN16:       te.act gelu
// MIN16:       te.dact gelu
// ON-LABEL:    func.func @dynamic(
// ON:          te.gemm_act gelu %arg0, %arg1 : (tensor<?x64xf32>
// ON:          te.gemm_dact gelu %arg2, %arg3
func.func @dynamic(%x: tensor<?x64xf32>, %w1: tensor<128x64xf32>, %dy: tensor<?x64xf32>, %w2: tensor<64x128xf32>) -> (tensor<?x128xf32>, tensor<?x128xf32>) {
  %pre = te.gemm tn %x, %w1 : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: rows are dynamic; auto folds static row counts >= 1024 only, --gemm-act-epilogues (act-epilogues=on) forces it}}
  %h = te.act gelu %pre : (tensor<?x128xf32>) -> tensor<?x128xf32>
  %dh = te.gemm nn %dy, %w2 : (tensor<?x64xf32>, tensor<64x128xf32>) -> tensor<?x128xf32>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.dact not fused into a GEMM epilogue: rows are dynamic; auto folds static row counts >= 1024 only, --gemm-act-epilogues (act-epilogues=on) forces it}}
  %d = te.dact gelu %dh, %pre : (tensor<?x128xf32>, tensor<?x128xf32>) -> tensor<?x128xf32>
  return %h, %d : tensor<?x128xf32>, tensor<?x128xf32>
}

// -----

// The other reasons come first: a large GEMM that cannot fold anyway says
// why, not its rows.
// CHECK-LABEL: func.func @relu(
// CHECK:       te.act relu
func.func @relu(%x: tensor<2048x64xbf16>, %w: tensor<128x64xbf16>) -> tensor<2048x128xbf16> {
  %pre = te.gemm tn %x, %w : (tensor<2048x64xbf16>, tensor<128x64xbf16>) -> tensor<2048x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: activation relu has no GEMM epilogue (cuBLASLt's computes GELU, the tanh approximation, only)}}
  %h = te.act relu %pre : (tensor<2048x128xbf16>) -> tensor<2048x128xbf16>
  return %h : tensor<2048x128xbf16>
}

// Under on, only the relu is left with a remark.
// ON-REMARK-NOT: rows
// ON-REMARK:     remark: te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: activation relu
// ON-REMARK-NOT: remark
// ON-LABEL:    func.func @relu(
// ON:          te.act relu

// INVALID: error: te-fuse-gemm-epilogues: act-epilogues must be off, auto or on, got 'maybe'
// NEGATIVE: error: te-fuse-gemm-epilogues: act-epilogue-min-rows must be >= 0, got -1
