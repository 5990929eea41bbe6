// python.float32.raw: test/Integration/hf/export_hf_forms.py (transformers 5.24.0, torch 2.14.1+cu130)
module {
  func.func @python(%arg0: !torch.vtensor<[4,16],f32>, %arg1: !torch.vtensor<[16],f32>, %arg2: !torch.vtensor<[16],f32>, %arg3: !torch.vtensor<[32,16],f32>, %arg4: !torch.vtensor<[32],f32>, %arg5: !torch.vtensor<[16,32],f32>, %arg6: !torch.vtensor<[16],f32>) -> !torch.vtensor<[4,16],f32> {
    %int1 = torch.constant.int 1
    %0 = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
    %int0 = torch.constant.int 0
    %true = torch.constant.bool true
    %result0, %result1 = torch.aten.var_mean.correction %arg0, %0, %int0, %true : !torch.vtensor<[4,16],f32>, !torch.list<int>, !torch.int, !torch.bool -> !torch.vtensor<[4,1],f32>, !torch.vtensor<[4,1],f32>
    %float1.000000e-05 = torch.constant.float 1.000000e-05
    %int1_0 = torch.constant.int 1
    %1 = torch.aten.add.Scalar %result0, %float1.000000e-05, %int1_0 : !torch.vtensor<[4,1],f32>, !torch.float, !torch.int -> !torch.vtensor<[4,1],f32>
    %2 = torch.aten.rsqrt %1 : !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,1],f32>
    %int1_1 = torch.constant.int 1
    %3 = torch.aten.sub.Tensor %arg0, %result1, %int1_1 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[4,1],f32>, !torch.int -> !torch.vtensor<[4,16],f32>
    %4 = torch.aten.mul.Tensor %3, %2 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,16],f32>
    %5 = torch.aten.mul.Tensor %4, %arg1 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[16],f32> -> !torch.vtensor<[4,16],f32>
    %int1_2 = torch.constant.int 1
    %6 = torch.aten.add.Tensor %5, %arg2, %int1_2 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[16],f32>, !torch.int -> !torch.vtensor<[4,16],f32>
    %int1_3 = torch.constant.int 1
    %int0_4 = torch.constant.int 0
    %7 = torch.prim.ListConstruct %int1_3, %int0_4 : (!torch.int, !torch.int) -> !torch.list<int>
    %8 = torch.aten.permute %arg3, %7 : !torch.vtensor<[32,16],f32>, !torch.list<int> -> !torch.vtensor<[16,32],f32>
    %9 = torch.aten.mm %6, %8 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[16,32],f32> -> !torch.vtensor<[4,32],f32>
    %int1_5 = torch.constant.int 1
    %10 = torch.aten.mul.Scalar %9, %int1_5 : !torch.vtensor<[4,32],f32>, !torch.int -> !torch.vtensor<[4,32],f32>
    %int1_6 = torch.constant.int 1
    %11 = torch.aten.mul.Scalar %arg4, %int1_6 : !torch.vtensor<[32],f32>, !torch.int -> !torch.vtensor<[32],f32>
    %int1_7 = torch.constant.int 1
    %12 = torch.aten.add.Tensor %10, %11, %int1_7 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[32],f32>, !torch.int -> !torch.vtensor<[4,32],f32>
    %float5.000000e-01 = torch.constant.float 5.000000e-01
    %13 = torch.aten.mul.Scalar %12, %float5.000000e-01 : !torch.vtensor<[4,32],f32>, !torch.float -> !torch.vtensor<[4,32],f32>
    %float1.414210e00 = torch.constant.float 1.4142135623730951
    %14 = torch.aten.div.Scalar %12, %float1.414210e00 : !torch.vtensor<[4,32],f32>, !torch.float -> !torch.vtensor<[4,32],f32>
    %15 = torch.aten.erf %14 : !torch.vtensor<[4,32],f32> -> !torch.vtensor<[4,32],f32>
    %float1.000000e00 = torch.constant.float 1.000000e+00
    %int1_8 = torch.constant.int 1
    %16 = torch.aten.add.Scalar %15, %float1.000000e00, %int1_8 : !torch.vtensor<[4,32],f32>, !torch.float, !torch.int -> !torch.vtensor<[4,32],f32>
    %17 = torch.aten.mul.Tensor %13, %16 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[4,32],f32> -> !torch.vtensor<[4,32],f32>
    %int1_9 = torch.constant.int 1
    %int0_10 = torch.constant.int 0
    %18 = torch.prim.ListConstruct %int1_9, %int0_10 : (!torch.int, !torch.int) -> !torch.list<int>
    %19 = torch.aten.permute %arg5, %18 : !torch.vtensor<[16,32],f32>, !torch.list<int> -> !torch.vtensor<[32,16],f32>
    %20 = torch.aten.mm %17, %19 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[32,16],f32> -> !torch.vtensor<[4,16],f32>
    %int1_11 = torch.constant.int 1
    %21 = torch.aten.mul.Scalar %20, %int1_11 : !torch.vtensor<[4,16],f32>, !torch.int -> !torch.vtensor<[4,16],f32>
    %int1_12 = torch.constant.int 1
    %22 = torch.aten.mul.Scalar %arg6, %int1_12 : !torch.vtensor<[16],f32>, !torch.int -> !torch.vtensor<[16],f32>
    %int1_13 = torch.constant.int 1
    %23 = torch.aten.add.Tensor %21, %22, %int1_13 : !torch.vtensor<[4,16],f32>, !torch.vtensor<[16],f32>, !torch.int -> !torch.vtensor<[4,16],f32>
    return %23 : !torch.vtensor<[4,16],f32>
  }
}

