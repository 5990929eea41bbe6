//===- Backend.cpp - te-mlir runtime: the CPU reference backend -*- C++ -*-===//
//
// The te_rt_* compute primitives on a cpu context, after the checks of
// api/*.cpp: bf16/f16 operands converted to fp32 into the context's staging
// buffers, the fp32 reference kernels (Reference.h, Gemm.h, Quantize.h), one
// round-to-nearest-even back. This file holds the backend's table
// (te::rt::cpuOps) and the helpers of BackendUtil.h; the calls are in
// BackendNormGemm.cpp, BackendElementwise.cpp and BackendQuantize.cpp.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "cpu/BackendUtil.h"
#include "cpu/Parallel.h"
#include "cpu/Reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

using te::cpu::DType;

namespace te::rt::cpu {

/// max |v| over the n values of buffer `p` as stored in `t`, NaN skipped
/// (te::cpu::amaxOf's rule): the amax the producers (te_rt_act_fwd, ...)
/// report, which a current-scaling quantization of the buffer would
/// compute itself. Fixed chunks reduced in parallel, then their maxima;
/// max is order-independent, so the thread count does not matter.
float storedAmax(DType t, const void *p, int64_t n) {
  constexpr int64_t kChunk = int64_t(1) << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<float> part(static_cast<size_t>(chunks), 0.0f);
  dispatch(t, [&](auto e) {
    using E = decltype(e);
    const auto *v = static_cast<const typename E::T *>(p);
    te::cpu::parallelFor(chunks, kChunk, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        float m = 0.0f;
        for (int64_t i = c * kChunk, end = std::min(n, i + kChunk); i < end;
             ++i)
          m = std::max(m, std::fabs(E::load(v[i])));
        part[c] = m;
      }
    });
  });
  float m = 0.0f;
  for (float v : part)
    m = std::max(m, v);
  return m;
}

/// y = act(x) over [rows, cols] of x in fp32, rows split across threads
/// (y is [rows, cols / 2] for gated activations).
void activationForwardRows(te::cpu::Activation kind, const float *x, float *y,
                           int64_t rows, int64_t cols, te::cpu::ClampParams p) {
  int64_t yCols = te::cpu::isGated(kind) ? cols / 2 : cols;
  te::cpu::parallelFor(rows, 16 * cols, [&](int64_t r0, int64_t r1) {
    te::cpu::activationForward(kind, x + r0 * cols, r1 - r0, cols,
                               y + r0 * yCols, p);
  });
}

/// dx = dy * act'(x) over [rows, cols] of x in fp32, rows split across
/// threads (dy is [rows, cols / 2] for gated activations).
void activationBackwardRows(te::cpu::Activation kind, const float *dy,
                            const float *x, float *dx, int64_t rows,
                            int64_t cols, te::cpu::ClampParams p) {
  int64_t dyCols = te::cpu::isGated(kind) ? cols / 2 : cols;
  te::cpu::parallelFor(rows, 16 * cols, [&](int64_t r0, int64_t r1) {
    te::cpu::activationBackward(kind, dy + r0 * dyCols, x + r0 * cols, r1 - r0,
                                cols, dx + r0 * cols, p);
  });
}

} // namespace te::rt::cpu

const te::rt::BackendOps te::rt::cpuOps = {
    "cpu",
#define TE_RT_BACKEND_CALL(Name, Ret, Params) &te::rt::cpu::Name,
#include "BackendCalls.def"
};
