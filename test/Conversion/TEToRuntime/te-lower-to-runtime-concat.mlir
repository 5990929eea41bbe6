// RUN: te-opt %s --split-input-file --te-lower-to-runtime | FileCheck %s
//
// tensor.concat by destination passing (the memory plan's placed parts): a
// part an op produces only for one static dim-0 concat is written by its
// producer straight into the concat's buffer, at its byte offset, and the
// concat copies nothing for it; zero constants become one te_rt_zero per
// run of adjacent zero parts, into the slices, or, with two runs or more
// and a placed part, one te_rt_zero of the whole buffer before the first
// placed part is written (the constant itself has no buffer and no
// memset); the other parts (arguments, values two concats or
// a return read) are copied with te_rt_copy. An amax vector of delayed
// scaling (1-D f32, at most 64 slots, only te.amax_update reads it) zeroes
// nothing at all: its update is te_rt_amax_update_unused, whose mask marks
// the slots of the zero parts (no op records their amax) and which takes
// their amax as 0 without reading it, so the step's CUDA graph has no
// memset node for them.

// The amax vector of delayed scaling: [a, 0, 0, b]. a writes the concat's
// buffer at offset 0, b at byte 12; slots 1 and 2 (bytes [4, 12)) are
// never written: the update reads the buffer with mask 0b0110 = 6 and
// takes those slots' amax as 0. One 256-byte slot: the concat's (a and b
// have none of their own).
// CHECK-LABEL: llvm.func @te_entry_placed(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr
// CHECK:      %[[ARENA:.*]] = llvm.call @te_rt_arena_acquire(
// CHECK:      %[[BUF:.*]] = llvm.getelementptr %[[ARENA]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NOT:  llvm.call @te_rt_
// CHECK:      llvm.call @te_rt_add(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %[[BUF]], %{{.*}})
// CHECK-NOT:  llvm.call @te_rt_
// CHECK:      %[[C12:.*]] = llvm.mlir.constant(12 : i64) : i64
// CHECK-NEXT: %[[B:.*]] = llvm.getelementptr %[[BUF]][%[[C12]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:      llvm.call @te_rt_add(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %[[B]], %{{.*}})
// CHECK-NOT:  llvm.call @te_rt_
// CHECK:      llvm.mlir.constant(4.480000e+02 : f32) : f32
// CHECK-NEXT: llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[MASK:.*]] = llvm.mlir.constant(6 : i64) : i64
// CHECK-NEXT: llvm.call @te_rt_amax_update_unused(%[[CTX]], %{{.*}}, %{{.*}}, %[[BUF]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MASK]], %{{.*}}, %{{.*}})
// CHECK-NOT:  llvm.call @te_rt_
// CHECK:      llvm.call @te_rt_arena_release(
// CHECK:      @te_module_info.json(
// CHECK-SAME: \22arena_bytes\22:256,\22arena_slots\22:1,
func.func @placed(%x: tensor<1xf32>, %y: tensor<1xf32>, %h: tensor<1024x4xf32>, %s: tensor<4xf32>) -> (tensor<1024x4xf32>, tensor<4xf32>) {
  %a = arith.addf %x, %y : tensor<1xf32>
  %b = arith.addf %y, %y : tensor<1xf32>
  %z = arith.constant dense<0.000000e+00> : tensor<1xf32>
  %c = tensor.concat dim(0) %a, %z, %z, %b : (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4xf32>
  %nh, %ns = te.amax_update %h, %s, %c recipe(#te.fp8_delayed<>) : tensor<1024x4xf32>, tensor<4xf32>
  return %nh, %ns : tensor<1024x4xf32>, tensor<4xf32>
}

// -----

// No memset at all: LayerNormMLP's amax vector under delayed scaling,
// [a, 0, b, 0] (the output quantizers' slots unused), has two runs of zero
// parts, which another concat would zero with one te_rt_zero of its whole
// buffer before a is written; only the amax update reads this one, so it
// zeroes nothing and the update's mask, 0b1010 = 10, marks slots 1 and 3.
// CHECK-LABEL: llvm.func @te_entry_two_zero_runs(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr
// CHECK:      %[[ARENA:.*]] = llvm.call @te_rt_arena_acquire(
// CHECK:      %[[BUF:.*]] = llvm.getelementptr %[[ARENA]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NOT:  llvm.call @te_rt_
// CHECK:      llvm.call @te_rt_add(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %[[BUF]], %{{.*}})
// CHECK-NOT:  llvm.call @te_rt_
// CHECK:      llvm.call @te_rt_add(
// CHECK-NOT:  llvm.call @te_rt_
// CHECK:      llvm.mlir.constant(4.480000e+02 : f32) : f32
// CHECK-NEXT: llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[MASK:.*]] = llvm.mlir.constant(10 : i64) : i64
// CHECK-NEXT: llvm.call @te_rt_amax_update_unused(%[[CTX]], %{{.*}}, %{{.*}}, %[[BUF]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MASK]], %{{.*}}, %{{.*}})
// CHECK-NOT:  llvm.call @te_rt_
// CHECK:      llvm.call @te_rt_arena_release(
func.func @two_zero_runs(%x: tensor<1xf32>, %y: tensor<1xf32>, %h: tensor<1024x4xf32>, %s: tensor<4xf32>) -> (tensor<1024x4xf32>, tensor<4xf32>) {
  %a = arith.addf %x, %y : tensor<1xf32>
  %b = arith.addf %y, %y : tensor<1xf32>
  %z = arith.constant dense<0.000000e+00> : tensor<1xf32>
  %c = tensor.concat dim(0) %a, %z, %b, %z : (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4xf32>
  %nh, %ns = te.amax_update %h, %s, %c recipe(#te.fp8_delayed<>) : tensor<1024x4xf32>, tensor<4xf32>
  return %nh, %ns : tensor<1024x4xf32>, tensor<4xf32>
}

// -----

// A returned concat is computed in place in the caller's result buffer:
// its parts too, at their offsets (256 bytes each). No arena at all.
// CHECK-LABEL: llvm.func @te_entry_in_place(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %[[RESULTS:[^:]*]]: !llvm.ptr
// CHECK:      %[[R:.*]] = llvm.getelementptr %[[RESULTS]][0]
// CHECK-NEXT: %[[OUT:.*]] = llvm.load %[[R]] : !llvm.ptr -> !llvm.ptr
// CHECK-NOT:  llvm.call @te_rt_copy
// CHECK:      llvm.call @te_rt_add(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %[[OUT]], %{{.*}})
// CHECK:      %[[C256:.*]] = llvm.mlir.constant(256 : i64) : i64
// CHECK-NEXT: %[[B:.*]] = llvm.getelementptr %[[OUT]][%[[C256]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:      llvm.call @te_rt_add(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %[[B]], %{{.*}})
// CHECK-NOT:  llvm.call @te_rt_copy
// CHECK:      llvm.call @te_rt_arena_release(
// CHECK:      @te_module_info.json(
// CHECK-SAME: \22arena_bytes\22:0,\22arena_slots\22:0,
func.func @in_place(%x: tensor<16x4xf32>, %y: tensor<16x4xf32>) -> tensor<32x4xf32> {
  %a = arith.addf %x, %y : tensor<16x4xf32>
  %b = arith.addf %x, %x : tensor<16x4xf32>
  %c = tensor.concat dim(0) %a, %b : (tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<32x4xf32>
  return %c : tensor<32x4xf32>
}

// -----

// Parts that stay copies: an argument (x); a value two concats read (a,
// copied into both); a value one concat reads twice (d); a returned value
// (b, computed in place in result 3); a part of several elements at an
// offset that is not a multiple of 256 (e, at byte 128: kernels may assume
// aligned buffers), while f at offset 0 is placed. The zero constant has no
// buffer: c2's concat zeroes its slice.
// CHECK-LABEL: llvm.func @te_entry_not_placed(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr
// CHECK-NOT:  llvm.call @te_rt_zero
// CHECK:      llvm.call @te_rt_add(
// CHECK:      llvm.call @te_rt_add(
// CHECK:      llvm.call @te_rt_add(
// CHECK-NOT:  llvm.call @te_rt_zero
// c1 = [x, a, b]: three copies, at bytes 0, 4 and 8.
// CHECK:      %[[O0:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT: %[[D0:.*]] = llvm.getelementptr %[[C1:[0-9a-z_]+]][%[[O0]]]
// CHECK-NEXT: %{{.*}} = llvm.mlir.constant(4 : i64) : i64
// CHECK-NEXT: llvm.call @te_rt_copy(%[[CTX]], %[[D0]],
// CHECK:      %[[O4:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-NEXT: %[[D4:.*]] = llvm.getelementptr %[[C1]][%[[O4]]]
// CHECK-NEXT: %{{.*}} = llvm.mlir.constant(4 : i64) : i64
// CHECK-NEXT: llvm.call @te_rt_copy(%[[CTX]], %[[D4]],
// CHECK:      %[[O8:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-NEXT: %[[D8:.*]] = llvm.getelementptr %[[C1]][%[[O8]]]
// CHECK-NEXT: %{{.*}} = llvm.mlir.constant(4 : i64) : i64
// CHECK-NEXT: llvm.call @te_rt_copy(%[[CTX]], %[[D8]],
// c2 = [a, 0]: a copied, the zero part memset.
// CHECK:      llvm.call @te_rt_copy(
// CHECK-NOT:  llvm.call @te_rt_copy
// CHECK:      llvm.call @te_rt_zero(
// c3 = [d, d]: two copies.
// CHECK:      llvm.call @te_rt_copy(
// CHECK:      llvm.call @te_rt_copy(
// CHECK-NOT:  llvm.call @te_rt_copy
// c4 = [f, e]: f's add writes c4 itself; e copied at byte 128.
// CHECK:      llvm.call @te_rt_add(
// CHECK:      llvm.call @te_rt_add(
// CHECK:      %[[C128:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-NEXT: llvm.getelementptr %{{.*}}[%[[C128]]]
// CHECK:      llvm.call @te_rt_copy(
// CHECK-NOT:  llvm.call @te_rt_copy
// CHECK-NOT:  llvm.call @te_rt_zero
// CHECK:      llvm.call @te_rt_arena_release(
func.func @not_placed(%x: tensor<1xf32>, %y: tensor<1xf32>, %m: tensor<8x4xf32>) -> (tensor<3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<16x4xf32>) {
  %a = arith.addf %x, %y : tensor<1xf32>
  %b = arith.addf %y, %y : tensor<1xf32>
  %d = arith.addf %x, %x : tensor<1xf32>
  %z = arith.constant dense<0.000000e+00> : tensor<1xf32>
  %c1 = tensor.concat dim(0) %x, %a, %b : (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<3xf32>
  %c2 = tensor.concat dim(0) %a, %z : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
  %c3 = tensor.concat dim(0) %d, %d : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
  %f = arith.addf %m, %m : tensor<8x4xf32>
  %e = arith.addf %m, %f : tensor<8x4xf32>
  %c4 = tensor.concat dim(0) %f, %e : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  return %c1, %c2, %c3, %b, %c4 : tensor<3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<16x4xf32>
}

// -----

// A dynamic-shaped function with a static concat (a delayed-scaling
// quantize of a dynamic token count): the quantize's amax goes straight
// into the concat's slot, the unused slot is not written (mask 0b10 = 2).
// CHECK-LABEL: llvm.func @te_entry_dynamic(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr
// CHECK:      %[[ARENA:.*]] = llvm.call @te_rt_arena_acquire(
// CHECK:      %[[BUF:.*]] = llvm.getelementptr %[[ARENA]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NOT:  llvm.call @te_rt_zero
// CHECK:      llvm.call @te_rt_quantize_fp8({{.*}}, %[[BUF]], %{{.*}})
// CHECK-NOT:  llvm.call @te_rt_
// CHECK:      llvm.mlir.constant(4.480000e+02 : f32) : f32
// CHECK-NEXT: llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[MASK:.*]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: llvm.call @te_rt_amax_update_unused(%[[CTX]], %{{.*}}, %{{.*}}, %[[BUF]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MASK]], %{{.*}}, %{{.*}})
// CHECK-NOT:  llvm.call @te_rt_copy
// CHECK-NOT:  llvm.call @te_rt_zero
// CHECK:      llvm.call @te_rt_arena_release(
func.func @dynamic(%x: tensor<?x64xbf16>, %h: tensor<1024x2xf32>, %s: tensor<2xf32>) -> (!te.qtensor<?x64xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1024x2xf32>, tensor<2xf32>) {
  %q, %amax = te.quantize %x scale(%s[0]) : tensor<?x64xbf16>, tensor<2xf32> -> !te.qtensor<?x64xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %z = arith.constant dense<0.000000e+00> : tensor<1xf32>
  %c = tensor.concat dim(0) %amax, %z : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
  %nh, %ns = te.amax_update %h, %s, %c recipe(#te.fp8_delayed<>) : tensor<1024x2xf32>, tensor<2xf32>
  return %q, %nh, %ns : !te.qtensor<?x64xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1024x2xf32>, tensor<2xf32>
}

// -----

// An amax vector something else reads too (here it is also returned, so
// its bytes must hold the zeros): the zero parts are memset as in any
// other concat (two runs and placed parts: one te_rt_zero of the whole
// buffer, the caller's result buffer, before a is written), and the update
// is the plain te_rt_amax_update.
// CHECK-LABEL: llvm.func @te_entry_also_returned(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %[[RESULTS:[^:]*]]: !llvm.ptr
// CHECK:      %[[R:.*]] = llvm.getelementptr %[[RESULTS]][2]
// CHECK-NEXT: %[[OUT:.*]] = llvm.load %[[R]] : !llvm.ptr -> !llvm.ptr
// CHECK-NOT:  llvm.call @te_rt_amax_update_unused
// CHECK:      llvm.call @te_rt_zero(%[[CTX]], %[[OUT]], %{{.*}})
// CHECK-NOT:  llvm.call @te_rt_zero
// CHECK:      llvm.call @te_rt_add(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %[[OUT]], %{{.*}})
// CHECK:      llvm.call @te_rt_add(
// CHECK-NOT:  llvm.call @te_rt_zero
// CHECK:      llvm.call @te_rt_amax_update(%[[CTX]], %{{.*}}, %{{.*}}, %[[OUT]],
// CHECK-NOT:  llvm.call @te_rt_amax_update_unused
// CHECK:      llvm.call @te_rt_arena_release(
func.func @also_returned(%x: tensor<1xf32>, %y: tensor<1xf32>, %h: tensor<1024x4xf32>, %s: tensor<4xf32>) -> (tensor<1024x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = arith.addf %x, %y : tensor<1xf32>
  %b = arith.addf %y, %y : tensor<1xf32>
  %z = arith.constant dense<0.000000e+00> : tensor<1xf32>
  %c = tensor.concat dim(0) %a, %z, %b, %z : (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4xf32>
  %nh, %ns = te.amax_update %h, %s, %c recipe(#te.fp8_delayed<>) : tensor<1024x4xf32>, tensor<4xf32>
  return %nh, %ns, %c : tensor<1024x4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// 64 slots, the most a mask holds: [a, 0 x 63] marks slots 1 to 63, the
// last in the mask's sign bit (0xFFFFFFFFFFFFFFFE = -2); nothing zeroed.
// CHECK-LABEL: llvm.func @te_entry_slots_64(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr
// CHECK-NOT:  llvm.call @te_rt_zero
// CHECK:      llvm.call @te_rt_add(
// CHECK-NOT:  llvm.call @te_rt_
// CHECK:      llvm.mlir.constant(4.480000e+02 : f32) : f32
// CHECK-NEXT: llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[MASK:.*]] = llvm.mlir.constant(-2 : i64) : i64
// CHECK-NEXT: llvm.call @te_rt_amax_update_unused(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MASK]], %{{.*}}, %{{.*}})
// CHECK-NOT:  llvm.call @te_rt_zero
// CHECK:      llvm.call @te_rt_arena_release(
func.func @slots_64(%x: tensor<1xf32>, %y: tensor<1xf32>, %h: tensor<16x64xf32>, %s: tensor<64xf32>) -> (tensor<16x64xf32>, tensor<64xf32>) {
  %a = arith.addf %x, %y : tensor<1xf32>
  %z = arith.constant dense<0.000000e+00> : tensor<63xf32>
  %c = tensor.concat dim(0) %a, %z : (tensor<1xf32>, tensor<63xf32>) -> tensor<64xf32>
  %nh, %ns = te.amax_update %h, %s, %c recipe(#te.fp8_delayed<amax_history_len = 16>) : tensor<16x64xf32>, tensor<64xf32>
  return %nh, %ns : tensor<16x64xf32>, tensor<64xf32>
}

// -----

// 65 slots are more than a mask holds: the zero run is memset into its
// slice (bytes [4, 260)) as in any concat, and the update is the plain
// te_rt_amax_update.
// CHECK-LABEL: llvm.func @te_entry_slots_65(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr
// CHECK:      llvm.call @te_rt_add(
// CHECK:      %[[C4:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-NEXT: %[[Z:.*]] = llvm.getelementptr %{{.*}}[%[[C4]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT: %[[N:.*]] = llvm.mlir.constant(256 : i64) : i64
// CHECK-NEXT: llvm.call @te_rt_zero(%[[CTX]], %[[Z]], %[[N]])
// CHECK-NOT:  llvm.call @te_rt_amax_update_unused
// CHECK:      llvm.call @te_rt_amax_update(%[[CTX]],
// CHECK-NOT:  llvm.call @te_rt_amax_update_unused
// CHECK:      llvm.call @te_rt_arena_release(
func.func @slots_65(%x: tensor<1xf32>, %y: tensor<1xf32>, %h: tensor<16x65xf32>, %s: tensor<65xf32>) -> (tensor<16x65xf32>, tensor<65xf32>) {
  %a = arith.addf %x, %y : tensor<1xf32>
  %z = arith.constant dense<0.000000e+00> : tensor<64xf32>
  %c = tensor.concat dim(0) %a, %z : (tensor<1xf32>, tensor<64xf32>) -> tensor<65xf32>
  %nh, %ns = te.amax_update %h, %s, %c recipe(#te.fp8_delayed<amax_history_len = 16>) : tensor<16x65xf32>, tensor<65xf32>
  return %nh, %ns : tensor<16x65xf32>, tensor<65xf32>
}
