//===- Quantize.cpp - CPU reference quantization ----------------*- C++ -*-===//
//
// Per-tensor FP8 (current and delayed scaling) and MXFP8 on the CPU.
//
//===----------------------------------------------------------------------===//

#include "Quantize.h"

#include "te_kernels/formats.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace te::cpu {

using namespace te::formats;

namespace {
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/// MXFP8: the factor x is multiplied by before rounding to FP8, the inverse
/// of the block's E8M0 scale 2^(e - 127) (exact: a power of two).
float mxfp8ToFP8Factor(uint8_t e) {
  return std::ldexp(1.0f, 127 - static_cast<int>(e));
}
} // namespace

float fp8Max(FP8 format) { return format == FP8::E4M3 ? 448.0f : 57344.0f; }

uint8_t quantizeFP8(float x, FP8 format) {
  return format == FP8::E4M3 ? floatToE4M3(x) : floatToE5M2(x);
}

float dequantizeFP8(uint8_t q, FP8 format) {
  return format == FP8::E4M3 ? e4m3ToFloat(q) : e5m2ToFloat(q);
}

float scaleFromAmax(float amax, float fp8MaxValue, bool pow2, float eps) {
  if (amax < eps)
    amax = eps;
  if (amax == 0.0f || !std::isfinite(amax))
    return 1.0f;
  float scale = fp8MaxValue / amax;
  if (std::isinf(scale))
    scale = FLT_MAX;
  if (pow2) {
    // Keep sign and exponent: round down to a power of two.
    uint32_t bits = floatBits(scale) & 0xFF800000u;
    scale = bitsToFloat(bits);
  }
  return scale;
}

float amaxOf(const float *x, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    m = std::max(m, std::fabs(x[i]));
  return m;
}

float quantizePerTensor(const float *x, int64_t n, float scale, FP8 format,
                        uint8_t *q) {
  for (int64_t i = 0; i < n; ++i)
    q[i] = quantizeFP8(x[i] * scale, format);
  return amaxOf(x, n);
}

void dequantizePerTensor(const uint8_t *q, int64_t n, float scaleInv,
                         FP8 format, float *x) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = dequantizeFP8(q[i], format) * scaleInv;
}

void updateDelayedScaling(float *history, float *scale, int64_t len, int64_t n,
                          float fp8MaxValue, int margin, bool mostRecent) {
  for (int64_t s = 0; s < n; ++s) {
    float amax = history[s];
    if (!mostRecent)
      for (int64_t r = 1; r < len; ++r)
        amax = std::max(amax, history[r * n + s]);
    if (std::isfinite(amax) && amax > 0.0f) {
      float next = fp8MaxValue / amax / std::ldexp(1.0f, margin);
      scale[s] = std::isinf(next) ? FLT_MAX : next;
    }
    // roll(-1) along the history, then zero row 0
    float first = history[s];
    for (int64_t r = 0; r + 1 < len; ++r)
      history[r * n + s] = history[(r + 1) * n + s];
    history[(len - 1) * n + s] = first;
    history[s] = 0.0f;
  }
}

int64_t mxfp8RowwiseScaleCols(int64_t cols) { return roundUp(cols / 32, 4); }

void quantizeMXFP8Rowwise(const float *x, int64_t rows, int64_t cols,
                          FP8 format, uint8_t *q, uint8_t *scaleInv) {
  int64_t scaleRows = roundUp(rows, 128);
  int64_t scaleCols = mxfp8RowwiseScaleCols(cols);
  std::memset(scaleInv, 0, static_cast<size_t>(scaleRows * scaleCols));
  float maxValue = fp8Max(format);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t b = 0; b < cols / 32; ++b) {
      const float *block = x + i * cols + b * 32;
      uint8_t e = floatToE8M0RoundUp(amaxOf(block, 32) / maxValue);
      scaleInv[i * scaleCols + b] = e;
      // x * 2^-(e - 127): exact power-of-two scaling, then round.
      float toFP8 = mxfp8ToFP8Factor(e);
      for (int64_t j = 0; j < 32; ++j)
        q[i * cols + b * 32 + j] = quantizeFP8(block[j] * toFP8, format);
    }
  }
}

void dequantizeMXFP8Rowwise(const uint8_t *q, const uint8_t *scaleInv,
                            int64_t rows, int64_t cols, FP8 format, float *x) {
  int64_t scaleCols = mxfp8RowwiseScaleCols(cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      x[i * cols + j] = dequantizeFP8(q[i * cols + j], format) *
                        e8m0ToFloat(scaleInv[i * scaleCols + j / 32]);
}

void quantizeBlockRowwise(const float *x, int64_t rows, int64_t cols,
                          bool block2d, bool fp32Scales, uint8_t *q,
                          float *scaleInv) {
  int64_t colBlocks = ceilDiv(cols, 128);
  int64_t rowBlocks = block2d ? ceilDiv(rows, 128) : rows;
  int64_t rowSpan = block2d ? 128 : 1;
  int64_t scaleRows = block2d ? ceilDiv(rows, 128) : colBlocks;
  int64_t scaleCols = block2d ? roundUp(colBlocks, 4) : roundUp(rows, 4);
  std::fill(scaleInv, scaleInv + scaleRows * scaleCols, 0.0f);
  for (int64_t rb = 0; rb < rowBlocks; ++rb) {
    for (int64_t cb = 0; cb < colBlocks; ++cb) {
      int64_t r0 = rb * rowSpan, r1 = std::min(rows, r0 + rowSpan);
      int64_t c0 = cb * 128, c1 = std::min(cols, c0 + 128);
      float amax = 0.0f;
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t j = c0; j < c1; ++j)
          amax = std::max(amax, std::fabs(x[i * cols + j]));
      float scale = scaleFromAmax(amax, 448.0f, /*pow2=*/!fp32Scales);
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t j = c0; j < c1; ++j)
          q[i * cols + j] = floatToE4M3(x[i * cols + j] * scale);
      float inv = 1.0f / scale;
      if (block2d)
        scaleInv[rb * scaleCols + cb] = inv;
      else
        scaleInv[cb * scaleCols + rb] = inv;
    }
  }
}

void dequantizeBlockRowwise(const uint8_t *q, const float *scaleInv,
                            int64_t rows, int64_t cols, bool block2d,
                            float *x) {
  int64_t colBlocks = ceilDiv(cols, 128);
  int64_t scaleCols = block2d ? roundUp(colBlocks, 4) : roundUp(rows, 4);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float s = block2d ? scaleInv[(i / 128) * scaleCols + j / 128]
                        : scaleInv[(j / 128) * scaleCols + i];
      x[i * cols + j] = e4m3ToFloat(q[i * cols + j]) * s;
    }
}

float quantizeNVFP4Rowwise(const float *x, int64_t rows, int64_t cols,
                           uint8_t *q, uint8_t *scales) {
  float globalAmax = amaxOf(x, rows * cols);
  float sEnc = globalAmax == 0.0f ? 1.0f : 448.0f * 6.0f / globalAmax;
  if (std::isinf(sEnc))
    sEnc = FLT_MAX;
  int64_t scaleCols = roundUp(cols / 16, 4);
  std::memset(scales, 0, static_cast<size_t>(roundUp(rows, 128) * scaleCols));
  std::memset(q, 0, static_cast<size_t>(rows * cols / 2));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t b = 0; b < cols / 16; ++b) {
      const float *block = x + i * cols + b * 16;
      uint8_t sDecBits = floatToE4M3(amaxOf(block, 16) * sEnc / 6.0f);
      scales[i * scaleCols + b] = sDecBits;
      float sDec = e4m3ToFloat(sDecBits);
      float toFP4 = sDec == 0.0f ? 0.0f : sEnc / sDec;
      for (int64_t j = 0; j < 16; ++j) {
        int64_t col = b * 16 + j;
        uint8_t code = floatToE2M1(block[j] * toFP4);
        uint8_t &byte = q[i * (cols / 2) + col / 2];
        byte = static_cast<uint8_t>(col % 2 ? (byte | (code << 4))
                                            : (byte | code));
      }
    }
  }
  return globalAmax;
}

void dequantizeNVFP4Rowwise(const uint8_t *q, const uint8_t *scales,
                            float globalAmax, int64_t rows, int64_t cols,
                            float *x) {
  float sEnc = globalAmax == 0.0f ? 1.0f : 448.0f * 6.0f / globalAmax;
  int64_t scaleCols = roundUp(cols / 16, 4);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      uint8_t byte = q[i * (cols / 2) + j / 2];
      uint8_t code = j % 2 ? (byte >> 4) : (byte & 0xF);
      float sDec = e4m3ToFloat(scales[i * scaleCols + j / 16]);
      x[i * cols + j] = e2m1ToFloat(code) * sDec / sEnc;
    }
}

void quantizeMXFP8Columnwise(const float *x, int64_t rows, int64_t cols,
                             FP8 format, uint8_t *q, uint8_t *scaleInv) {
  int64_t scaleRows = roundUp(rows / 32, 4);
  int64_t scaleCols = roundUp(cols, 128);
  std::memset(scaleInv, 0, static_cast<size_t>(scaleRows * scaleCols));
  float maxValue = fp8Max(format);
  for (int64_t rb = 0; rb < rows / 32; ++rb) {
    for (int64_t j = 0; j < cols; ++j) {
      float amax = 0.0f;
      for (int64_t i = rb * 32; i < rb * 32 + 32; ++i)
        amax = std::max(amax, std::fabs(x[i * cols + j]));
      uint8_t e = floatToE8M0RoundUp(amax / maxValue);
      scaleInv[rb * scaleCols + j] = e;
      float toFP8 = mxfp8ToFP8Factor(e);
      for (int64_t i = rb * 32; i < rb * 32 + 32; ++i)
        q[i * cols + j] = quantizeFP8(x[i * cols + j] * toFP8, format);
    }
  }
}

namespace {
int64_t swizzledOffset(int64_t i, int64_t j, int64_t colsPadded) {
  int64_t tile = (i / 128) * (colsPadded / 4) + j / 4;
  int64_t r = i % 128, c = j % 4;
  return tile * 512 + (r % 32) * 16 + (r / 32) * 4 + c;
}
} // namespace

void swizzleScales(const uint8_t *compact, int64_t rowsPadded,
                   int64_t colsPadded, uint8_t *swizzled) {
  for (int64_t i = 0; i < rowsPadded; ++i)
    for (int64_t j = 0; j < colsPadded; ++j)
      swizzled[swizzledOffset(i, j, colsPadded)] = compact[i * colsPadded + j];
}

void unswizzleScales(const uint8_t *swizzled, int64_t rowsPadded,
                     int64_t colsPadded, uint8_t *compact) {
  for (int64_t i = 0; i < rowsPadded; ++i)
    for (int64_t j = 0; j < colsPadded; ++j)
      compact[i * colsPadded + j] = swizzled[swizzledOffset(i, j, colsPadded)];
}

} // namespace te::cpu
