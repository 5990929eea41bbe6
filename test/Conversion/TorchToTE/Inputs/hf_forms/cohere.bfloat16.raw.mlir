// cohere.bfloat16.raw: test/Integration/hf/export_hf_forms.py (transformers 5.24.0, torch 2.14.1+cu130)
module {
  func.func @cohere(%arg0: !torch.vtensor<[4,16],bf16>, %arg1: !torch.vtensor<[16],bf16>, %arg2: !torch.vtensor<[32,16],bf16>, %arg3: !torch.vtensor<[32,16],bf16>, %arg4: !torch.vtensor<[16,32],bf16>) -> !torch.vtensor<[4,16],bf16> {
    %none = torch.constant.none
    %none_0 = torch.constant.none
    %int15 = torch.constant.int 15
    %cpu = torch.constant.device "cpu"
    %int0 = torch.constant.int 0
    torch.aten._assert_tensor_metadata %arg0, %none, %none_0, %int15, %cpu, %int0 : !torch.vtensor<[4,16],bf16>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.int
    %int6 = torch.constant.int 6
    %0 = torch.prims.convert_element_type %arg0, %int6 : !torch.vtensor<[4,16],bf16>, !torch.int -> !torch.vtensor<[4,16],f32>
    %int-1 = torch.constant.int -1
    %1 = torch.prim.ListConstruct %int-1 : (!torch.int) -> !torch.list<int>
    %true = torch.constant.bool true
    %none_1 = torch.constant.none
    %2 = torch.aten.mean.dim %0, %1, %true, %none_1 : !torch.vtensor<[4,16],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4,1],f32>
    %int1 = torch.constant.int 1
    %3 = torch.aten.sub.Tensor %0, %2, %int1 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[4,1],f32>, !torch.int -> !torch.vtensor<[4,16],f32>
    %int2 = torch.constant.int 2
    %4 = torch.aten.pow.Tensor_Scalar %3, %int2 : !torch.vtensor<[4,16],f32>, !torch.int -> !torch.vtensor<[4,16],f32>
    %int-1_2 = torch.constant.int -1
    %5 = torch.prim.ListConstruct %int-1_2 : (!torch.int) -> !torch.list<int>
    %true_3 = torch.constant.bool true
    %none_4 = torch.constant.none
    %6 = torch.aten.mean.dim %4, %5, %true_3, %none_4 : !torch.vtensor<[4,16],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[4,1],f32>
    %int1_5 = torch.constant.int 1
    %7 = torch.aten.sub.Tensor %0, %2, %int1_5 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[4,1],f32>, !torch.int -> !torch.vtensor<[4,16],f32>
    %float1.000000e-05 = torch.constant.float 1.000000e-05
    %int1_6 = torch.constant.int 1
    %8 = torch.aten.add.Scalar %6, %float1.000000e-05, %int1_6 : !torch.vtensor<[4,1],f32>, !torch.float, !torch.int -> !torch.vtensor<[4,1],f32>
    %9 = torch.aten.rsqrt %8 : !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,1],f32>
    %10 = torch.aten.mul.Tensor %7, %9 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,16],f32>
    %none_7 = torch.constant.none
    %none_8 = torch.constant.none
    %int15_9 = torch.constant.int 15
    %cpu_10 = torch.constant.device "cpu"
    %int0_11 = torch.constant.int 0
    torch.aten._assert_tensor_metadata %arg1, %none_7, %none_8, %int15_9, %cpu_10, %int0_11 : !torch.vtensor<[16],bf16>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.int
    %int6_12 = torch.constant.int 6
    %11 = torch.prims.convert_element_type %arg1, %int6_12 : !torch.vtensor<[16],bf16>, !torch.int -> !torch.vtensor<[16],f32>
    %12 = torch.aten.mul.Tensor %11, %10 : !torch.vtensor<[16],f32>, !torch.vtensor<[4,16],f32> -> !torch.vtensor<[4,16],f32>
    %none_13 = torch.constant.none
    %none_14 = torch.constant.none
    %int6_15 = torch.constant.int 6
    %cpu_16 = torch.constant.device "cpu"
    %int0_17 = torch.constant.int 0
    torch.aten._assert_tensor_metadata %12, %none_13, %none_14, %int6_15, %cpu_16, %int0_17 : !torch.vtensor<[4,16],f32>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.int
    %int15_18 = torch.constant.int 15
    %13 = torch.prims.convert_element_type %12, %int15_18 : !torch.vtensor<[4,16],f32>, !torch.int -> !torch.vtensor<[4,16],bf16>
    %int1_19 = torch.constant.int 1
    %int0_20 = torch.constant.int 0
    %14 = torch.prim.ListConstruct %int1_19, %int0_20 : (!torch.int, !torch.int) -> !torch.list<int>
    %15 = torch.aten.permute %arg2, %14 : !torch.vtensor<[32,16],bf16>, !torch.list<int> -> !torch.vtensor<[16,32],bf16>
    %16 = torch.aten.mm %13, %15 : !torch.vtensor<[4,16],bf16>, !torch.vtensor<[16,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %int6_21 = torch.constant.int 6
    %17 = torch.prims.convert_element_type %16, %int6_21 : !torch.vtensor<[4,32],bf16>, !torch.int -> !torch.vtensor<[4,32],f32>
    %18 = torch.aten.sigmoid %17 : !torch.vtensor<[4,32],f32> -> !torch.vtensor<[4,32],f32>
    %19 = torch.aten.mul.Tensor %17, %18 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[4,32],f32> -> !torch.vtensor<[4,32],f32>
    %int15_22 = torch.constant.int 15
    %20 = torch.prims.convert_element_type %19, %int15_22 : !torch.vtensor<[4,32],f32>, !torch.int -> !torch.vtensor<[4,32],bf16>
    %int1_23 = torch.constant.int 1
    %int0_24 = torch.constant.int 0
    %21 = torch.prim.ListConstruct %int1_23, %int0_24 : (!torch.int, !torch.int) -> !torch.list<int>
    %22 = torch.aten.permute %arg3, %21 : !torch.vtensor<[32,16],bf16>, !torch.list<int> -> !torch.vtensor<[16,32],bf16>
    %23 = torch.aten.mm %13, %22 : !torch.vtensor<[4,16],bf16>, !torch.vtensor<[16,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %24 = torch.aten.mul.Tensor %20, %23 : !torch.vtensor<[4,32],bf16>, !torch.vtensor<[4,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %int1_25 = torch.constant.int 1
    %int0_26 = torch.constant.int 0
    %25 = torch.prim.ListConstruct %int1_25, %int0_26 : (!torch.int, !torch.int) -> !torch.list<int>
    %26 = torch.aten.permute %arg4, %25 : !torch.vtensor<[16,32],bf16>, !torch.list<int> -> !torch.vtensor<[32,16],bf16>
    %27 = torch.aten.mm %24, %26 : !torch.vtensor<[4,32],bf16>, !torch.vtensor<[32,16],bf16> -> !torch.vtensor<[4,16],bf16>
    return %27 : !torch.vtensor<[4,16],bf16>
  }
}

