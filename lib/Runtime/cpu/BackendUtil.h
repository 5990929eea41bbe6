//===- BackendUtil.h - te-mlir runtime: CPU backend helpers -----*- C++ -*-===//
//
// What the CPU reference backend's calls (cpu/Backend*.cpp) share: the fp32
// views of bf16/f16 buffers in the context's staging buffers, element
// access by dtype, the tiled transpose, and the activations and stored amax
// over rows in parallel.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_CPU_BACKENDUTIL_H
#define TE_LIB_RUNTIME_CPU_BACKENDUTIL_H

#include "Context.h"
#include "cpu/Convert.h"
#include "cpu/Parallel.h"
#include "cpu/Quantize.h"
#include "cpu/Reference.h"

#include <algorithm>
#include <cstdint>

namespace te::rt::cpu {

inline te::cpu::DType dtypeOf(int32_t dtype) {
  return static_cast<te::cpu::DType>(dtype);
}

/// The fp32 view of an input buffer: the buffer itself when it is f32, else
/// its conversion into the context's staging slot `slot`.
inline const float *input(te_rt_context *ctx, int slot, te::cpu::DType t,
                          const void *p, int64_t n) {
  if (t == te::cpu::DType::F32)
    return static_cast<const float *>(p);
  float *s = ctx->scratch(slot, n);
  te::cpu::toFloat(t, p, n, s);
  return s;
}

/// Where an output is computed in fp32: the buffer itself when it is f32,
/// else staging slot `slot`; commit() then rounds it into the buffer.
inline float *output(te_rt_context *ctx, int slot, te::cpu::DType t, void *p,
                     int64_t n) {
  return t == te::cpu::DType::F32 ? static_cast<float *>(p)
                                  : ctx->scratch(slot, n);
}

inline void commit(te::cpu::DType t, const float *v, void *p, int64_t n) {
  te::cpu::fromFloat(t, v, n, p); // a no-op when v is p (f32)
}

/// Element access by dtype, for the loops that read buffers in place.
struct F32Elem {
  using T = float;
  static float load(float v) { return v; }
  static float store(float v) { return v; }
};

struct BF16Elem {
  using T = uint16_t;
  static float load(uint16_t v) { return te::cpu::bf16ToFloat(v); }
  static uint16_t store(float v) { return te::cpu::floatToBF16(v); }
};

struct F16Elem {
  using T = uint16_t;
  static float load(uint16_t v) { return te::cpu::f16ToFloat(v); }
  static uint16_t store(float v) { return te::cpu::floatToF16(v); }
};

/// Calls fn(Elem{}) with the element type of `t`; the loop inside fn is
/// compiled once per dtype.
template <typename Fn> void dispatch(te::cpu::DType t, Fn fn) {
  switch (t) {
  case te::cpu::DType::F32:
    fn(F32Elem{});
    return;
  case te::cpu::DType::BF16:
    fn(BF16Elem{});
    return;
  case te::cpu::DType::F16:
    fn(F16Elem{});
    return;
  }
}

/// max |v| over the n values of buffer `p` as stored in `t`, NaN skipped
/// (te::cpu::amaxOf's rule): the amax the producers (te_rt_act_fwd, ...)
/// report, which a current-scaling quantization of the buffer would
/// compute itself. Thread-count independent.
float storedAmax(te::cpu::DType t, const void *p, int64_t n);

/// dst[cols, rows] = src[rows, cols]^T in 32x32 tiles, tile rows across
/// threads.
template <typename T>
void transposeTiled(const T *src, T *dst, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
  int64_t tileRows = (rows + kTile - 1) / kTile;
  te::cpu::parallelFor(tileRows, kTile * cols, [&](int64_t t0, int64_t t1) {
    for (int64_t ti = t0; ti < t1; ++ti) {
      int64_t i0 = ti * kTile, i1 = std::min(rows, i0 + kTile);
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        int64_t j1 = std::min(cols, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j)
            dst[j * rows + i] = src[i * cols + j];
      }
    }
  });
}

inline te::cpu::FP8 fp8Of(int32_t format) {
  return format == TE_RT_FP8_E4M3 ? te::cpu::FP8::E4M3 : te::cpu::FP8::E5M2;
}

/// y = act(x) over [rows, cols] of x in fp32, rows split across threads
/// (y is [rows, cols / 2] for gated activations).
void activationForwardRows(te::cpu::Activation kind, const float *x, float *y,
                           int64_t rows, int64_t cols,
                           te::cpu::ClampParams p = {});

/// dx = dy * act'(x) over [rows, cols] of x in fp32, rows split across
/// threads (dy is [rows, cols / 2] for gated activations).
void activationBackwardRows(te::cpu::Activation kind, const float *dy,
                            const float *x, float *dx, int64_t rows,
                            int64_t cols, te::cpu::ClampParams p = {});

} // namespace te::rt::cpu

#endif // TE_LIB_RUNTIME_CPU_BACKENDUTIL_H
