// te-run's dim expressions: the shapes of the module info are integers or
// strings in the grammar te-lower-to-runtime emits (integers, d<k>, `*`,
// exact `/`, `+`, `-`, `ceildiv(a, b)`, `roundup(a, b)`, parentheses;
// block-scaled inner tensors with dynamic dims use them). fake_module.py
// builds a library whose entry `f` takes a float32 [d0, 4] (d0 = 8 under
// --random) and returns a float32 of the given shape.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/fake_module.py %t/ok.so "roundup(ceildiv(d0, 128), 4)*2 + d0/2 - (3 - 1)" "(d0 + 8)*3/4" 5 "d0*d0"
// RUN: te-run %t/ok.so --entry f --random 1 --outputs %t/ok
// RUN: %python -c "import numpy as n; print(n.load('%t/ok/result0.npy').shape)" | FileCheck %s
// CHECK: (10, 12, 5, 64)
//
// Malformed expressions die naming the expression and the column.
// RUN: %python %S/fake_module.py %t/paren.so "ceildiv(d0, 128"
// RUN: not te-run %t/paren.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=PAREN
// PAREN: te-run: error: malformed dim expression 'ceildiv(d0, 128' at column 16: expected ')'
// RUN: %python %S/fake_module.py %t/comma.so "ceildiv(d0 128)"
// RUN: not te-run %t/comma.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=COMMA
// COMMA: te-run: error: malformed dim expression 'ceildiv(d0 128)' at column 12: expected ','
// RUN: %python %S/fake_module.py %t/op.so "d0 % 4"
// RUN: not te-run %t/op.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=OP
// OP: te-run: error: malformed dim expression 'd0 % 4' at column 4: unexpected '%'
// RUN: %python %S/fake_module.py %t/word.so "floor(d0)"
// RUN: not te-run %t/word.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=WORD
// WORD: te-run: error: malformed dim expression 'floor(d0)' at column 1: unknown word 'floor'
// RUN: %python %S/fake_module.py %t/sym.so "d3"
// RUN: not te-run %t/sym.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=SYM
// SYM: te-run: error: malformed dim expression 'd3' at column 3: unknown dim symbol 'd3' (the entry has 1 dim symbols)
// RUN: %python %S/fake_module.py %t/end.so "d0 *"
// RUN: not te-run %t/end.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=END
// END: te-run: error: malformed dim expression 'd0 *' at column 5: unexpected end
// RUN: %python %S/fake_module.py %t/juxt.so "d0 d0"
// RUN: not te-run %t/juxt.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=JUXT
// JUXT: te-run: error: malformed dim expression 'd0 d0' at column 4: unexpected 'd'
// RUN: %python %S/fake_module.py %t/zero.so "roundup(d0, 0)"
// RUN: not te-run %t/zero.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: te-run: error: dim expression 'roundup(d0, 0)' at column 14: roundup by 0, not a positive divisor
//
// A divisor's value is known only at the dims: well formed, so the library
// loads, but the run names the divisor (a fuzzed module info whose
// `roundup(d0/16, 4-3922)` was taken for a syntax error at run time).
// RUN: %python %S/fake_module.py %t/neg.so "roundup(d0/4, 4-3922)"
// RUN: not te-run %t/neg.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: te-run: error: dim expression 'roundup(d0/4, 4-3922)' at column 21: roundup by -3918, not a positive divisor
// RUN: %python %S/fake_module.py %t/div.so "d0/(d0-8)"
// RUN: not te-run %t/div.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=DIV
// DIV: te-run: error: dim expression 'd0/(d0-8)' at column 10: division by 0, not a positive divisor
//
// `/` is exact: a dim the recipe needs divisible (MXFP8's rows by 32) that
// is not is an error, not a truncation.
// RUN: %python %S/fake_module.py %t/exact.so "d0/3"
// RUN: not te-run %t/exact.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=EXACT
// EXACT: te-run: error: dim expression 'd0/3': 8 is not divisible by 3 (the recipe needs a multiple of 3 there)
