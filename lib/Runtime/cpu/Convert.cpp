//===- Convert.cpp - fp32 <-> bf16 / f16 buffer conversions -----*- C++ -*-===//
//
// Whole-buffer conversions: one loop per dtype, no per-element dispatch.
//
//===----------------------------------------------------------------------===//

#include "Convert.h"
#include "Parallel.h"

namespace te::cpu {

void toFloat(DType t, const void *src, int64_t n, float *dst) {
  switch (t) {
  case DType::F32: {
    const float *s = static_cast<const float *>(src);
    if (s != dst && n > 0)
      std::memcpy(dst, s, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  case DType::BF16: {
    const uint16_t *s = static_cast<const uint16_t *>(src);
    parallelFor(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        dst[i] = bf16ToFloat(s[i]);
    });
    return;
  }
  case DType::F16: {
    const uint16_t *s = static_cast<const uint16_t *>(src);
    parallelFor(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        dst[i] = f16ToFloat(s[i]);
    });
    return;
  }
  }
}

void fromFloat(DType t, const float *src, int64_t n, void *dst) {
  switch (t) {
  case DType::F32: {
    float *d = static_cast<float *>(dst);
    if (d != src && n > 0)
      std::memcpy(d, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  case DType::BF16: {
    uint16_t *d = static_cast<uint16_t *>(dst);
    parallelFor(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        d[i] = floatToBF16(src[i]);
    });
    return;
  }
  case DType::F16: {
    uint16_t *d = static_cast<uint16_t *>(dst);
    parallelFor(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        d[i] = floatToF16(src[i]);
    });
    return;
  }
  }
}

} // namespace te::cpu
