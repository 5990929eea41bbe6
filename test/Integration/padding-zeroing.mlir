// Where the module runner zeroes the padding of an entry's quantized
// results (module info `padding_written`, te-run --list's "padding zeroed"
// line): before the entry, beside its work (forked while a CUDA graph is
// captured, off the step's chain), for results whose buffers the entry
// writes no more of than their tensors; after the entry for a result it
// copies out whole or lends an intermediate that reaches past the buffer's
// first part.
//
// RUN: rm -rf %t && split-file %s %t
// RUN: te-compile %t/mlp.mlir --train --recipe fp8-current -o %t/cur.so
// RUN: te-compile %t/mlp.mlir --train --recipe fp8-delayed -o %t/del.so
// RUN: te-compile %t/lin.mlir --train --recipe fp8-current -o %t/lcur.so
// RUN: te-compile %t/lin.mlir --train --recipe fp8-block -o %t/blk.so
// RUN: te-run %t/cur.so --list | FileCheck %s --check-prefix=CUR
// RUN: te-run %t/del.so --list | FileCheck %s --check-prefix=DEL
// RUN: te-run %t/lcur.so --list | FileCheck %s --check-prefix=LCUR
// RUN: te-run %t/blk.so --list | FileCheck %s --check-prefix=BLK
//
// fp8-current: te-compile's plan lends act_out's buffer (result 4) the
// norm's 4-byte amax before act_out is written (te-opt
// --te-test-memory-plan on te-compile's pipeline); it stays in the
// scale_inv at the buffer's start, so that padding too is zeroed beside the
// entry (with every lending result after it, result4 would be).
// CUR-LABEL: mlp_fwd
// CUR: padding zeroed: beside the entry result1, result2, result4, result5; after it none
// DEL-LABEL: mlp_fwd
// DEL: padding zeroed: beside the entry result1, result2, result4, result5; after it none
// The delayed backward's new amax history and scales may be written over
// their state arguments (module info state_in_place).
// DEL-LABEL: mlp_bwd
// DEL: state written in place: result7 over arg10, result8 over arg11
// LCUR-LABEL: lin_fwd
// LCUR: padding zeroed: beside the entry result1, result2; after it none
//
// fp8-block at 512 tokens: the saved norm output (result 1) is lent a
// value larger than its scales, so its padding is zeroed after the entry.
// BLK-LABEL: lin_fwd
// BLK: padding zeroed: beside the entry result2; after it result1
//
// The bf16 libraries have no quantized results: no such line.
// RUN: te-compile %t/mlp.mlir --train -o %t/bf16.so
// RUN: te-run %t/bf16.so --list | FileCheck %s --check-prefix=BF16
// BF16-NOT: padding zeroed

//--- mlp.mlir
func.func @mlp(%x: tensor<16x256xbf16>, %g: tensor<256xbf16>, %b: tensor<256xbf16>, %w1: tensor<1024x256xbf16>, %b1: tensor<1024xbf16>, %w2: tensor<256x1024xbf16>, %b2: tensor<256xbf16>) -> tensor<16x256xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<16x256xbf16>, tensor<256xbf16>, tensor<256xbf16>, tensor<1024x256xbf16>, tensor<1024xbf16>, tensor<256x1024xbf16>, tensor<256xbf16>) -> tensor<16x256xbf16>
  return %y : tensor<16x256xbf16>
}

//--- lin.mlir
func.func @lin(%x: tensor<512x256xbf16>, %g: tensor<256xbf16>, %b: tensor<256xbf16>, %w: tensor<768x256xbf16>, %bias: tensor<768xbf16>) -> tensor<512x768xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) : (tensor<512x256xbf16>, tensor<256xbf16>, tensor<256xbf16>, tensor<768x256xbf16>, tensor<768xbf16>) -> tensor<512x768xbf16>
  return %y : tensor<512x768xbf16>
}
