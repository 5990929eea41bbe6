// RUN: te-opt %s --te-decompose --verify-diagnostics | FileCheck %s
// RUN: not te-opt %s --te-decompose=strict-recipe=true 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: te-compile %s --emit=mlir -o %t.mlir 2>&1 | FileCheck %s --check-prefix=WARN
// RUN: not te-compile %s --strict-recipe --emit=mlir -o %t.mlir 2>&1 | FileCheck %s --check-prefix=STRICT
//
// A quantized recipe that cannot apply to a module op (an fp8-block GEMM dim
// that is not a multiple of 128) runs that op unquantized: the user asked
// for the recipe, so it is said without --remarks, as a warning at the op,
// and is an error under strict-recipe (te-compile --strict-recipe).

// CHECK-LABEL: func.func @ragged(
// CHECK:       te.gemm tn
// CHECK-NOT:   te.quantize
// WARN:  te-decompose-strict-recipe.mlir:[[@LINE+4]]:8: warning: te-decompose: recipe fp8-block needs the rows of every GEMM operand divisible by 128; input has 200: this op runs unquantized (bf16 path) (strict-recipe makes this an error)
// STRICT: te-decompose-strict-recipe.mlir:[[@LINE+3]]:8: error: te-decompose: recipe fp8-block needs the rows of every GEMM operand divisible by 128; input has 200: this op runs unquantized (bf16 path){{$}}
func.func @ragged(%x: tensor<200x128xbf16>, %w: tensor<256x128xbf16>) -> tensor<200x256xbf16> {
  // expected-warning @+1 {{te-decompose: recipe fp8-block needs the rows of every GEMM operand divisible by 128; input has 200: this op runs unquantized (bf16 path) (strict-recipe makes this an error)}}
  %y = te.linear %x weight(%w) recipe(#te.fp8_block<>) : (tensor<200x128xbf16>, tensor<256x128xbf16>) -> tensor<200x256xbf16>
  return %y : tensor<200x256xbf16>
}

// An aligned op quantizes and says nothing.
// CHECK-LABEL: func.func @aligned(
// CHECK:       te.quantize
// WARN-NOT: warning: te-decompose
// STRICT-NOT: error: te-decompose
func.func @aligned(%x: tensor<256x128xbf16>, %w: tensor<256x128xbf16>) -> tensor<256x256xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_block<>) : (tensor<256x128xbf16>, tensor<256x128xbf16>) -> tensor<256x256xbf16>
  return %y : tensor<256x256xbf16>
}
