// A torch module with no call to a library: check_residual.py runs
// torch-mlir's pipelines as they are.
func.func @main(%arg0: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %0 = torch.aten.neg %arg0 : !torch.vtensor<[4,32],f32> -> !torch.vtensor<[4,32],f32>
  return %0 : !torch.vtensor<[4,32],f32>
}
