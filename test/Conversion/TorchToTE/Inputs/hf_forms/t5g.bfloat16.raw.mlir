// t5g.bfloat16.raw: test/Integration/hf/export_hf_forms.py (transformers 5.24.0, torch 2.14.1+cu130)
module {
  func.func @t5g(%arg0: !torch.vtensor<[4,16],bf16>, %arg1: !torch.vtensor<[16],bf16>, %arg2: !torch.vtensor<[32,16],bf16>, %arg3: !torch.vtensor<[32,16],bf16>, %arg4: !torch.vtensor<[16,32],bf16>) -> !torch.vtensor<[4,16],bf16> {
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
    %6 = torch.aten.mul.Tensor %arg0, %5 : !torch.vtensor<[4,16],bf16>, !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,16],f32>
    %none_2 = torch.constant.none
    %none_3 = torch.constant.none
    %int6_4 = torch.constant.int 6
    %cpu_5 = torch.constant.device "cpu"
    %int0_6 = torch.constant.int 0
    torch.aten._assert_tensor_metadata %6, %none_2, %none_3, %int6_4, %cpu_5, %int0_6 : !torch.vtensor<[4,16],f32>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.int
    %int15_7 = torch.constant.int 15
    %7 = torch.prims.convert_element_type %6, %int15_7 : !torch.vtensor<[4,16],f32>, !torch.int -> !torch.vtensor<[4,16],bf16>
    %8 = torch.aten.mul.Tensor %arg1, %7 : !torch.vtensor<[16],bf16>, !torch.vtensor<[4,16],bf16> -> !torch.vtensor<[4,16],bf16>
    %int1_8 = torch.constant.int 1
    %int0_9 = torch.constant.int 0
    %9 = torch.prim.ListConstruct %int1_8, %int0_9 : (!torch.int, !torch.int) -> !torch.list<int>
    %10 = torch.aten.permute %arg2, %9 : !torch.vtensor<[32,16],bf16>, !torch.list<int> -> !torch.vtensor<[16,32],bf16>
    %11 = torch.aten.mm %8, %10 : !torch.vtensor<[4,16],bf16>, !torch.vtensor<[16,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %float5.000000e-01 = torch.constant.float 5.000000e-01
    %12 = torch.aten.mul.Scalar %11, %float5.000000e-01 : !torch.vtensor<[4,32],bf16>, !torch.float -> !torch.vtensor<[4,32],bf16>
    %float3.000000e00 = torch.constant.float 3.000000e+00
    %13 = torch.aten.pow.Tensor_Scalar %11, %float3.000000e00 : !torch.vtensor<[4,32],bf16>, !torch.float -> !torch.vtensor<[4,32],bf16>
    %float4.471500e-02 = torch.constant.float 4.471500e-02
    %14 = torch.aten.mul.Scalar %13, %float4.471500e-02 : !torch.vtensor<[4,32],bf16>, !torch.float -> !torch.vtensor<[4,32],bf16>
    %int1_10 = torch.constant.int 1
    %15 = torch.aten.add.Tensor %11, %14, %int1_10 : !torch.vtensor<[4,32],bf16>, !torch.vtensor<[4,32],bf16>, !torch.int -> !torch.vtensor<[4,32],bf16>
    %float7.978850e-01 = torch.constant.float 0.79788456080286541
    %16 = torch.aten.mul.Scalar %15, %float7.978850e-01 : !torch.vtensor<[4,32],bf16>, !torch.float -> !torch.vtensor<[4,32],bf16>
    %17 = torch.aten.tanh %16 : !torch.vtensor<[4,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %float1.000000e00 = torch.constant.float 1.000000e+00
    %int1_11 = torch.constant.int 1
    %18 = torch.aten.add.Scalar %17, %float1.000000e00, %int1_11 : !torch.vtensor<[4,32],bf16>, !torch.float, !torch.int -> !torch.vtensor<[4,32],bf16>
    %19 = torch.aten.mul.Tensor %12, %18 : !torch.vtensor<[4,32],bf16>, !torch.vtensor<[4,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %int1_12 = torch.constant.int 1
    %int0_13 = torch.constant.int 0
    %20 = torch.prim.ListConstruct %int1_12, %int0_13 : (!torch.int, !torch.int) -> !torch.list<int>
    %21 = torch.aten.permute %arg3, %20 : !torch.vtensor<[32,16],bf16>, !torch.list<int> -> !torch.vtensor<[16,32],bf16>
    %22 = torch.aten.mm %8, %21 : !torch.vtensor<[4,16],bf16>, !torch.vtensor<[16,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %23 = torch.aten.mul.Tensor %19, %22 : !torch.vtensor<[4,32],bf16>, !torch.vtensor<[4,32],bf16> -> !torch.vtensor<[4,32],bf16>
    %int1_14 = torch.constant.int 1
    %int0_15 = torch.constant.int 0
    %24 = torch.prim.ListConstruct %int1_14, %int0_15 : (!torch.int, !torch.int) -> !torch.list<int>
    %25 = torch.aten.permute %arg4, %24 : !torch.vtensor<[16,32],bf16>, !torch.list<int> -> !torch.vtensor<[32,16],bf16>
    %26 = torch.aten.mm %23, %25 : !torch.vtensor<[4,32],bf16>, !torch.vtensor<[32,16],bf16> -> !torch.vtensor<[4,16],bf16>
    return %26 : !torch.vtensor<[4,16],bf16>
  }
}

