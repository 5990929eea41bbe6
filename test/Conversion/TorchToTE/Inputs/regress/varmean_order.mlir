module {
  func.func @main(%arg0: !torch.vtensor<[2,4,32],f32>, %w: !torch.vtensor<[64,32],f32>) -> !torch.vtensor<[2,4,64],f32> {
    %int6 = torch.constant.int 6
    %float1 = torch.constant.float 1.000000e+00
    %false = torch.constant.bool false
    %int7 = torch.constant.int 7
    %none = torch.constant.none
    %int32 = torch.constant.int 32
    %int1 = torch.constant.int 1
    %eps = torch.constant.float 1.000000e-05
    %true = torch.constant.bool true
    %int2 = torch.constant.int 2
    %4 = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
    %13 = torch.aten.sum.dim_IntList %arg0, %4, %true, %none : !torch.vtensor<[2,4,32],f32>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[2,4,1],f32>
    %14 = torch.aten.div.Scalar %13, %int32 : !torch.vtensor<[2,4,1],f32>, !torch.int -> !torch.vtensor<[2,4,1],f32>
    %17 = torch.aten.sub.Tensor %arg0, %14, %int1 : !torch.vtensor<[2,4,32],f32>, !torch.vtensor<[2,4,1],f32>, !torch.int -> !torch.vtensor<[2,4,32],f32>
    %5 = torch.aten.to.dtype %arg0, %int7, %false, %false, %none : !torch.vtensor<[2,4,32],f32>, !torch.int, !torch.bool, !torch.bool, !torch.none -> !torch.vtensor<[2,4,32],f64>
    %6 = torch.aten.sum.dim_IntList %5, %4, %true, %none : !torch.vtensor<[2,4,32],f64>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[2,4,1],f64>
    %7 = torch.aten.div.Scalar %6, %int32 : !torch.vtensor<[2,4,1],f64>, !torch.int -> !torch.vtensor<[2,4,1],f64>
    %8 = torch.aten.sub.Tensor %5, %7, %float1 : !torch.vtensor<[2,4,32],f64>, !torch.vtensor<[2,4,1],f64>, !torch.float -> !torch.vtensor<[2,4,32],f64>
    %9 = torch.aten.mul.Tensor %8, %8 : !torch.vtensor<[2,4,32],f64>, !torch.vtensor<[2,4,32],f64> -> !torch.vtensor<[2,4,32],f64>
    %10 = torch.aten.sum.dim_IntList %9, %4, %true, %none : !torch.vtensor<[2,4,32],f64>, !torch.list<int>, !torch.bool, !torch.none -> !torch.vtensor<[2,4,1],f64>
    %11 = torch.aten.div.Scalar %10, %int32 : !torch.vtensor<[2,4,1],f64>, !torch.int -> !torch.vtensor<[2,4,1],f64>
    %12 = torch.aten.to.dtype %11, %int6, %false, %false, %none : !torch.vtensor<[2,4,1],f64>, !torch.int, !torch.bool, !torch.bool, !torch.none -> !torch.vtensor<[2,4,1],f32>
    %15 = torch.aten.add.Scalar %12, %eps, %int1 : !torch.vtensor<[2,4,1],f32>, !torch.float, !torch.int -> !torch.vtensor<[2,4,1],f32>
    %16 = torch.aten.rsqrt %15 : !torch.vtensor<[2,4,1],f32> -> !torch.vtensor<[2,4,1],f32>
    %18 = torch.aten.mul.Tensor %17, %16 : !torch.vtensor<[2,4,32],f32>, !torch.vtensor<[2,4,1],f32> -> !torch.vtensor<[2,4,32],f32>
    %y = torch.aten.linear %18, %w, %none : !torch.vtensor<[2,4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[2,4,64],f32>
    return %y : !torch.vtensor<[2,4,64],f32>
  }
}
