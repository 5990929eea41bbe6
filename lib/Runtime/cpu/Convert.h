//===- Convert.h - fp32 <-> bf16 / f16 conversions --------------*- C++ -*-===//
//
// Bit-exact conversions between fp32 and the 16-bit activation dtypes of the
// runtime ABI (round to nearest even, NaN stays a quiet NaN, overflow to
// inf), and whole-buffer conversions used by the CPU backend.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_CPU_CONVERT_H
#define TE_LIB_RUNTIME_CPU_CONVERT_H

#include <cstdint>
#include <cstring>

namespace te::cpu {

/// Element types of activation-dtype buffers (TE_RT_DTYPE_* order).
enum class DType { F32 = 0, BF16 = 1, F16 = 2 };

/// Bytes per element of `t`.
inline int64_t dtypeSize(DType t) { return t == DType::F32 ? 4 : 2; }

inline uint32_t bitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}

inline float floatOf(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}

/// fp32 -> bf16, round to nearest even. A NaN keeps its sign and the top of
/// its payload and is made quiet; values past the largest bf16 become inf.
inline uint16_t floatToBF16(float x) {
  uint32_t u = bitsOf(x);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  // Adding 0x7fff plus the kept lsb rounds ties to even; a carry out of the
  // mantissa bumps the exponent (and past the largest finite value, to inf).
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16ToFloat(uint16_t h) {
  return floatOf(static_cast<uint32_t>(h) << 16);
}

/// fp32 -> IEEE binary16, round to nearest even, subnormals included. A NaN
/// keeps its sign and the top of its payload and is made quiet; values of
/// magnitude >= 65520 (halfway past 65504, the largest half) become inf.
inline uint16_t floatToF16(float x) {
  uint32_t u = bitsOf(x);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN
    return sign | 0x7e00u | static_cast<uint16_t>((a >> 13) & 0x3ffu);
  if (a >= 0x477ff000u) // >= 65520 (and inf)
    return sign | 0x7c00u;
  if (a >= 0x38800000u) { // normal half (>= 2^-14): rebias 127 -> 15
    uint32_t h = a - 0x38000000u;
    h += 0xfffu + ((h >> 13) & 1u);
    return sign | static_cast<uint16_t>(h >> 13);
  }
  // Subnormal half: the value in units of 2^-24 is m >> shift, rounded.
  int exp = static_cast<int>(a >> 23);
  int shift = 126 - exp;
  if (shift > 24)
    return sign; // below 2^-25: rounds to zero
  uint32_t m = (a & 0x7fffffu) | 0x800000u;
  uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1u)))
    ++q; // may carry into the smallest normal, which is the right code
  return sign | static_cast<uint16_t>(q);
}

inline float f16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f)
    return floatOf(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    float v = static_cast<float>(man) * 0x1p-24f; // exact
    return floatOf(sign | bitsOf(v));
  }
  return floatOf(sign | ((exp + 112u) << 23) | (man << 13));
}

/// dst[i] = fp32(src[i]) for n elements of type `t` (threaded when large).
void toFloat(DType t, const void *src, int64_t n, float *dst);

/// dst[i] = t(src[i]), rounded to nearest even (threaded when large).
void fromFloat(DType t, const float *src, int64_t n, void *dst);

} // namespace te::cpu

#endif // TE_LIB_RUNTIME_CPU_CONVERT_H
