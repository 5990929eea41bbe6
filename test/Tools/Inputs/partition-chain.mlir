// Input of te-compile-partition.mlir: two raised modules, the second reading
// the first's result, then a softmax left in torch.

func.func @f(%x: !torch.vtensor<[4,32],f32>, %w: !torch.vtensor<[64,32],f32>, %w2: !torch.vtensor<[16,64],f32>) -> !torch.vtensor<[4,16],f32> {
  %int32 = torch.constant.int 32
  %int-1 = torch.constant.int -1
  %none = torch.constant.none
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %n = torch.aten.rms_norm %x, %shape, %none, %none : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.none, !torch.none -> !torch.vtensor<[4,32],f32>
  %h = torch.aten.linear %n, %w, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[4,64],f32>
  %y = torch.aten.linear %h, %w2, %none : !torch.vtensor<[4,64],f32>, !torch.vtensor<[16,64],f32>, !torch.none -> !torch.vtensor<[4,16],f32>
  %s = torch.aten.softmax.int %y, %int-1, %none : !torch.vtensor<[4,16],f32>, !torch.int, !torch.none -> !torch.vtensor<[4,16],f32>
  return %s : !torch.vtensor<[4,16],f32>
}
