//===- Padding.h - the padding of a quantized tensor's buffer ---*- C++ -*-===//
//
// A quantized result's buffer holds its inner tensors at aligned offsets
// (te_module_tensor_inner_layout); the bytes between them and after the
// last one, up to the buffer's size (te_module_tensor_bytes), are padding.
// No entry computes them: it leaves them as the caller's buffer had them
// or, where it copies a prefix view of one of its own buffers into the
// result, copies what that buffer held there. te_module_run zeroes them
// after the entry (te_rt_zero_ranges), at the ranges append() gives.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_LIB_MODULE_PADDING_H
#define TE_RUNTIME_LIB_MODULE_PADDING_H

#include <cstdint>
#include <string>
#include <vector>

namespace te::padding {

/// A byte range [offset, offset + bytes) of result `result`'s buffer.
struct Range {
  int64_t result = 0;
  int64_t offset = 0, bytes = 0;
};

/// Appends to `out` the padding of result `result`, a buffer of `total`
/// bytes holding inner tensors of sizes[i] bytes at offsets[i], in buffer
/// order: the gap before each inner tensor and the one after the last;
/// empty gaps are left out. False, with `error` saying why and `out`
/// unchanged, when that is not a layout: offsets and sizes differ in
/// number, a size or the total is negative, or an inner tensor starts
/// before the previous one ends or ends past `total`.
bool append(int64_t result, const std::vector<int64_t> &offsets,
            const std::vector<int64_t> &sizes, int64_t total,
            std::vector<Range> &out, std::string &error);

} // namespace te::padding

#endif // TE_RUNTIME_LIB_MODULE_PADDING_H
