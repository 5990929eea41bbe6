//===- formats.h - Bit-exact FP8 / FP4 / E8M0 conversions -------*- C++ -*-===//
//
// The element formats of TransformerEngine's recipes, defined once for the
// CPU reference backend and the CUDA kernels (host and device): E4M3 and
// E5M2 (FP8), E2M1 (FP4) and E8M0 (MXFP8 block scales). Conversions from
// fp32 round to nearest even and saturate to the largest finite value, as
// the hardware's `cvt.rn.satfinite` does; E8M0 rounds toward +inf
// (`cvt.rp.satfinite`). utils/gpu_check.sh compares every fp32 bit pattern
// against the CUDA conversion intrinsics on the GPU.
//
// Plain C++17 when not compiled by nvcc.
//
//===----------------------------------------------------------------------===//

#ifndef TE_KERNELS_FORMATS_H
#define TE_KERNELS_FORMATS_H

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TE_HOST_DEVICE __host__ __device__
#else
#define TE_HOST_DEVICE
#endif

namespace te::formats {

TE_HOST_DEVICE inline uint32_t floatBits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}

TE_HOST_DEVICE inline float bitsToFloat(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}

/// A small binary float format: `expBits` exponent bits with bias `bias`,
/// `manBits` mantissa bits, largest finite encoding `maxCode` (sign clear)
/// and the code every NaN converts to (as the hardware does: no sign).
struct MiniFloat {
  int expBits, manBits, bias;
  uint32_t maxCode, nanCode;
};

constexpr MiniFloat kE4M3{4, 3, 7, 0x7E, 0x7F};  // max 448, no inf
constexpr MiniFloat kE5M2{5, 2, 15, 0x7B, 0x7F}; // max 57344, inf 0x7C
constexpr MiniFloat kE2M1{2, 1, 1, 0x7, 0x7};    // max 6, no inf or NaN:
                                                 // NaN -> +6

/// Rounds the magnitude bits `a` (a finite fp32 without sign) to `f`,
/// nearest even, saturating to `f.maxCode`. Returns the code without sign.
TE_HOST_DEVICE inline uint32_t roundToMiniFloat(uint32_t a, MiniFloat f) {
  int biased = static_cast<int>(a >> 23);
  if (biased == 0)
    return 0; // fp32 zero or subnormal: far below every format's range
  int unbiased = biased - 127;
  uint32_t significand = (a & 0x7FFFFF) | 0x800000; // 24 bits
  int minNormal = 1 - f.bias;
  // Quantum of the target at this magnitude: 2^(exp - manBits), with exp
  // clamped at the smallest normal exponent (subnormals share its quantum).
  int exp = unbiased > minNormal ? unbiased : minNormal;
  int shift = 23 - f.manBits + (exp - unbiased);
  if (shift >= 32)
    return 0;
  uint32_t q = significand >> shift;
  uint32_t rem = significand & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u)))
    ++q;
  if (q >= (2u << f.manBits)) { // carry into the next binade
    q >>= 1;
    ++exp;
  }
  uint32_t code;
  if (q >= (1u << f.manBits)) {
    int fieldExp = exp + f.bias;
    if (fieldExp >= (1 << f.expBits))
      return f.maxCode;
    code = (static_cast<uint32_t>(fieldExp) << f.manBits) |
           (q & ((1u << f.manBits) - 1u));
  } else {
    code = q; // subnormal (or zero)
  }
  return code > f.maxCode ? f.maxCode : code;
}

/// fp32 -> `f`, round to nearest even, saturating to the largest finite
/// value (infinities too); every NaN -> `f.nanCode`.
TE_HOST_DEVICE inline uint8_t floatToMiniFloat(float x, MiniFloat f) {
  uint32_t u = floatBits(x);
  uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u)
    return static_cast<uint8_t>(f.nanCode);
  uint32_t sign = (u >> 31) << (f.expBits + f.manBits);
  return static_cast<uint8_t>(roundToMiniFloat(a, f) | sign);
}

/// fp32 -> E4M3 (max 448); every NaN -> 0x7F.
TE_HOST_DEVICE inline uint8_t floatToE4M3(float x) {
  return floatToMiniFloat(x, kE4M3);
}

/// fp32 -> E5M2 (max 57344, inf saturates too); every NaN -> 0x7F.
TE_HOST_DEVICE inline uint8_t floatToE5M2(float x) {
  return floatToMiniFloat(x, kE5M2);
}

/// fp32 -> E2M1 (4-bit code: sign << 3 | exp << 1 | man), saturating to
/// +-6; the format has no NaN: NaN maps to +6 (0x7).
TE_HOST_DEVICE inline uint8_t floatToE2M1(float x) {
  return floatToMiniFloat(x, kE2M1);
}

/// Value of a mini-float code (sign included at bit expBits + manBits).
TE_HOST_DEVICE inline float miniFloatToFloat(uint32_t code, MiniFloat f) {
  int width = f.expBits + f.manBits;
  bool negative = (code >> width) & 1u;
  uint32_t field = (code >> f.manBits) & ((1u << f.expBits) - 1u);
  uint32_t man = code & ((1u << f.manBits) - 1u);
  float value;
  if (field == 0)
    value = ldexpf(static_cast<float>(man), 1 - f.bias - f.manBits);
  else
    value = ldexpf(static_cast<float>(man | (1u << f.manBits)),
                   static_cast<int>(field) - f.bias - f.manBits);
  return negative ? -value : value;
}

TE_HOST_DEVICE inline float e4m3ToFloat(uint8_t b) {
  if ((b & 0x7Fu) == 0x7Fu)
    return NAN;
  return miniFloatToFloat(b, kE4M3);
}

TE_HOST_DEVICE inline float e5m2ToFloat(uint8_t b) {
  if ((b & 0x7Cu) == 0x7Cu)
    return (b & 0x3u) ? NAN : ((b & 0x80u) ? -INFINITY : INFINITY);
  return miniFloatToFloat(b, kE5M2);
}

TE_HOST_DEVICE inline float e2m1ToFloat(uint8_t code) {
  return miniFloatToFloat(code & 0xFu, kE2M1);
}

/// fp32 -> E8M0 (biased exponent of a power of two) of |x|, rounding
/// toward +inf and saturating: the smallest 2^k >= |x| for k in
/// [-127, 127]; |x| <= 2^-127 (zero included) gives 0, larger finite values
/// and inf give 254 (2^127), NaN gives 0xFF. The sign is ignored, as the
/// hardware does. For MXFP8, scale = ceil_pow2(amax / fp8_max).
TE_HOST_DEVICE inline uint8_t floatToE8M0RoundUp(float x) {
  uint32_t a = floatBits(x) & 0x7FFFFFFFu;
  if (a > 0x7F800000u)
    return 0xFFu;
  uint32_t biased = a >> 23;
  uint32_t mantissa = a & 0x7FFFFFu;
  if (biased == 0) // zero or fp32 subnormal; 2^-127 is 0x00400000
    return a > 0x00400000u ? 1u : 0u;
  uint32_t e = biased + (mantissa != 0 ? 1u : 0u);
  return static_cast<uint8_t>(e > 254u ? 254u : e);
}

/// Value of an E8M0 scale: 2^(e - 127), NaN for 0xFF.
TE_HOST_DEVICE inline float e8m0ToFloat(uint8_t e) {
  if (e == 0xFFu)
    return NAN;
  if (e == 0)
    return bitsToFloat(0x00400000u); // 2^-127, an fp32 subnormal
  return bitsToFloat(static_cast<uint32_t>(e) << 23);
}

} // namespace te::formats

#endif // TE_KERNELS_FORMATS_H
