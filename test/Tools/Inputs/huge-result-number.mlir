// A use of result #2^31 of a one-result op: MLIR 22's parser resizes the
// value's result table to 2^31 + 1 entries (LLVM ERROR: out of memory).
// A number in a comment is not a use: %r0#99999999999
func.func @lin(%x: tensor<?x32xf32>, %w: tensor<32x32xf32>, %b: tensor<32xf32>) -> tensor<?x32xf32> {
  %r0 = te.linear %x weight(%w, %b) {note = "%r0#99999999999"} : (tensor<?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  return %r0#2147483648 : tensor<?x32xf32>
}
