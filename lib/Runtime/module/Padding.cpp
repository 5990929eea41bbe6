//===- Padding.cpp - the padding of a quantized tensor's buffer -*- C++ -*-===//
//
// The gaps a quantized tensor's inner tensors leave in its buffer
// (Padding.h), with every size and offset checked: a malformed layout is an
// error, never a range outside the buffer.
//
//===----------------------------------------------------------------------===//

#include "Padding.h"

namespace te::padding {

bool append(int64_t result, const std::vector<int64_t> &offsets,
            const std::vector<int64_t> &sizes, int64_t total,
            std::vector<Range> &out, std::string &error) {
  if (offsets.size() != sizes.size()) {
    error = std::to_string(offsets.size()) + " offsets for " +
            std::to_string(sizes.size()) + " inner tensors";
    return false;
  }
  if (total < 0) {
    error = "the buffer's size is negative (" + std::to_string(total) + ")";
    return false;
  }
  std::vector<Range> gaps;
  int64_t end = 0; // of the previous inner tensor
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::string inner = "inner tensor " + std::to_string(i);
    if (sizes[i] < 0) {
      error = inner + " has a negative size (" + std::to_string(sizes[i]) + ")";
      return false;
    }
    if (offsets[i] < end) {
      error = inner + " starts at byte " + std::to_string(offsets[i]) +
              ", before the previous one ends (byte " + std::to_string(end) +
              ")";
      return false;
    }
    if (offsets[i] > end)
      gaps.push_back({result, end, offsets[i] - end});
    if (__builtin_add_overflow(offsets[i], sizes[i], &end) || end > total) {
      error = inner + " (" + std::to_string(sizes[i]) + " bytes at byte " +
              std::to_string(offsets[i]) + ") ends past the buffer's " +
              std::to_string(total) + " bytes";
      return false;
    }
  }
  if (total > end)
    gaps.push_back({result, end, total - end});
  out.insert(out.end(), gaps.begin(), gaps.end());
  return true;
}

} // namespace te::padding
