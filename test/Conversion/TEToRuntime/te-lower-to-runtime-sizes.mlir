// RUN: te-opt %s --te-lower-to-runtime | FileCheck %s
//
// Every entry with dynamic dims checks them on entry, before the recipe's
// alignment and the arena (te_rt_check_range): each dim in [0, 2^40] (zero tokens are valid), and
// per set of dims the largest element count, computed with saturating
// (overflow-flagged) multiplies, in [0, 2^48]. Sizes computed from dims that
// pass cannot overflow int64, as the verifiers bound the static ones.
//
// CHECK-DAG: llvm.mlir.global internal constant @linear3d__size0("linear3d: dim d0\00")
// CHECK-DAG: llvm.mlir.global internal constant @linear3d__size1("linear3d: dim d1\00")
// CHECK-DAG: llvm.mlir.global internal constant @linear3d__size2("linear3d: the element count d0*d1*96\00")
// CHECK-DAG: llvm.func @te_rt_check_range(!llvm.ptr, i64, i64, i64, !llvm.ptr) -> i32
// CHECK-NOT: @static__size

// CHECK-LABEL: llvm.func @te_entry_linear3d(
// CHECK-SAME:  %[[CTX:[^:]+]]: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %[[DIMS:[^:]+]]: !llvm.ptr)
// CHECK:       %[[D0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK:       %[[D1:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK:       %[[LO:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT:  %[[HI:.*]] = llvm.mlir.constant(1099511627776 : i64) : i64
// CHECK-NEXT:  %[[W0:.*]] = llvm.mlir.addressof @linear3d__size0 : !llvm.ptr
// CHECK-NEXT:  %[[S0:.*]] = llvm.call @te_rt_check_range(%[[CTX]], %[[D0]], %[[LO]], %[[HI]], %[[W0]])
// CHECK:       llvm.cond_br %{{.*}}, ^[[RET:bb[0-9]+]](%[[S0]] : i32), ^bb1
// CHECK:       llvm.call @te_rt_check_range(%[[CTX]], %[[D1]],
// CHECK:       llvm.cond_br %{{.*}}, ^[[RET]](%{{.*}} : i32), ^bb2
// The largest element count of {d0, d1}: 96*d0*d1 (the result), not 64*d0*d1.
// CHECK:       %[[MAX:.*]] = llvm.mlir.constant(9223372036854775807 : i64) : i64
// CHECK-NEXT:  %[[K:.*]] = llvm.mlir.constant(96 : i64) : i64
// CHECK-NEXT:  %[[M0:.*]] = "llvm.intr.umul.with.overflow"(%[[K]], %[[D0]])
// CHECK-NEXT:  %[[P0:.*]] = llvm.extractvalue %[[M0]][0]
// CHECK-NEXT:  %[[O0:.*]] = llvm.extractvalue %[[M0]][1]
// CHECK-NEXT:  %[[Z:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT:  %[[N0:.*]] = llvm.icmp "slt" %[[P0]], %[[Z]] : i64
// CHECK-NEXT:  %[[B0:.*]] = llvm.or %[[O0]], %[[N0]] : i1
// CHECK-NEXT:  %[[A0:.*]] = llvm.select %[[B0]], %[[MAX]], %[[P0]] : i1, i64
// CHECK-NEXT:  %[[M1:.*]] = "llvm.intr.umul.with.overflow"(%[[A0]], %[[D1]])
// CHECK:       %[[A1:.*]] = llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, i64
// CHECK:       %[[EHI:.*]] = llvm.mlir.constant(281474976710656 : i64) : i64
// CHECK-NEXT:  %[[W2:.*]] = llvm.mlir.addressof @linear3d__size2 : !llvm.ptr
// CHECK-NEXT:  llvm.call @te_rt_check_range(%[[CTX]], %[[A1]], %{{.*}}, %[[EHI]], %[[W2]])
// CHECK-NOT:   te_rt_check_range
// CHECK:       llvm.call @te_rt_arena_acquire(
// CHECK:       ^[[RET]](%[[ST:.*]]: i32):  // 3 preds: ^bb0, ^bb1, ^bb2
// CHECK-NEXT:  llvm.return %[[ST]] : i32
// te_arena_bytes_<fn>(dims): the same bounds as a flag, then the arena the
// entry acquires (here 0: the GEMM writes the result in place), or -1.
// CHECK-LABEL: llvm.func @te_arena_bytes_linear3d(
// CHECK-SAME:  %[[ADIMS:[^:]+]]: !llvm.ptr) -> i64
// CHECK:       %[[AD0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK:       %[[AD1:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK:       llvm.icmp "ule" %[[AD0]], %{{.*}} : i64
// CHECK:       llvm.icmp "ule" %[[AD1]], %{{.*}} : i64
// CHECK:       "llvm.intr.umul.with.overflow"
// CHECK:       %[[EOK:.*]] = llvm.icmp "ule" %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:  %[[OK:.*]] = llvm.and %{{.*}}, %[[EOK]] : i1
// CHECK-NEXT:  %[[TOTAL:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT:  %[[NEG:.*]] = llvm.mlir.constant(-1 : i64) : i64
// CHECK-NEXT:  %[[R:.*]] = llvm.select %[[OK]], %[[TOTAL]], %[[NEG]] : i1, i64
// CHECK-NEXT:  llvm.return %[[R]] : i64
func.func @linear3d(%x: tensor<?x?x64xf32>, %w: tensor<96x64xf32>) -> tensor<?x?x96xf32> {
  %y = te.gemm tn %x, %w : (tensor<?x?x64xf32>, tensor<96x64xf32>) -> tensor<?x?x96xf32>
  return %y : tensor<?x?x96xf32>
}

// Static entries check nothing.
// CHECK-LABEL: llvm.func @te_entry_static(
// CHECK-NOT:   te_rt_check_range
// CHECK:       llvm.return
func.func @static(%x: tensor<4x64xf32>, %w: tensor<96x64xf32>) -> tensor<4x96xf32> {
  %y = te.gemm tn %x, %w : (tensor<4x64xf32>, tensor<96x64xf32>) -> tensor<4x96xf32>
  return %y : tensor<4x96xf32>
}
