// RUN: te-opt %s --te-lower-to-runtime | FileCheck %s
//
// te.gemm_act / te.gemm_dact (te-fuse-gemm-epilogues act-epilogues) lower
// to te_rt_gemm_fprop_act / te_rt_gemm_dgrad_dact with the operands of
// te_rt_gemm_fprop / te_rt_gemm_dgrad after (act, dtype): act 0 = gelu
// (TE_RT_ACT_GELU), m the product of the leading dims (dynamic: the dim's
// value), n and k from the weight [N, K]; aux (the pre-activation) is null
// without a `pre` result.

// Training forward, dynamic tokens: y and pre computed in place into the
// results 0 and 1.
// CHECK-LABEL: llvm.func @te_entry_fwd(
// CHECK-SAME:  %[[CTX:[^:]+]]: !llvm.ptr, %[[ARGS:[^:]+]]: !llvm.ptr, %[[RES:[^:]+]]: !llvm.ptr, %[[DIMS:[^:]+]]: !llvm.ptr)
// CHECK:       %[[D0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK:       %[[X:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:       %[[W:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:       %[[B:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK-DAG:   %[[PP:.*]] = llvm.getelementptr %[[RES]][1]
// CHECK-DAG:   %[[PRE:.*]] = llvm.load %[[PP]]
// CHECK-DAG:   %[[YP:.*]] = llvm.getelementptr %[[RES]][0]
// CHECK-DAG:   %[[Y:.*]] = llvm.load %[[YP]]
// CHECK:       llvm.call @te_rt_arena_acquire(
// CHECK:       %[[GELU:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:  %[[BF16:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:  %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT:  %[[M:.*]] = llvm.mul %[[ONE]], %[[D0]] : i64
// CHECK-NEXT:  %[[N:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-NEXT:  %[[K:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK-NEXT:  %[[S:.*]] = llvm.call @te_rt_gemm_fprop_act(%[[CTX]], %[[GELU]], %[[BF16]], %[[X]], %[[W]], %[[B]], %[[Y]], %[[PRE]], %[[M]], %[[N]], %[[K]]) : (!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> i32
// CHECK-NEXT:  llvm.mlir.constant(0 : i32)
// CHECK-NEXT:  %[[F:.*]] = llvm.icmp "ne" %[[S]]
// CHECK-NEXT:  llvm.cond_br %[[F]], ^[[FAIL:.*]](%[[S]] : i32)
func.func @fwd(%x: tensor<?x64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>) -> (tensor<?x128xbf16>, tensor<?x128xbf16>) {
  %y, %pre = te.gemm_act gelu %x, %w1 bias(%b1) : (tensor<?x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> (tensor<?x128xbf16>, tensor<?x128xbf16>)
  return %y, %pre : tensor<?x128xbf16>, tensor<?x128xbf16>
}

// Inference, f32, [2, 8, K] input (m = 16): no bias, no pre (null aux);
// the activation lives in the arena (one slot) and feeds FC2.
// CHECK-LABEL: llvm.func @te_entry_infer(
// CHECK-SAME:  %[[CTX:[^:]+]]: !llvm.ptr,
// CHECK:       %[[ARENA:.*]] = llvm.call @te_rt_arena_acquire(
// CHECK:       %[[H:.*]] = llvm.getelementptr %[[ARENA]][
// CHECK:       %[[GELU:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:  %[[F32:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:  %[[NOBIAS:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT:  %[[NOAUX:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:       llvm.mlir.constant(8 : i64) : i64
// CHECK-NEXT:  %[[M:.*]] = llvm.mul %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:  %[[N:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-NEXT:  %[[K:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK-NEXT:  llvm.call @te_rt_gemm_fprop_act(%[[CTX]], %[[GELU]], %[[F32]], %{{.*}}, %{{.*}}, %[[NOBIAS]], %[[H]], %[[NOAUX]], %[[M]], %[[N]], %[[K]])
// CHECK:       llvm.call @te_rt_gemm_fprop(%[[CTX]], %{{.*}}, %[[H]],
func.func @infer(%x: tensor<2x8x64xf32>, %w1: tensor<128x64xf32>, %w2: tensor<64x128xf32>) -> tensor<2x8x64xf32> {
  %h = te.gemm_act gelu %x, %w1 : (tensor<2x8x64xf32>, tensor<128x64xf32>) -> tensor<2x8x128xf32>
  %y = te.gemm tn %h, %w2 : (tensor<2x8x128xf32>, tensor<64x128xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// Backward: dx = (dy . w) * gelu'(pre), dynamic tokens shared by dy and pre
// (one dim symbol).
// CHECK-LABEL: llvm.func @te_entry_bwd(
// CHECK-SAME:  %[[CTX:[^:]+]]: !llvm.ptr, %[[ARGS:[^:]+]]: !llvm.ptr, %[[RES:[^:]+]]: !llvm.ptr, %[[DIMS:[^:]+]]: !llvm.ptr)
// CHECK:       %[[D0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK:       %[[DYP:.*]] = llvm.getelementptr %[[ARGS]][0]
// CHECK-NEXT:  %[[DY:.*]] = llvm.load %[[DYP]]
// CHECK-NEXT:  %[[WP:.*]] = llvm.getelementptr %[[ARGS]][1]
// CHECK-NEXT:  %[[W:.*]] = llvm.load %[[WP]]
// CHECK-NEXT:  %[[PP:.*]] = llvm.getelementptr %[[ARGS]][2]
// CHECK-NEXT:  %[[PRE:.*]] = llvm.load %[[PP]]
// CHECK-NEXT:  %[[DXP:.*]] = llvm.getelementptr %[[RES]][0]
// CHECK-NEXT:  %[[DX:.*]] = llvm.load %[[DXP]]
// CHECK:       llvm.call @te_rt_arena_acquire(
// CHECK:       %[[GELU:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:  %[[BF16:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:  %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT:  %[[M:.*]] = llvm.mul %[[ONE]], %[[D0]] : i64
// CHECK-NEXT:  %[[N:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK-NEXT:  %[[K:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-NEXT:  llvm.call @te_rt_gemm_dgrad_dact(%[[CTX]], %[[GELU]], %[[BF16]], %[[DY]], %[[W]], %[[PRE]], %[[DX]], %[[M]], %[[N]], %[[K]]) : (!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> i32
func.func @bwd(%dy: tensor<?x64xbf16>, %w2: tensor<64x128xbf16>, %pre: tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  %dx = te.gemm_dact gelu %dy, %w2 pre(%pre) : (tensor<?x64xbf16>, tensor<64x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  return %dx : tensor<?x128xbf16>
}

// The module info: the inference entry's one arena slot (the activation,
// 2*8*128 f32), the backward's one dim symbol.
// CHECK:       \22arena_bytes\22:8192,\22arena_slots\22:1,
// CHECK-SAME:  \22name\22:\22infer\22
// CHECK-SAME:  \22dims\22:[{\22arg\22:0,\22dim\22:0}]
// CHECK-SAME:  \22name\22:\22bwd\22
