// RUN: te-opt %s --split-input-file --te-lower-to-runtime --verify-diagnostics
// RUN: not te-opt %s --split-input-file --te-pipeline 2>&1 | FileCheck %s --check-prefix=PIPE
//
// What te-lower-to-runtime refuses, with the function or op at fault (each
// of these was a crash: a cast of a non-tensor type, or sizes past int64).

// An entry returns tensors; `index` has no buffer in the ABI.
// expected-error @+1 {{te-lower-to-runtime: result #0 must be a ranked tensor or a quantized tensor, got 'index'}}
func.func @index_result() -> index {
  %c = arith.constant 0 : index
  return %c : index
}
// PIPE: error: te-lower-to-runtime: result #0 must be a ranked tensor or a quantized tensor, got 'index'

// -----

// A scalar computed in the body, even unused.
func.func @index_in_body(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{te-lower-to-runtime: 'arith.constant' produces a value of type 'index'; entries compute on ranked tensors only}}
  %c = arith.constant 0 : index
  return %x : tensor<4x8xf32>
}
// (te-pipeline's cse removes the dead constant: that chunk compiles.)

// -----

// A plain function (no te op verifies its types) with a dim past 2^40.
// expected-error @+1 {{te-lower-to-runtime: argument #0 has dimension 9223372036854775807, above the largest supported (2^40 = 1099511627776)}}
func.func @huge_argument(%x: tensor<9223372036854775807x64xf32>) -> tensor<9223372036854775807x64xf32> {
  return %x : tensor<9223372036854775807x64xf32>
}
// PIPE: error: te-lower-to-runtime: argument #0 has dimension 9223372036854775807

// -----

// A static element count past 2^48 in the body.
func.func @huge_result(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{te-lower-to-runtime: result #0 has 1125899906842624 elements, above the largest supported (2^48 = 281474976710656)}}
  %e = tensor.empty() : tensor<1099511627776x1024xf32>
  return %x : tensor<4x8xf32>
}
