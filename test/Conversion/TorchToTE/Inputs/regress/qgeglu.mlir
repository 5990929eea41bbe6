module {
  func.func @main(%x: !torch.vtensor<[2,8],f32>, %g: !torch.vtensor<[8],f32>, %w1: !torch.vtensor<[32,8],f32>, %w2: !torch.vtensor<[8,16],f32>) -> !torch.vtensor<[2,8],f32> {
    %none = torch.constant.none
    %int8 = torch.constant.int 8
    %int1 = torch.constant.int 1
    %int0 = torch.constant.int 0
    %int16 = torch.constant.int 16
    %int32 = torch.constant.int 32
    %m1 = torch.constant.int -1
    %f = torch.constant.float 1.702000e+00
    %eps = torch.constant.float 1.000000e-05
    %shape = torch.prim.ListConstruct %int8 : (!torch.int) -> !torch.list<int>
    %n = torch.aten.rms_norm %x, %shape, %g, %eps : !torch.vtensor<[2,8],f32>, !torch.list<int>, !torch.vtensor<[8],f32>, !torch.float -> !torch.vtensor<[2,8],f32>
    %h = torch.aten.linear %n, %w1, %none : !torch.vtensor<[2,8],f32>, !torch.vtensor<[32,8],f32>, !torch.none -> !torch.vtensor<[2,32],f32>
    %a = torch.aten.slice.Tensor %h, %m1, %int0, %int16, %int1 : !torch.vtensor<[2,32],f32>, !torch.int, !torch.int, !torch.int, !torch.int -> !torch.vtensor<[2,16],f32>
    %b = torch.aten.slice.Tensor %h, %m1, %int16, %int32, %int1 : !torch.vtensor<[2,32],f32>, !torch.int, !torch.int, !torch.int, !torch.int -> !torch.vtensor<[2,16],f32>
    %s = torch.aten.mul.Scalar %a, %f : !torch.vtensor<[2,16],f32>, !torch.float -> !torch.vtensor<[2,16],f32>
    %sg = torch.aten.sigmoid %s : !torch.vtensor<[2,16],f32> -> !torch.vtensor<[2,16],f32>
    %q = torch.aten.mul.Tensor %a, %sg : !torch.vtensor<[2,16],f32>, !torch.vtensor<[2,16],f32> -> !torch.vtensor<[2,16],f32>
    %c = torch.aten.mul.Tensor %q, %b : !torch.vtensor<[2,16],f32>, !torch.vtensor<[2,16],f32> -> !torch.vtensor<[2,16],f32>
    %y = torch.aten.linear %c, %w2, %none : !torch.vtensor<[2,16],f32>, !torch.vtensor<[8,16],f32>, !torch.none -> !torch.vtensor<[2,8],f32>
    return %y : !torch.vtensor<[2,8],f32>
  }
}
