module {
  func.func @main(%x: !torch.vtensor<[2,8],bf16>, %g: !torch.vtensor<[8],bf16>, %w: !torch.vtensor<[16,8],bf16>) -> !torch.vtensor<[2,16],bf16> {
    %int6 = torch.constant.int 6
    %int15 = torch.constant.int 15
    %int8 = torch.constant.int 8
    %none = torch.constant.none
    %shape = torch.prim.ListConstruct %int8 : (!torch.int) -> !torch.list<int>
    %up = torch.prims.convert_element_type %x, %int6 : !torch.vtensor<[2,8],bf16>, !torch.int -> !torch.vtensor<[2,8],f32>
    %gu = torch.prims.convert_element_type %g, %int6 : !torch.vtensor<[8],bf16>, !torch.int -> !torch.vtensor<[8],f32>
    %n = torch.aten.rms_norm %up, %shape, %gu, %none : !torch.vtensor<[2,8],f32>, !torch.list<int>, !torch.vtensor<[8],f32>, !torch.none -> !torch.vtensor<[2,8],f32>
    %d = torch.prims.convert_element_type %n, %int15 : !torch.vtensor<[2,8],f32>, !torch.int -> !torch.vtensor<[2,8],bf16>
    %y = torch.aten.linear %d, %w, %none : !torch.vtensor<[2,8],bf16>, !torch.vtensor<[16,8],bf16>, !torch.none -> !torch.vtensor<[2,16],bf16>
    return %y : !torch.vtensor<[2,16],bf16>
  }
}
