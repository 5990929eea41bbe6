// Malformed input exits non-zero with a located diagnostic. `not` without
// --crash itself fails if te-opt crashes or asserts, so these also check
// that nothing crashes.
//
// RUN: not te-opt %S/Inputs/garbage.bin 2>&1 | FileCheck %s --check-prefix=GARBAGE
// GARBAGE: garbage.bin:1:{{[0-9]+}}: error:
//
// RUN: not te-opt %S/Inputs/truncated.mlir 2>&1 | FileCheck %s --check-prefix=TRUNCATED
// TRUNCATED: truncated.mlir:2:{{[0-9]+}}: error: unbalanced '<' character in pretty dialect name
//
// RUN: not te-opt %S/Inputs/truncated-op.mlir 2>&1 | FileCheck %s --check-prefix=TRUNCATED-OP
// TRUNCATED-OP: truncated-op.mlir:2:73: error: expected ')'
//
// RUN: not te-opt %S/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: cannot open input file '{{.*}}does-not-exist.mlir': No such file or directory
//
// An empty stdin is an empty module, not an error.
// RUN: te-opt < /dev/null | FileCheck %s --check-prefix=EMPTY
// EMPTY: module {
//
