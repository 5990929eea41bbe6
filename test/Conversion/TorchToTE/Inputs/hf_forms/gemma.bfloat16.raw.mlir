// gemma.bfloat16.raw: test/Integration/hf/export_hf_forms.py (transformers 5.24.0, torch 2.14.1+cu130)
module {
  func.func @gemma(%arg0: !torch.vtensor<[4,16],bf16>, %arg1: !torch.vtensor<[16],bf16>, %arg2: !torch.vtensor<[32,16],bf16>, %arg3: !torch.vtensor<[32,16],bf16>, %arg4: !torch.vtensor<[16,32],bf16>) -> !torch.vtensor<[4,16],bf16> {
    %none = torch.constant.none
    %none_0 = torch.constant.none
    %int15 = torch.constant.int 15
    %cpu = torch.constant.device "cpu"
    %int0 = torch.constant.int 0
    torch.aten._assert_tensor_metadata %arg0, %none, %none_0, %int15, %cpu, %int0 : !torch.vtensor<[4,16],bf16>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.int
    %int6 = torch.constant.int 6
    %0 = torch.prims.convert_element_type %arg0, %int6 : !torch.vtensor<[4,16],bf16>, !torch.int -> !torch.vtensor<[4,16],f32>
    %int2 = torch.constant.int 2
    %1 = torch.aten.pow.Tensor_Scalar %0, %int2 : !torch.vtensor<[4,16],f32>, !torch.int -> !torch.vtensor<[4,16],f32>
    %int-1 = torch.constant.int -1
    %2 = torch.prim.ListConstruct %int-1 : (!torch.int) -> !torch.list<int>
    %true = torch.constant.bool true
    %none_1 = torch.constant.none
    %3 = torch.aten.mean.dim %1, %2, %true, %none_1 : !torch.vtensor<[4,16],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4,1],f32>
    %float9.999990e-07 = torch.constant.float 9.9999999999999995E-7
    %int1 = torch.constant.int 1
    %4 = torch.aten.add.Scalar %3, %float9.999990e-07, %int1 : !torch.vtensor<[4,1],f32>, !torch.float, !torch.int -> !torch.vtensor<[4,1],f32>
    %5 = torch.aten.rsqrt %4 : !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,1],f32>
    %6 = torch.aten.mul.Tensor %0, %5 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,16],f32>
    %none_2 = torch.constant.none
    %none_3 = torch.constant.none
    %int15_4 = torch.constant.int 15
    %cpu_5 = torch.constant.device "cpu"
    %int0_6 = torch.constant.int 0
    torch.aten._assert_tensor_metadata %arg1, %none_2, %none_3, %int15_4, %cpu_5, %int0_6 : !torch.vtensor<[16],bf16>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.int
    %int6_7 = torch.constant.int 6
    %7 = torch.prims.convert_element_type %arg1, %int6_7 : !torch.vtensor<[16],bf16>, !torch.int -> !torch.vtensor<[16],f32>
    %float1.000000e00 = torch.constant.float 1.000000e+00
    %int1_8 = torch.constant.int 1
    %8 = torch.aten.add.Scalar %7, %float1.000000e00, %int1_8 : !torch.vtensor<[16],f32>, !torch.float, !torch.int -> !torch.vtensor<[16],f32>
    %9 = torch.aten.mul.Tensor %6, %8 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[16],f32> -> !torch.vtensor<[4,16],f32>
    %int15_9 = torch.constant.int 15
    %10 = torch.prims.convert_element_type %9, %int15_9 : !torch.vtensor<[4,16],f32>, !torch.int -> !torch.vtensor<[4,16],bf16>
    %int1_10 = torch.constant.int 1
    %int0_11 = torch.constant.int 0
    %11 = torch.prim.ListConstruct %int1_10, %int0_11 : (!torch.int, !torch.int) -> !torch.list<int>
    %12 = torch.aten.permute %arg2, %11 : !torch.vtensor<[32,16],bf16>, !torch.list<int> -> !torch.vtensor<[16,32],bf16>
    %13 = torch.aten.mm %10, %12 : !torch.vtensor<[4,16],bf16>, !torch.vtensor<[16,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %str = torch.constant.str "tanh"
    %14 = torch.aten.gelu %13, %str : !torch.vtensor<[4,32],bf16>, !torch.str -> !torch.vtensor<[4,32],bf16>
    %int1_12 = torch.constant.int 1
    %int0_13 = torch.constant.int 0
    %15 = torch.prim.ListConstruct %int1_12, %int0_13 : (!torch.int, !torch.int) -> !torch.list<int>
    %16 = torch.aten.permute %arg3, %15 : !torch.vtensor<[32,16],bf16>, !torch.list<int> -> !torch.vtensor<[16,32],bf16>
    %17 = torch.aten.mm %10, %16 : !torch.vtensor<[4,16],bf16>, !torch.vtensor<[16,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %18 = torch.aten.mul.Tensor %14, %17 : !torch.vtensor<[4,32],bf16>, !torch.vtensor<[4,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %int1_14 = torch.constant.int 1
    %int0_15 = torch.constant.int 0
    %19 = torch.prim.ListConstruct %int1_14, %int0_15 : (!torch.int, !torch.int) -> !torch.list<int>
    %20 = torch.aten.permute %arg4, %19 : !torch.vtensor<[16,32],bf16>, !torch.list<int> -> !torch.vtensor<[32,16],bf16>
    %21 = torch.aten.mm %18, %20 : !torch.vtensor<[4,32],bf16>, !torch.vtensor<[32,16],bf16> -> !torch.vtensor<[4,16],bf16>
    return %21 : !torch.vtensor<[4,16],bf16>
  }
}

