// Inputs that crash Debian's MLIR 22 get a diagnostic from te-opt and
// te-compile instead (te/Support/InputGuards.h, docs/robustness.md).
//
// RUN: not te-opt %s 2>&1 | FileCheck %s --check-prefix=CONCAT
// RUN: not te-opt < %s 2>&1 | FileCheck %s --check-prefix=CONCAT
// RUN: not te-compile %s -o %t.so 2>&1 | FileCheck %s --check-prefixes=CONCAT,COMPILE
// RUN: not te-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefixes=CONCAT,SPLIT
// RUN: not te-opt %S/Inputs/truncated-resource.mlir 2>&1 | FileCheck %s --check-prefix=RES
// RUN: not te-compile %S/Inputs/truncated-resource.mlir -o %t.so 2>&1 | FileCheck %s --check-prefix=RES
//
// tensor.concat with a negative dim: upstream's ConcatOp::verify indexes
// with it (a segfault in mlir-opt).
// CONCAT: {{.*}}:[[@LINE+3]]:8: error: 'tensor.concat' op concatenation dim must be in [0, 2), got -1
// COMPILE: te-compile: error: cannot parse
func.func @negative_dim(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %c = tensor.concat dim(-1) %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}

// -----

// The generic form and a dim past the rank are caught the same way.
// SPLIT: input-guards.mlir:20 offset :6:8: error: 'tensor.concat' op concatenation dim must be in [0, 2), got -3
func.func @generic(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<8x8xf32> {
  %c = "tensor.concat"(%a, %b) <{dim = -3 : i64}> : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return %c : tensor<8x8xf32>
}

// RES: truncated-resource.mlir:7:38: error: unterminated string in the file metadata (dialect_resources): the input looks truncated

// A use of a result number far past the op's results: MLIR 22's parser
// allocates in proportion to it (an out-of-memory abort at 2^31).
// RUN: not te-opt %S/Inputs/huge-result-number.mlir 2>&1 | FileCheck %s --check-prefix=RESULTNO
// RUN: not te-compile %S/Inputs/huge-result-number.mlir -o %t.so 2>&1 | FileCheck %s --check-prefix=RESULTNO
// RESULTNO: huge-result-number.mlir:6:10: error: result number 2147483648 of %r0 is out of range (at most 1048576)
