module {
  func.func @main(%x: !torch.vtensor<[2,8],f32>, %g: !torch.vtensor<[8],f32>, %w: !torch.vtensor<[16,8],f32>) -> !torch.vtensor<*,f32> {
    %none = torch.constant.none
    %int8 = torch.constant.int 8
    %int1 = torch.constant.int 1
    %int0 = torch.constant.int 0
    %m1 = torch.constant.int -1
    %eps = torch.constant.float 1.000000e-05
    %shape = torch.prim.ListConstruct %int8 : (!torch.int) -> !torch.list<int>
    %n = torch.aten.rms_norm %x, %shape, %g, %eps : !torch.vtensor<[2,8],f32>, !torch.list<int>, !torch.vtensor<[8],f32>, !torch.float -> !torch.vtensor<[2,8],f32>
    %h = torch.aten.linear %n, %w, %none : !torch.vtensor<[2,8],f32>, !torch.vtensor<[16,8],f32>, !torch.none -> !torch.vtensor<*,f32>
    %a = torch.aten.slice.Tensor %h, %m1, %int0, %int8, %int1 : !torch.vtensor<*,f32>, !torch.int, !torch.int, !torch.int, !torch.int -> !torch.vtensor<*,f32>
    %b = torch.aten.slice.Tensor %h, %m1, %int8, %int8, %int1 : !torch.vtensor<*,f32>, !torch.int, !torch.int, !torch.int, !torch.int -> !torch.vtensor<*,f32>
    %c = torch.aten.mul.Tensor %a, %b : !torch.vtensor<*,f32>, !torch.vtensor<*,f32> -> !torch.vtensor<*,f32>
    return %c : !torch.vtensor<*,f32>
  }
}
