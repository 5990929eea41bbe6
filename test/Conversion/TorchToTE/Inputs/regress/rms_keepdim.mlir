module {
  func.func @main(%x: !torch.vtensor<[4,4],f32>, %w: !torch.vtensor<[8,4],f32>) -> !torch.vtensor<[4,8],f32> {
    %int1 = torch.constant.int 1
    %int2 = torch.constant.int 2
    %false = torch.constant.bool false
    %eps = torch.constant.float 1.000000e-05
    %none = torch.constant.none
    %m1 = torch.constant.int -1
    %dims = torch.prim.ListConstruct %m1 : (!torch.int) -> !torch.list<int>
    %sq = torch.aten.pow.Tensor_Scalar %x, %int2 : !torch.vtensor<[4,4],f32>, !torch.int -> !torch.vtensor<[4,4],f32>
    %m = torch.aten.mean.dim %sq, %dims, %false, %none : !torch.vtensor<[4,4],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4],f32>
    %ve = torch.aten.add.Scalar %m, %eps, %int1 : !torch.vtensor<[4],f32>, !torch.float, !torch.int -> !torch.vtensor<[4],f32>
    %r = torch.aten.rsqrt %ve : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
    %n = torch.aten.mul.Tensor %x, %r : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4],f32> -> !torch.vtensor<[4,4],f32>
    %y = torch.aten.linear %n, %w, %none : !torch.vtensor<[4,4],f32>, !torch.vtensor<[8,4],f32>, !torch.none -> !torch.vtensor<[4,8],f32>
    return %y : !torch.vtensor<[4,8],f32>
  }
}
