// RUN: te-opt %s --te-generate-backward --te-decompose --te-lower-to-runtime | FileCheck %s
// RUN: te-opt %s --te-generate-backward --te-decompose --te-lower-to-runtime | FileCheck %s --check-prefix=NONE
//
// A quantized recipe's alignment on a dynamic dim (te-describe's
// runtime_checks) is checked when an entry is called, before anything is
// allocated or run: one te_rt_check_multiple per distinct condition per
// entry (inference, forward and backward alike), on the dim's value (a
// product for a flattened [d0, d1, K] input), with the message
// "<entry>: recipe R needs <condition>"; a failed check returns its status.
// Conditions that always hold (d0*8 rows under per-tensor FP8) and static
// or unquantized entries get none.
//
// CHECK-DAG: llvm.mlir.global internal constant @block__check0("block: recipe fp8-block needs d0 % 128 == 0\00")
// CHECK-DAG: llvm.mlir.global internal constant @block_fwd__check0("block_fwd: recipe fp8-block needs d0 % 128 == 0\00")
// CHECK-DAG: llvm.mlir.global internal constant @block_bwd__check0("block_bwd: recipe fp8-block needs d0 % 128 == 0\00")
// CHECK-DAG: llvm.mlir.global internal constant @current3d__check0("current3d: recipe fp8-current needs d0*d1 % 8 == 0\00")
// CHECK-DAG: llvm.mlir.global internal constant @current3d_fwd__check0("current3d_fwd: recipe fp8-current needs d0*d1 % 8 == 0\00")
// CHECK-DAG: llvm.mlir.global internal constant @current3d_bwd__check0("current3d_bwd: recipe fp8-current needs d0*d1 % 8 == 0\00")
// CHECK-DAG: llvm.mlir.global internal constant @coef__check0("coef: recipe fp8-block needs d0*4 % 128 == 0\00")
// CHECK-DAG: llvm.func @te_rt_check_multiple(!llvm.ptr, i64, i64, !llvm.ptr) -> i32
// NONE-NOT: __check1
// NONE-NOT: @{{(aligned|static|bf16)(_fwd|_bwd)?}}__check

// CHECK-LABEL: llvm.func @te_entry_block(
// CHECK-SAME:  %[[CTX:[^:]+]]: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %[[DIMS:[^:]+]]: !llvm.ptr)
// CHECK:       %[[DP:.*]] = llvm.getelementptr %[[DIMS]][0]
// CHECK-NEXT:  %[[D0:.*]] = llvm.load %[[DP]] : !llvm.ptr -> i64
// The range checks of the dims (te-lower-to-runtime-sizes.mlir) come first.
// CHECK-NOT:   llvm.call
// CHECK:       llvm.call @te_rt_check_range(%[[CTX]], %[[D0]],
// CHECK-NOT:   llvm.call
// CHECK:       llvm.call @te_rt_check_range(%[[CTX]],
// CHECK-NOT:   llvm.call
// CHECK:       %[[M:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-NEXT:  %[[W:.*]] = llvm.mlir.addressof @block__check0 : !llvm.ptr
// CHECK-NEXT:  %[[S:.*]] = llvm.call @te_rt_check_multiple(%[[CTX]], %[[D0]], %[[M]], %[[W]]) : (!llvm.ptr, i64, i64, !llvm.ptr) -> i32
// CHECK-NEXT:  llvm.mlir.constant(0 : i32)
// CHECK-NEXT:  %[[F:.*]] = llvm.icmp "ne" %[[S]]
// CHECK-NEXT:  llvm.cond_br %[[F]], ^[[RET:bb[0-9]+]](%[[S]] : i32), ^bb3
// CHECK-NOT:   te_rt_check_multiple
// CHECK:       llvm.call @te_rt_arena_acquire(
// CHECK-NOT:   te_rt_check_multiple
// CHECK:       ^[[RET]](%[[ST:.*]]: i32):  // 3 preds: ^bb0, ^bb1, ^bb2
// CHECK-NEXT:  llvm.return %[[ST]] : i32
// CHECK-LABEL: llvm.func @te_entry_block_fwd(
// CHECK:       llvm.call @te_rt_check_multiple(
// CHECK-NOT:   te_rt_check_multiple
// CHECK:       llvm.call @te_rt_arena_acquire(
// CHECK-LABEL: llvm.func @te_entry_block_bwd(
// CHECK:       llvm.call @te_rt_check_multiple(
// CHECK-NOT:   te_rt_check_multiple
// CHECK:       llvm.call @te_rt_arena_acquire(
func.func @block(%x: tensor<?x128xbf16>, %w: tensor<256x128xbf16>) -> tensor<?x256xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_block<>) : (tensor<?x128xbf16>, tensor<256x128xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}

// Per-tensor FP8 on [d0, d1, 64]: rows d0*d1 must be a multiple of 8.
// CHECK-LABEL: llvm.func @te_entry_current3d(
// CHECK-SAME:  %[[CTX:[^:]+]]: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %[[DIMS:[^:]+]]: !llvm.ptr)
// CHECK:       %[[DP0:.*]] = llvm.getelementptr %[[DIMS]][0]
// CHECK-NEXT:  %[[D0:.*]] = llvm.load %[[DP0]] : !llvm.ptr -> i64
// CHECK-NEXT:  %[[DP1:.*]] = llvm.getelementptr %[[DIMS]][1]
// CHECK-NEXT:  %[[D1:.*]] = llvm.load %[[DP1]] : !llvm.ptr -> i64
// CHECK:       %[[ROWS:.*]] = llvm.mul %[[D0]], %[[D1]] : i64
// CHECK-NEXT:  %[[M:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-NEXT:  %[[W:.*]] = llvm.mlir.addressof @current3d__check0 : !llvm.ptr
// CHECK-NEXT:  llvm.call @te_rt_check_multiple(%[[CTX]], %[[ROWS]], %[[M]], %[[W]])
func.func @current3d(%x: tensor<?x?x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<?x?x32xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_current<>) : (tensor<?x?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x?x32xbf16>
  return %y : tensor<?x?x32xbf16>
}

// fp8-block on [d0, 4, 128]: the value checked is 4*d0.
// CHECK-LABEL: llvm.func @te_entry_coef(
// CHECK:       %[[D0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK:       %[[FOUR:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-NEXT:  %[[ROWS:.*]] = llvm.mul %[[FOUR]], %[[D0]] : i64
// CHECK-NEXT:  %[[M:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-NEXT:  %[[W:.*]] = llvm.mlir.addressof @coef__check0 : !llvm.ptr
// CHECK-NEXT:  llvm.call @te_rt_check_multiple(%{{.*}}, %[[ROWS]], %[[M]], %[[W]])
func.func @coef(%x: tensor<?x4x128xbf16>, %w: tensor<256x128xbf16>) -> tensor<?x4x256xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_block<>) : (tensor<?x4x128xbf16>, tensor<256x128xbf16>) -> tensor<?x4x256xbf16>
  return %y : tensor<?x4x256xbf16>
}

// No check: d0*8 rows are always a multiple of 8; a static shape (checked
// at compile time); an unquantized recipe.
// CHECK-LABEL: llvm.func @te_entry_aligned(
// CHECK-NOT:   llvm.call @te_rt_check_multiple(
// CHECK-LABEL: llvm.func @te_entry_static(
// CHECK-NOT:   llvm.call @te_rt_check_multiple(
// CHECK-LABEL: llvm.func @te_entry_bf16(
// CHECK-NOT:   llvm.call @te_rt_check_multiple(
func.func @aligned(%x: tensor<?x8x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<?x8x32xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_current<>) : (tensor<?x8x64xbf16>, tensor<32x64xbf16>) -> tensor<?x8x32xbf16>
  return %y : tensor<?x8x32xbf16>
}
func.func @static(%x: tensor<256x128xbf16>, %w: tensor<256x128xbf16>) -> tensor<256x256xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_block<>) : (tensor<256x128xbf16>, tensor<256x128xbf16>) -> tensor<256x256xbf16>
  return %y : tensor<256x256xbf16>
}
func.func @bf16(%x: tensor<?x128xbf16>, %w: tensor<256x128xbf16>) -> tensor<?x256xbf16> {
  %y = te.linear %x weight(%w) : (tensor<?x128xbf16>, tensor<256x128xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
