// RUN: te-opt %s --split-input-file --te-fuse-gemm-epilogues="act-epilogues=on dact-epilogue-max-rows=1024 bias-grad-epilogue-max-rows=1024" --verify-diagnostics | FileCheck %s
// RUN: sed 's/expected-remark.*//' %s | te-opt --split-input-file --te-fuse-gemm-epilogues=act-epilogues=on 2>/dev/null | FileCheck %s --check-prefix=NOLIMIT
// RUN: sed 's/expected-remark.*//' %s | not te-opt --split-input-file --te-fuse-gemm-epilogues="dact-epilogue-max-rows=-2" 2>&1 | FileCheck %s --check-prefix=BAD-DACT
// RUN: sed 's/expected-remark.*//' %s | not te-opt --split-input-file --te-fuse-gemm-epilogues="bias-grad-epilogue-max-rows=-5" 2>&1 | FileCheck %s --check-prefix=BAD-BGRAD
//
// dact-epilogue-max-rows / bias-grad-epilogue-max-rows: the dGELU (DGELU)
// and bias-gradient (BGRADB) epilogues fold only up to that many GEMM rows
// (tokens); above (and for dynamic rows) the plain GEMM runs and
// te.dact / te.bias_grad stay (te-fuse-dbias-dact fuses them after). The
// fprop GELU fold is not limited by either. -1 (the default): no limit.

// At the limit (1024 rows): everything folds.
// CHECK-LABEL: func.func @at_limit(
// CHECK:       te.gemm_act gelu
// CHECK:       te.gemm_dact gelu
// CHECK:       te.gemm nt {{.*}} -> (tensor<64x128xbf16>, tensor<64xbf16>)
// CHECK-NOT:   te.bias_grad
// NOLIMIT-LABEL: func.func @at_limit(
// NOLIMIT:       te.gemm_dact gelu
func.func @at_limit(%x: tensor<1024x64xbf16>, %w1: tensor<128x64xbf16>, %dy: tensor<1024x64xbf16>, %w2: tensor<64x128xbf16>, %a: tensor<1024x128xbf16>) -> (tensor<1024x128xbf16>, tensor<1024x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) {
  %pre = te.gemm tn %x, %w1 : (tensor<1024x64xbf16>, tensor<128x64xbf16>) -> tensor<1024x128xbf16>
  %h = te.act gelu %pre : (tensor<1024x128xbf16>) -> tensor<1024x128xbf16>
  %dh = te.gemm nn %dy, %w2 : (tensor<1024x64xbf16>, tensor<64x128xbf16>) -> tensor<1024x128xbf16>
  %d = te.dact gelu %dh, %pre : (tensor<1024x128xbf16>, tensor<1024x128xbf16>) -> tensor<1024x128xbf16>
  %dw = te.gemm nt %dy, %a : (tensor<1024x64xbf16>, tensor<1024x128xbf16>) -> tensor<64x128xbf16>
  %db = te.bias_grad %dy : (tensor<1024x64xbf16>) -> tensor<64xbf16>
  return %h, %d, %dw, %db : tensor<1024x128xbf16>, tensor<1024x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>
}

// -----

// Above it (2048 rows): GELU still folds into the fprop GEMM; the dgrad and
// the bias gradient stay unfused, each with the reason.
// CHECK-LABEL: func.func @above_limit(
// CHECK:       te.gemm_act gelu
// CHECK:       te.gemm nn
// CHECK:       te.dact gelu
// CHECK:       te.gemm nt {{.*}} -> tensor<64x128xbf16>
// CHECK:       te.bias_grad
// NOLIMIT-LABEL: func.func @above_limit(
// NOLIMIT:       te.gemm_act gelu
// NOLIMIT:       te.gemm_dact gelu
// NOLIMIT:       te.gemm nt {{.*}} -> (tensor<64x128xbf16>, tensor<64xbf16>)
// NOLIMIT-NOT:   te.bias_grad
func.func @above_limit(%x: tensor<2048x64xbf16>, %w1: tensor<128x64xbf16>, %dy: tensor<2048x64xbf16>, %w2: tensor<64x128xbf16>, %a: tensor<2048x128xbf16>) -> (tensor<2048x128xbf16>, tensor<2048x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) {
  %pre = te.gemm tn %x, %w1 : (tensor<2048x64xbf16>, tensor<128x64xbf16>) -> tensor<2048x128xbf16>
  %h = te.act gelu %pre : (tensor<2048x128xbf16>) -> tensor<2048x128xbf16>
  %dh = te.gemm nn %dy, %w2 : (tensor<2048x64xbf16>, tensor<64x128xbf16>) -> tensor<2048x128xbf16>
  // expected-remark @below {{te.dact not fused into a GEMM epilogue: 2048 rows > dact-epilogue-max-rows 1024 (the plain dgrad GEMM + the dGELU kernel run there)}}
  %d = te.dact gelu %dh, %pre : (tensor<2048x128xbf16>, tensor<2048x128xbf16>) -> tensor<2048x128xbf16>
  %dw = te.gemm nt %dy, %a : (tensor<2048x64xbf16>, tensor<2048x128xbf16>) -> tensor<64x128xbf16>
  // expected-remark @below {{bias gradient not fused: 2048 rows > bias-grad-epilogue-max-rows 1024 (the column reduction runs there, or the dact kernel's fused one)}}
  %db = te.bias_grad %dy : (tensor<2048x64xbf16>) -> tensor<64xbf16>
  return %h, %d, %dw, %db : tensor<2048x128xbf16>, tensor<2048x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>
}

// -----

// Dynamic rows: under a limit, neither folds.
// CHECK-LABEL: func.func @dynamic_rows(
// CHECK:       te.gemm nn
// CHECK:       te.dact gelu
// CHECK:       te.bias_grad
func.func @dynamic_rows(%dy: tensor<?x64xbf16>, %w2: tensor<64x128xbf16>, %pre: tensor<?x128xbf16>, %a: tensor<?x128xbf16>) -> (tensor<?x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) {
  %dh = te.gemm nn %dy, %w2 : (tensor<?x64xbf16>, tensor<64x128xbf16>) -> tensor<?x128xbf16>
  // expected-remark @below {{te.dact not fused into a GEMM epilogue: rows are dynamic; dact-epilogue-max-rows 1024}}
  %d = te.dact gelu %dh, %pre : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  %dw = te.gemm nt %dy, %a : (tensor<?x64xbf16>, tensor<?x128xbf16>) -> tensor<64x128xbf16>
  // expected-remark @below {{bias gradient not fused: rows are dynamic; bias-grad-epilogue-max-rows 1024}}
  %db = te.bias_grad %dy : (tensor<?x64xbf16>) -> tensor<64xbf16>
  return %d, %dw, %db : tensor<?x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>
}

// BAD-DACT: te-fuse-gemm-epilogues: dact-epilogue-max-rows must be >= 0 (or -1: no limit), got -2
// BAD-BGRAD: te-fuse-gemm-epilogues: bias-grad-epilogue-max-rows must be >= 0 (or -1: no limit), got -5
