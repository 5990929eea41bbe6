module {
  func.func @main(%x: !torch.vtensor<[],f32>, %w: !torch.vtensor<[8,4],f32>) -> !torch.vtensor<[8],f32> {
    %none = torch.constant.none
    %y = torch.aten.linear %x, %w, %none : !torch.vtensor<[],f32>, !torch.vtensor<[8,4],f32>, !torch.none -> !torch.vtensor<[8],f32>
    return %y : !torch.vtensor<[8],f32>
  }
}
