module {
  func.func @main(%x: !torch.vtensor<[4,4],f32>, %w: !torch.vtensor<[8,4],f32>) -> !torch.vtensor<[4,8],f32> {
    %int1 = torch.constant.int 1
    %int4 = torch.constant.int 4
    %false = torch.constant.bool false
    %eps = torch.constant.float 1.000000e-05
    %none = torch.constant.none
    %m1 = torch.constant.int -1
    %dims = torch.prim.ListConstruct %m1 : (!torch.int) -> !torch.list<int>
    %s = torch.aten.sum.dim_IntList %x, %dims, %false, %none : !torch.vtensor<[4,4],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4],f32>
    %mean = torch.aten.div.Scalar %s, %int4 : !torch.vtensor<[4],f32>, !torch.int -> !torch.vtensor<[4],f32>
    %c = torch.aten.sub.Tensor %x, %mean, %int1 : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4],f32>, !torch.int -> !torch.vtensor<[4,4],f32>
    %cc = torch.aten.mul.Tensor %c, %c : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
    %s2 = torch.aten.sum.dim_IntList %cc, %dims, %false, %none : !torch.vtensor<[4,4],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4],f32>
    %var = torch.aten.div.Scalar %s2, %int4 : !torch.vtensor<[4],f32>, !torch.int -> !torch.vtensor<[4],f32>
    %ve = torch.aten.add.Scalar %var, %eps, %int1 : !torch.vtensor<[4],f32>, !torch.float, !torch.int -> !torch.vtensor<[4],f32>
    %r = torch.aten.rsqrt %ve : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
    %n = torch.aten.mul.Tensor %c, %r : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4],f32> -> !torch.vtensor<[4,4],f32>
    %y = torch.aten.linear %n, %w, %none : !torch.vtensor<[4,4],f32>, !torch.vtensor<[8,4],f32>, !torch.none -> !torch.vtensor<[4,8],f32>
    return %y : !torch.vtensor<[4,8],f32>
  }
}
