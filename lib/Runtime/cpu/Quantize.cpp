//===- Quantize.cpp - CPU reference quantization ----------------*- C++ -*-===//
//
// Per-tensor FP8 (current and delayed scaling), MXFP8, Float8 block scaling
// and NVFP4 on the CPU.
//
//===----------------------------------------------------------------------===//

#include "Quantize.h"

#include "Parallel.h"
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
  // An empty tensor has no scales (and may have no buffer for them).
  if (size_t bytes = static_cast<size_t>(scaleRows * scaleCols))
    std::memset(scaleInv, 0, bytes);
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

//===----------------------------------------------------------------------===//
// NVFP4
//===----------------------------------------------------------------------===//

namespace {
/// E2M1 magnitudes by code (the code without its sign bit).
constexpr float kE2M1Magnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f,
                                      2.0f, 3.0f, 4.0f, 6.0f};

/// The diagonal of NVFP4's RHT sign matrix.
constexpr int kRHTSigns[16] = {1,  1,  1,  -1, 1,  -1, -1, -1,
                               -1, -1, -1, 1,  -1, 1,  -1, -1};
} // namespace

int64_t nvfp4ScaleCols(int64_t cols) { return roundUp(cols / 16, 4); }

float nvfp4EncodeScale(float globalAmax) {
  if (globalAmax == 0.0f || !std::isfinite(globalAmax))
    return 1.0f;
  float sEnc = 448.0f * 6.0f / globalAmax;
  return std::isinf(sEnc) ? FLT_MAX : sEnc;
}

uint32_t nvfp4RandomBits(uint64_t contextSeed, uint64_t seed, int32_t copy,
                         int64_t index) {
  // Unsigned throughout: every step wraps mod 2^64.
  uint64_t key = contextSeed ^ (seed * 0xD1B54A32D192ED03ull);
  uint64_t counter = 2u * static_cast<uint64_t>(index) +
                     static_cast<uint64_t>(static_cast<int64_t>(copy)) + 1u;
  uint64_t z = key + counter * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<uint32_t>(z >> 32);
}

uint8_t floatToE2M1Stochastic(float x, uint32_t r) {
  uint32_t bits = floatBits(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u)
    return floatToE2M1(x); // NaN: +6 (0x7), as round to nearest
  uint8_t sign = static_cast<uint8_t>((bits >> 31) << 3);
  float a = std::min(std::fabs(x), 6.0f);
  uint8_t lo = 7;
  while (kE2M1Magnitudes[lo] > a)
    --lo;
  if (lo == 7 || a == kE2M1Magnitudes[lo])
    return static_cast<uint8_t>(lo | sign); // on the grid (6 too): stays
  float low = kE2M1Magnitudes[lo], high = kE2M1Magnitudes[lo + 1];
  float p = (a - low) / (high - low);
  // r >> 8 has 24 bits: u is exact, in [0, 1).
  float u = static_cast<float>(r >> 8) * 0x1p-24f;
  return static_cast<uint8_t>((u < p ? lo + 1 : lo) | sign);
}

float quantizeNVFP4(const float *x, int64_t rows, int64_t cols,
                    const NVFP4Options &o, uint8_t *q, uint8_t *scales) {
  float globalAmax = amaxOf(x, rows * cols);
  float sEncGlobal = nvfp4EncodeScale(globalAmax);
  int64_t blocks = cols / 16, scaleCols = nvfp4ScaleCols(cols);
  // An empty tensor has no scales (and may have no buffer for them).
  if (size_t bytes = static_cast<size_t>(roundUp(rows, 128) * scaleCols))
    std::memset(scales, 0, bytes);

  // Row i's block b with scale byte sDecBits: the byte, then the codes.
  auto encodeBlock = [&](int64_t i, int64_t b, uint8_t sDecBits, float sEnc) {
    scales[i * scaleCols + b] = sDecBits;
    float sDec = e4m3ToFloat(sDecBits);
    float toFP4 = sDec == 0.0f ? 0.0f : sEnc / sDec;
    int64_t first = i * cols + b * 16; // row-major index of element 0
    uint8_t *out = q + first / 2;
    for (int64_t j = 0; j < 16; j += 2) {
      uint8_t code[2];
      for (int64_t h = 0; h < 2; ++h) {
        float v = x[first + j + h] * toFP4;
        code[h] = o.stochastic ? floatToE2M1Stochastic(
                                     v, nvfp4RandomBits(o.contextSeed, o.seed,
                                                        o.copy, first + j + h))
                               : floatToE2M1(v);
      }
      out[j / 2] = static_cast<uint8_t>(code[0] | (code[1] << 4));
    }
  };
  auto sDecOf = [&](float blockAmax, float sEnc) {
    return floatToE4M3(blockAmax * sEnc / 6.0f);
  };

  // Groups of 16 rows (a row of 2-D tiles) across threads; every element's
  // bits depend only on its index, so the result does not depend on the
  // thread count.
  int64_t groups = ceilDiv(rows, 16);
  parallelFor(groups, 16 * cols, [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) {
      int64_t r0 = g * 16, r1 = std::min(rows, r0 + 16);
      if (o.rowAmax)
        for (int64_t i = r0; i < r1; ++i)
          o.rowAmax[i] = amaxOf(x + i * cols, cols);
      for (int64_t b = 0; b < blocks; ++b) {
        if (o.block2d) {
          float tileAmax = 0.0f;
          for (int64_t i = r0; i < r1; ++i)
            tileAmax = std::max(tileAmax, amaxOf(x + i * cols + b * 16, 16));
          uint8_t sDecBits = sDecOf(tileAmax, sEncGlobal);
          for (int64_t i = r0; i < r1; ++i)
            encodeBlock(i, b, sDecBits, sEncGlobal);
        } else {
          for (int64_t i = r0; i < r1; ++i) {
            float sEnc = o.rowAmax ? nvfp4EncodeScale(o.rowAmax[i]) : sEncGlobal;
            encodeBlock(i, b, sDecOf(amaxOf(x + i * cols + b * 16, 16), sEnc),
                        sEnc);
          }
        }
      }
    }
  });
  return globalAmax;
}

namespace {
/// One 4-over-6 candidate of a 1x16 block: its scale byte, its codes
/// packed two per byte and its error.
struct FourOverSixCandidate {
  uint8_t scale = 0;
  uint8_t codes[8] = {};
  float err = 0.0f;
};

/// Codes the 16 values v with scale byte `scale` and sums their error
/// (TE's dequantized value e2m1 * s * A / (6 * e4m3Max) against v).
FourOverSixCandidate fourOverSixCandidate(const float *v, uint8_t scale,
                                          float sDec, float globalAmax,
                                          float e4m3Max, bool mse) {
  FourOverSixCandidate c;
  c.scale = scale;
  float s = e4m3ToFloat(scale);
  float inv = std::min(1.0f / (s * sDec), FLT_MAX);
  float denom = 6.0f * e4m3Max;
  for (int j = 0; j < 16; ++j) {
    uint8_t code = floatToE2M1(v[j] * inv);
    c.codes[j / 2] |= static_cast<uint8_t>(j % 2 ? code << 4 : code);
    float d = e2m1ToFloat(code) * s * globalAmax / denom - v[j];
    c.err += mse ? d * d : std::fabs(d);
  }
  return c;
}
} // namespace

float quantizeNVFP4FourOverSix(const float *x, int64_t rows, int64_t cols,
                               bool block2d, bool mse, float e4m3Max,
                               uint8_t *q, uint8_t *scales) {
  float globalAmax = amaxOf(x, rows * cols);
  float sEnc = std::min(6.0f * e4m3Max / globalAmax, FLT_MAX);
  if (globalAmax == 0.0f || sEnc == 0.0f)
    sEnc = 1.0f;
  float sDec = 1.0f / sEnc;
  int64_t blocks = cols / 16, scaleCols = nvfp4ScaleCols(cols);
  if (size_t bytes = static_cast<size_t>(roundUp(rows, 128) * scaleCols))
    std::memset(scales, 0, bytes);

  // Tile row g (16 rows) of block column b: both candidates of each of its
  // rows from the block (1x16) or tile (16x16) amax, then the choice.
  auto tile = [&](int64_t g, int64_t b) {
    int64_t r0 = g * 16;
    float tileAmax = 0.0f;
    if (block2d)
      for (int64_t i = r0; i < r0 + 16; ++i)
        tileAmax = std::max(tileAmax, amaxOf(x + i * cols + b * 16, 16));
    FourOverSixCandidate map4[16], map6[16];
    for (int64_t r = 0; r < 16; ++r) {
      const float *v = x + (r0 + r) * cols + b * 16;
      float base = (block2d ? tileAmax : amaxOf(v, 16)) / 6.0f * sEnc;
      map4[r] =
          fourOverSixCandidate(v, floatToE4M3(std::min(base * 1.5f, 448.0f)),
                               sDec, globalAmax, e4m3Max, mse);
      map6[r] = fourOverSixCandidate(v, floatToE4M3(std::min(base, 448.0f)),
                                     sDec, globalAmax, e4m3Max, mse);
    }
    bool pick4[16];
    if (block2d) {
      float e4[16], e6[16];
      for (int r = 0; r < 16; ++r)
        e4[r] = map4[r].err, e6[r] = map6[r].err;
      for (int half = 8; half >= 1; half /= 2)
        for (int r = 0; r < half; ++r)
          e4[r] += e4[r + half], e6[r] += e6[r + half];
      std::fill(pick4, pick4 + 16, e4[0] < e6[0]);
    } else {
      for (int r = 0; r < 16; ++r)
        pick4[r] = map4[r].err < map6[r].err;
    }
    for (int64_t r = 0; r < 16; ++r) {
      const FourOverSixCandidate &c = pick4[r] ? map4[r] : map6[r];
      scales[(r0 + r) * scaleCols + b] = c.scale;
      std::memcpy(q + ((r0 + r) * cols + b * 16) / 2, c.codes, 8);
    }
  };
  parallelFor(rows / 16, 16 * cols, [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g)
      for (int64_t b = 0; b < blocks; ++b)
        tile(g, b);
  });
  return globalAmax;
}

float quantizeNVFP4Rowwise(const float *x, int64_t rows, int64_t cols,
                           uint8_t *q, uint8_t *scales) {
  return quantizeNVFP4(x, rows, cols, NVFP4Options{}, q, scales);
}

void dequantizeNVFP4Rowwise(const uint8_t *q, const uint8_t *scales,
                            float globalAmax, int64_t rows, int64_t cols,
                            float *x) {
  float sEnc = nvfp4EncodeScale(globalAmax);
  int64_t scaleCols = nvfp4ScaleCols(cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      uint8_t byte = q[i * (cols / 2) + j / 2];
      uint8_t code = j % 2 ? (byte >> 4) : (byte & 0xF);
      float sDec = e4m3ToFloat(scales[i * scaleCols + j / 16]);
      x[i * cols + j] = e2m1ToFloat(code) * sDec / sEnc;
    }
}

void dequantizeNVFP4Blocks(const uint8_t *q, const uint8_t *scales,
                           int64_t rows, int64_t cols, float *x) {
  int64_t scaleCols = nvfp4ScaleCols(cols);
  parallelFor(rows, cols, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        uint8_t byte = q[i * (cols / 2) + j / 2];
        uint8_t code = j % 2 ? (byte >> 4) : (byte & 0xF);
        // 2 significant bits times 4: exact.
        x[i * cols + j] =
            e2m1ToFloat(code) * e4m3ToFloat(scales[i * scaleCols + j / 16]);
      }
  });
}

void nvfp4RHTMatrix(float m[256]) {
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      int h = __builtin_popcount(static_cast<unsigned>(i & j)) % 2 ? -1 : 1;
      m[i * 16 + j] = static_cast<float>(h * kRHTSigns[j]) * 0.25f;
    }
}

void applyNVFP4RHT(float *x, int64_t rows, int64_t cols) {
  float m[256];
  nvfp4RHTMatrix(m);
  parallelFor(rows, 16 * cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c0 = 0; c0 < cols; c0 += 16) {
        float *chunk = x + r * cols + c0;
        float v[16];
        std::memcpy(v, chunk, sizeof(v));
        for (int j = 0; j < 16; ++j) {
          float acc = 0.0f;
          for (int i = 0; i < 16; ++i)
            acc += v[i] * m[i * 16 + j];
          chunk[j] = acc;
        }
      }
  });
}

void quantizeMXFP8Columnwise(const float *x, int64_t rows, int64_t cols,
                             FP8 format, uint8_t *q, uint8_t *scaleInv) {
  int64_t scaleRows = roundUp(rows / 32, 4);
  int64_t scaleCols = roundUp(cols, 128);
  // An empty tensor has no scales (and may have no buffer for them).
  if (size_t bytes = static_cast<size_t>(scaleRows * scaleCols))
    std::memset(scaleInv, 0, bytes);
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
