// A torch-mlir export cut off inside a dialect_resources blob (no closing
// quote, no newline at the end): MLIR 22's lexer reads past the buffer.
module {}
{-#
  dialect_resources: {
    builtin: {
      torch_tensor_32_torch.float32: "0x04000000EC71403E875CECBBE5