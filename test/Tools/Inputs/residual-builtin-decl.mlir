// Not a residual of te-compile: the library entry is declared on builtin
// tensors, which a torch caller cannot pass.
func.func private @main_linear_0(tensor<4x32xf32>, tensor<64x32xf32>) -> tensor<4x64xf32>
func.func @main(%arg0: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  return %arg0 : !torch.vtensor<[4,32],f32>
}
