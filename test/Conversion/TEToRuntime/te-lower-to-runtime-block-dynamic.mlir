// RUN: te-opt %s --te-lower-to-runtime --cse --split-input-file | FileCheck %s
//
// te-lower-to-runtime for block-scaled quantized values with dynamic
// leading dims: the padded shapes of the scale tensors are computed at run
// time from the dims (TE's layout rules, getInnerTensorsOf, on i64 values:
// ceildiv as (x + b - 1) / b, roundup as ceildiv * b, exact division as
// udiv), and the module info gives each inner tensor's shape as an
// expression of the entry's dim symbols.

// Float8 block scaling of a [d0, d1, 256] tensor: the rows are d0*d1. 1x128
// blocks (both usages): columnwise data [256, d0, d1], columnwise scales
// [ceildiv(d0*d1, 128), 256] fp32, rowwise data [d0, d1, 256], rowwise
// scales [2, roundup(d0*d1, 4)] fp32, each 256-byte aligned.
// CHECK-LABEL: llvm.func @te_entry_block(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %[[RES:[^:]*]]: !llvm.ptr, %[[DIMS:[^:]*]]: !llvm.ptr) -> i32
// CHECK:      %[[D0P:.*]] = llvm.getelementptr %[[DIMS]][0]
// CHECK-NEXT: %[[D0:.*]] = llvm.load %[[D0P]] : !llvm.ptr -> i64
// CHECK-NEXT: %[[D1P:.*]] = llvm.getelementptr %[[DIMS]][1]
// CHECK-NEXT: %[[D1:.*]] = llvm.load %[[D1P]] : !llvm.ptr -> i64
// CHECK:      %[[OUTP:.*]] = llvm.getelementptr %[[RES]][0]
// CHECK-NEXT: %[[OUT:.*]] = llvm.load %[[OUTP]] : !llvm.ptr -> !llvm.ptr
// The range checks come first: d0, d1, then the largest element count,
// 256*d0*d1, saturating (cse shares its 256 with the layout below).
// CHECK:      llvm.call @te_rt_check_range(%[[CTX]], %[[D0]],
// CHECK:      llvm.call @te_rt_check_range(%[[CTX]], %[[D1]],
// CHECK:      %[[C256:.*]] = llvm.mlir.constant(256 : i64) : i64
// CHECK-NEXT: "llvm.intr.umul.with.overflow"(%[[C256]], %[[D0]])
// CHECK:      llvm.call @te_rt_check_range(%[[CTX]],
// The recipe's alignment (rows % 128) is checked on entry, before the
// arena (cse shares the rows and the 128 with the layout below).
// CHECK:      %[[M:.*]] = llvm.mul %[[D0]], %[[D1]] : i64
// CHECK-NEXT: %[[C128:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-NEXT: %[[W:.*]] = llvm.mlir.addressof @block__check0 : !llvm.ptr
// CHECK-NEXT: llvm.call @te_rt_check_multiple(%[[CTX]], %[[M]], %[[C128]], %[[W]])
// CHECK:      ^bb5:
// The rows, roundup(rows, 4) and ceildiv(rows, 128).
// CHECK-NEXT: %[[C3:.*]] = llvm.mlir.constant(3 : i64) : i64
// CHECK-NEXT: %[[M3:.*]] = llvm.add %[[M]], %[[C3]] : i64
// CHECK-NEXT: %[[C4:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-NEXT: %[[M4:.*]] = llvm.udiv %[[M3]], %[[C4]] : i64
// CHECK-NEXT: %[[RUP:.*]] = llvm.mul %[[M4]], %[[C4]] : i64
// CHECK-NEXT: %[[C127:.*]] = llvm.mlir.constant(127 : i64) : i64
// CHECK-NEXT: %[[M127:.*]] = llvm.add %[[M]], %[[C127]] : i64
// CHECK-NEXT: %[[CDIV:.*]] = llvm.udiv %[[M127]], %[[C128]] : i64
// Columnwise data: 256 * d0 * d1 bytes, aligned: the offset of the
// columnwise scales.
// CHECK-NEXT: %[[CD0:.*]] = llvm.mul %[[C256]], %[[D0]] : i64
// CHECK-NEXT: %[[CD:.*]] = llvm.mul %[[CD0]], %[[D1]] : i64
// CHECK:      %[[CDA:.*]] = llvm.and
// CHECK-NEXT: %[[CSOFF:.*]] = llvm.add %{{.*}}, %[[CDA]] : i64
// Columnwise scales: ceildiv(rows, 128) * 256 fp32.
// CHECK-NEXT: %[[CS:.*]] = llvm.mul %[[CDIV]], %[[C256]] : i64
// CHECK-NEXT: %[[CSB:.*]] = llvm.mul %[[CS]], %[[C4]] : i64
// CHECK:      %[[CSA:.*]] = llvm.and
// CHECK-NEXT: %[[RDOFF:.*]] = llvm.add %[[CSOFF]], %[[CSA]] : i64
// Rowwise data: rows * 256.
// CHECK-NEXT: llvm.mul %[[M]], %[[C256]] : i64
// CHECK:      %[[RDA:.*]] = llvm.and
// CHECK-NEXT: %[[RSOFF:.*]] = llvm.add %[[RDOFF]], %[[RDA]] : i64
// Rowwise scales: 2 * roundup(rows, 4) fp32.
// CHECK-NEXT: %[[C2:.*]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: %[[RS:.*]] = llvm.mul %[[C2]], %[[RUP]] : i64
// CHECK-NEXT: llvm.mul %[[RS]], %[[C4]] : i64
// CHECK-DAG:  %[[RSP:.*]] = llvm.getelementptr %[[OUT]][%[[RSOFF]]]
// CHECK-DAG:  %[[CSP:.*]] = llvm.getelementptr %[[OUT]][%[[CSOFF]]]
// CHECK-DAG:  %[[RDP:.*]] = llvm.getelementptr %[[OUT]][%[[RDOFF]]]
// CHECK-DAG:  %[[CDP:.*]] = llvm.getelementptr %[[OUT]][%{{.*}}]
// CHECK:      llvm.call @te_rt_quantize_fp8_block(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[RDP]], %[[RSP]], %[[CDP]], %[[CSP]])
// 128x128 blocks: rowwise scales [ceildiv(rows, 128), 4], columnwise
// [2, roundup(ceildiv(rows, 128), 4)].
// CHECK:      %[[CD4:.*]] = llvm.add %[[CDIV]], %[[C3]] : i64
// CHECK-NEXT: %[[CD4D:.*]] = llvm.udiv %[[CD4]], %[[C4]] : i64
// CHECK-NEXT: %[[CD4R:.*]] = llvm.mul %[[CD4D]], %[[C4]] : i64
// CHECK-NEXT: llvm.mul %[[C2]], %[[CD4R]] : i64
// CHECK:      llvm.mul %[[CDIV]], %[[C4]] : i64
// CHECK:      llvm.call @te_rt_quantize_fp8_block(
// The module info: inner shapes over d0, d1.
// CHECK:      @te_module_info.json(
// CHECK-SAME: {\22dtype\22:\22float32\22,\22name\22:\22columnwise_scale_inv\22,\22shape\22:[\22ceildiv(d0*d1, 128)\22,256]}
// CHECK-SAME: {\22dtype\22:\22float32\22,\22name\22:\22rowwise_scale_inv\22,\22shape\22:[2,\22roundup(d0*d1, 4)\22]}
// CHECK-SAME: \22type\22:\22!te.qtensor<?x?x256xe4m3, #te.fp8_block<>, both, hopper>\22
// CHECK-SAME: {\22dtype\22:\22float32\22,\22name\22:\22columnwise_scale_inv\22,\22shape\22:[2,\22roundup(ceildiv(d0*d1, 128), 4)\22]}
// CHECK-SAME: {\22dtype\22:\22float32\22,\22name\22:\22rowwise_scale_inv\22,\22shape\22:[\22ceildiv(d0*d1, 128)\22,4]}
// CHECK-SAME: \22type\22:\22!te.qtensor<?x?x256xe4m3, #te.fp8_block<>, both, hopper, block_2d>\22
func.func @block(%x: tensor<?x?x256xbf16>) -> (!te.qtensor<?x?x256xe4m3, #te.fp8_block<>, both, hopper>, !te.qtensor<?x?x256xe4m3, #te.fp8_block<>, both, hopper, block_2d>) {
  %a = te.quantize %x : tensor<?x?x256xbf16> -> !te.qtensor<?x?x256xe4m3, #te.fp8_block<>, both, hopper>
  %b = te.quantize %x : tensor<?x?x256xbf16> -> !te.qtensor<?x?x256xe4m3, #te.fp8_block<>, both, hopper, block_2d>
  return %a, %b : !te.qtensor<?x?x256xe4m3, #te.fp8_block<>, both, hopper>, !te.qtensor<?x?x256xe4m3, #te.fp8_block<>, both, hopper, block_2d>
}

// -----

// MXFP8 (Blackwell, swizzled): rowwise scales [roundup(d0, 128), 8],
// columnwise [roundup(d0/32, 4), 256] (d0 / 32 exact: the entry checks
// on entry that the rows are a multiple of 32).
// CHECK-LABEL: llvm.func @te_entry_mx(
// CHECK:      %[[D0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK:      %[[C32:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK-NEXT: %[[W:.*]] = llvm.mlir.addressof @mx__check0 : !llvm.ptr
// CHECK-NEXT: llvm.call @te_rt_check_multiple(%{{.*}}, %[[D0]], %[[C32]], %[[W]])
// CHECK:      ^bb4:
// CHECK-NEXT: %[[C127:.*]] = llvm.mlir.constant(127 : i64) : i64
// CHECK-NEXT: %[[A:.*]] = llvm.add %[[D0]], %[[C127]] : i64
// CHECK-NEXT: %[[C128:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-NEXT: %[[B:.*]] = llvm.udiv %[[A]], %[[C128]] : i64
// CHECK-NEXT: llvm.mul %[[B]], %[[C128]] : i64
// CHECK-NEXT: llvm.udiv %[[D0]], %[[C32]] : i64
// CHECK:      llvm.call @te_rt_quantize_mxfp8(
// CHECK:      @te_module_info.json(
// CHECK-SAME: {\22dtype\22:\22uint8\22,\22name\22:\22columnwise_scale_inv\22,\22shape\22:[\22roundup(d0/32, 4)\22,256]}
// CHECK-SAME: {\22dtype\22:\22uint8\22,\22name\22:\22rowwise_scale_inv\22,\22shape\22:[\22roundup(d0, 128)\22,8]}
func.func @mx(%x: tensor<?x256xbf16>) -> !te.qtensor<?x256xe4m3, #te.mxfp8, both, blackwell, swizzled> {
  %q = te.quantize %x : tensor<?x256xbf16> -> !te.qtensor<?x256xe4m3, #te.mxfp8, both, blackwell, swizzled>
  return %q : !te.qtensor<?x256xe4m3, #te.mxfp8, both, blackwell, swizzled>
}

// -----

// NVFP4 with the Hadamard transform (Blackwell, swizzled): columnwise data
// [256, d0/2] (packed, transposed), scales [256, roundup(d0/16, 4)], then
// the rowwise copy [d0, 128] with scales [roundup(d0, 128), 16]; each copy's
// amax last in its group.
// CHECK-LABEL: llvm.func @te_entry_nv(
// CHECK:      llvm.call @te_rt_quantize_nvfp4(
// CHECK:      @te_module_info.json(
// CHECK-SAME: \22inner\22:[{\22dtype\22:\22uint8\22,\22name\22:\22columnwise_data\22,\22shape\22:[256,\22d0/2\22]},{\22dtype\22:\22uint8\22,\22name\22:\22columnwise_scale_inv\22,\22shape\22:[256,\22roundup(d0/16, 4)\22]},{\22dtype\22:\22float32\22,\22name\22:\22amax_columnwise\22,\22shape\22:[1]},{\22dtype\22:\22uint8\22,\22name\22:\22rowwise_data\22,\22shape\22:[\22d0\22,128]},{\22dtype\22:\22uint8\22,\22name\22:\22rowwise_scale_inv\22,\22shape\22:[\22roundup(d0, 128)\22,16]},{\22dtype\22:\22float32\22,\22name\22:\22amax_rowwise\22,\22shape\22:[1]}]
func.func @nv(%x: tensor<?x256xbf16>) -> !te.qtensor<?x256xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht> {
  %q = te.quantize %x : tensor<?x256xbf16> -> !te.qtensor<?x256xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>
  return %q : !te.qtensor<?x256xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>
}
