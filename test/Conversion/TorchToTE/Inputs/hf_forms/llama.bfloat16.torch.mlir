// llama.bfloat16.torch: test/Integration/hf/export_hf_forms.py (transformers 5.24.0, torch 2.14.1+cu130)
module {
  func.func @llama(%arg0: !torch.vtensor<[4,16],bf16>, %arg1: !torch.vtensor<[16],bf16>, %arg2: !torch.vtensor<[32,16],bf16>, %arg3: !torch.vtensor<[32,16],bf16>, %arg4: !torch.vtensor<[16,32],bf16>) -> !torch.vtensor<[4,16],bf16> {
    %int16 = torch.constant.int 16
    %int1 = torch.constant.int 1
    %float9.999990e-07 = torch.constant.float 9.9999999999999995E-7
    %true = torch.constant.bool true
    %int-1 = torch.constant.int -1
    %int2 = torch.constant.int 2
    %int6 = torch.constant.int 6
    %int0 = torch.constant.int 0
    %none = torch.constant.none
    %int15 = torch.constant.int 15
    %false = torch.constant.bool false
    %0 = torch.aten.to.dtype %arg0, %int6, %false, %false, %none : !torch.vtensor<[4,16],bf16>, !torch.int, !torch.bool, !torch.bool, !torch.none -> !torch.vtensor<[4,16],f32>
    %1 = torch.aten.pow.Tensor_Scalar %0, %int2 : !torch.vtensor<[4,16],f32>, !torch.int -> !torch.vtensor<[4,16],f32>
    %2 = torch.prim.ListConstruct %int-1 : (!torch.int) -> !torch.list<int>
    %3 = torch.aten.sum.dim_IntList %1, %2, %true, %none : !torch.vtensor<[4,16],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4,1],f32>
    %4 = torch.aten.div.Scalar %3, %int16 : !torch.vtensor<[4,1],f32>, !torch.int -> !torch.vtensor<[4,1],f32>
    %5 = torch.aten.add.Scalar %4, %float9.999990e-07, %int1 : !torch.vtensor<[4,1],f32>, !torch.float, !torch.int -> !torch.vtensor<[4,1],f32>
    %6 = torch.aten.rsqrt %5 : !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,1],f32>
    %7 = torch.aten.mul.Tensor %0, %6 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,16],f32>
    %8 = torch.aten.to.dtype %7, %int15, %false, %false, %none : !torch.vtensor<[4,16],f32>, !torch.int, !torch.bool, !torch.bool, !torch.none -> !torch.vtensor<[4,16],bf16>
    %9 = torch.aten.mul.Tensor %arg1, %8 : !torch.vtensor<[16],bf16>, !torch.vtensor<[4,16],bf16> -> !torch.vtensor<[4,16],bf16>
    %10 = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
    %11 = torch.aten.permute %arg2, %10 : !torch.vtensor<[32,16],bf16>, !torch.list<int> -> !torch.vtensor<[16,32],bf16>
    %12 = torch.aten.mm %9, %11 : !torch.vtensor<[4,16],bf16>, !torch.vtensor<[16,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %13 = torch.aten.to.dtype %12, %int6, %false, %false, %none : !torch.vtensor<[4,32],bf16>, !torch.int, !torch.bool, !torch.bool, !torch.none -> !torch.vtensor<[4,32],f32>
    %14 = torch.aten.sigmoid %13 : !torch.vtensor<[4,32],f32> -> !torch.vtensor<[4,32],f32>
    %15 = torch.aten.mul.Tensor %13, %14 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[4,32],f32> -> !torch.vtensor<[4,32],f32>
    %16 = torch.aten.to.dtype %15, %int15, %false, %false, %none : !torch.vtensor<[4,32],f32>, !torch.int, !torch.bool, !torch.bool, !torch.none -> !torch.vtensor<[4,32],bf16>
    %17 = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
    %18 = torch.aten.permute %arg3, %17 : !torch.vtensor<[32,16],bf16>, !torch.list<int> -> !torch.vtensor<[16,32],bf16>
    %19 = torch.aten.mm %9, %18 : !torch.vtensor<[4,16],bf16>, !torch.vtensor<[16,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %20 = torch.aten.mul.Tensor %16, %19 : !torch.vtensor<[4,32],bf16>, !torch.vtensor<[4,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %21 = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
    %22 = torch.aten.permute %arg4, %21 : !torch.vtensor<[16,32],bf16>, !torch.list<int> -> !torch.vtensor<[32,16],bf16>
    %23 = torch.aten.mm %20, %22 : !torch.vtensor<[4,32],bf16>, !torch.vtensor<[32,16],bf16> -> !torch.vtensor<[4,16],bf16>
    return %23 : !torch.vtensor<[4,16],bf16>
  }
}

