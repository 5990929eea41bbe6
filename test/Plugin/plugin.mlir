// REQUIRES: plugin
// Debian's mlir-opt loads the te dialect and passes from TEPlugin.so and
// handles te IR exactly as te-opt does.
//
// RUN: mlir-opt %s --load-dialect-plugin=%te_libs/TEPlugin%shlibext --verify-roundtrip | FileCheck %s
// RUN: mlir-opt %s --load-dialect-plugin=%te_libs/TEPlugin%shlibext --load-pass-plugin=%te_libs/TEPlugin%shlibext --pass-pipeline="builtin.module(te-apply-recipe{recipe=mxfp8})" | FileCheck %s --check-prefix=PASS
//
// The same file printed by both tools is identical.
// RUN: mlir-opt %s --load-dialect-plugin=%te_libs/TEPlugin%shlibext > %t.mlir-opt.mlir
// RUN: te-opt %s > %t.te-opt.mlir
// RUN: diff %t.mlir-opt.mlir %t.te-opt.mlir
//
// The dialect's whole round-trip and diagnostics suites pass under mlir-opt.
// RUN: mlir-opt %S/../Dialect/TE/ops.mlir --split-input-file --load-dialect-plugin=%te_libs/TEPlugin%shlibext --verify-roundtrip | FileCheck %S/../Dialect/TE/ops.mlir
// RUN: mlir-opt %S/../Dialect/TE/invalid.mlir --split-input-file --load-dialect-plugin=%te_libs/TEPlugin%shlibext --verify-diagnostics

// CHECK-LABEL: func.func @block
// CHECK: te.layernorm_mlp %{{.+}} norm rms_norm(%{{[^)]+}}) fc1(%{{[^)]+}}) act swiglu fc2(%{{[^)]+}}) {checkpoint}
// CHECK: te.linear
// PASS-LABEL: func.func @block
// PASS: te.layernorm_mlp {{.*}} recipe(#te.mxfp8) {checkpoint}
// PASS: te.linear {{.*}} recipe(#te.mxfp8)
func.func @block(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<512x64xbf16>, %w2: tensor<64x256xbf16>, %w: tensor<32x64xbf16>) -> tensor<?x32xbf16> {
  %h = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) {checkpoint} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<512x64xbf16>, tensor<64x256xbf16>) -> tensor<?x64xbf16>
  %y = te.linear %h weight(%w) : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}
