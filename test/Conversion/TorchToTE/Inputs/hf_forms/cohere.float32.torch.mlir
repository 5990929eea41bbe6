// cohere.float32.torch: test/Integration/hf/export_hf_forms.py (transformers 5.24.0, torch 2.14.1+cu130)
module {
  func.func @cohere(%arg0: !torch.vtensor<[4,16],f32>, %arg1: !torch.vtensor<[16],f32>, %arg2: !torch.vtensor<[32,16],f32>, %arg3: !torch.vtensor<[32,16],f32>, %arg4: !torch.vtensor<[16,32],f32>) -> !torch.vtensor<[4,16],f32> {
    %int16 = torch.constant.int 16
    %float1.000000e-05 = torch.constant.float 1.000000e-05
    %int2 = torch.constant.int 2
    %int1 = torch.constant.int 1
    %true = torch.constant.bool true
    %int-1 = torch.constant.int -1
    %int0 = torch.constant.int 0
    %none = torch.constant.none
    %0 = torch.prim.ListConstruct %int-1 : (!torch.int) -> !torch.list<int>
    %1 = torch.aten.sum.dim_IntList %arg0, %0, %true, %none : !torch.vtensor<[4,16],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4,1],f32>
    %2 = torch.aten.div.Scalar %1, %int16 : !torch.vtensor<[4,1],f32>, !torch.int -> !torch.vtensor<[4,1],f32>
    %3 = torch.aten.sub.Tensor %arg0, %2, %int1 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[4,1],f32>, !torch.int -> !torch.vtensor<[4,16],f32>
    %4 = torch.aten.pow.Tensor_Scalar %3, %int2 : !torch.vtensor<[4,16],f32>, !torch.int -> !torch.vtensor<[4,16],f32>
    %5 = torch.prim.ListConstruct %int-1 : (!torch.int) -> !torch.list<int>
    %6 = torch.aten.sum.dim_IntList %4, %5, %true, %none : !torch.vtensor<[4,16],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4,1],f32>
    %7 = torch.aten.div.Scalar %6, %int16 : !torch.vtensor<[4,1],f32>, !torch.int -> !torch.vtensor<[4,1],f32>
    %8 = torch.aten.sub.Tensor %arg0, %2, %int1 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[4,1],f32>, !torch.int -> !torch.vtensor<[4,16],f32>
    %9 = torch.aten.add.Scalar %7, %float1.000000e-05, %int1 : !torch.vtensor<[4,1],f32>, !torch.float, !torch.int -> !torch.vtensor<[4,1],f32>
    %10 = torch.aten.rsqrt %9 : !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,1],f32>
    %11 = torch.aten.mul.Tensor %8, %10 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,16],f32>
    %12 = torch.aten.mul.Tensor %arg1, %11 : !torch.vtensor<[16],f32>, !torch.vtensor<[4,16],f32> -> !torch.vtensor<[4,16],f32>
    %13 = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
    %14 = torch.aten.permute %arg2, %13 : !torch.vtensor<[32,16],f32>, !torch.list<int> -> !torch.vtensor<[16,32],f32>
    %15 = torch.aten.mm %12, %14 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[16,32],f32> -> !torch.vtensor<[4,32],f32>
    %16 = torch.aten.sigmoid %15 : !torch.vtensor<[4,32],f32> -> !torch.vtensor<[4,32],f32>
    %17 = torch.aten.mul.Tensor %15, %16 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[4,32],f32> -> !torch.vtensor<[4,32],f32>
    %18 = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
    %19 = torch.aten.permute %arg3, %18 : !torch.vtensor<[32,16],f32>, !torch.list<int> -> !torch.vtensor<[16,32],f32>
    %20 = torch.aten.mm %12, %19 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[16,32],f32> -> !torch.vtensor<[4,32],f32>
    %21 = torch.aten.mul.Tensor %17, %20 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[4,32],f32> -> !torch.vtensor<[4,32],f32>
    %22 = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
    %23 = torch.aten.permute %arg4, %22 : !torch.vtensor<[16,32],f32>, !torch.list<int> -> !torch.vtensor<[32,16],f32>
    %24 = torch.aten.mm %21, %23 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[32,16],f32> -> !torch.vtensor<[4,16],f32>
    return %24 : !torch.vtensor<[4,16],f32>
  }
}

