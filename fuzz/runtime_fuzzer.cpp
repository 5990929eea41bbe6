//===- runtime_fuzzer.cpp - libFuzzer target: runtime checks -----*- C++
//-*-===//
//
// Calls the te_rt_* entry points of the CPU backend with fuzzer-chosen
// dims, dtype / kind / format codes, flags and pointers. Pointers are NULL
// or real heap buffers of kBufferBytes each (ASan-guarded). A call is made
// when its dims are small enough for those buffers (then it may succeed or
// refuse), or when a dim is negative or a product overflows (then the ABI
// promises an error); calls whose valid dims would need larger buffers are
// skipped. Asserted: no crash, no sanitizer report, an error whenever the
// ABI promises one, and every error names the call.
//
//===----------------------------------------------------------------------===//

#include "te/Runtime/TERuntime.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

namespace {

/// Dims up to this stay within the buffers for every call below (scale
/// and padding layouts round rows up to 128 and columns up to 128).
constexpr int64_t kMaxFittingDim = 64;
constexpr size_t kBufferBytes = size_t(256) * 256 * 4 * 2;
constexpr int kBuffers = 12;

/// Buffers shared by all runs (allocated once: runs stay fast; a plain
/// array, never destroyed, so that they stay reachable for LeakSanitizer).
void *gBuffers[kBuffers];
void **buffers() {
  if (!gBuffers[0])
    for (void *&b : gBuffers)
      b = std::calloc(1, kBufferBytes);
  return gBuffers;
}

/// Reads the fuzz input as a stream of choices (zeros when exhausted).
class Input {
public:
  Input(const uint8_t *data, size_t size) : data(data), size(size) {}

  uint8_t byte() { return pos < size ? data[pos++] : 0; }
  template <typename T> T raw() {
    T v{};
    uint8_t b[sizeof(T)] = {};
    for (auto &x : b)
      x = byte();
    std::memcpy(&v, b, sizeof(T));
    return v;
  }
  /// Mostly small dims (the ones that run), sometimes hostile ones.
  int64_t dim() {
    uint8_t sel = byte();
    if (sel < 160)
      return sel % 17; // 0..16
    if (sel < 200)
      return 16 * (byte() % 5); // 0, 16, 32, 48, 64
    if (sel < 215)
      return byte() % (kMaxFittingDim + 1);
    static const int64_t special[] = {-1,
                                      -128,
                                      std::numeric_limits<int64_t>::min(),
                                      std::numeric_limits<int64_t>::max(),
                                      int64_t(1) << 31,
                                      int64_t(1) << 32,
                                      int64_t(1) << 40,
                                      int64_t(1) << 62,
                                      (int64_t(1) << 62) + 1,
                                      int64_t(3) << 61,
                                      1000,
                                      129};
    return special[byte() % (sizeof(special) / sizeof(special[0]))];
  }
  /// A code in [0, n) most of the time, otherwise any int32.
  int32_t code(int32_t n) {
    uint8_t sel = byte();
    if (sel < 230)
      return int32_t(sel % n);
    return raw<int32_t>();
  }
  int32_t flag() { return code(2); }
  /// NULL (rarely) or a distinct buffer.
  void *ptr() {
    if (byte() < 16)
      return nullptr;
    return buffers()[next++ % kBuffers];
  }
  float real() {
    uint8_t sel = byte();
    if (sel < 200)
      return float(sel) / 16.0f;
    return raw<float>();
  }

private:
  const uint8_t *data;
  size_t size;
  size_t pos = 0;
  int next = 0;
};

/// The ABI's promise for a call's dims: `Invalid` (an error is promised),
/// `Fits` (the buffers hold it: run it) or `TooLarge` (skip it).
enum class Dims { Fits, Invalid, TooLarge };

Dims classify(std::initializer_list<int64_t> dims) {
  bool fits = true;
  for (int64_t d : dims) {
    if (d < 0)
      return Dims::Invalid;
    fits = fits && d <= kMaxFittingDim;
  }
  if (fits)
    return Dims::Fits;
  // The product of two of the dims (a matrix, times 4 bytes) overflows
  // int64: an error is promised.
  const int64_t *v = dims.begin();
  for (size_t i = 0; i < dims.size(); ++i)
    for (size_t j = i + 1; j < dims.size(); ++j) {
      int64_t p;
      if (__builtin_mul_overflow(v[i], v[j], &p) ||
          __builtin_mul_overflow(p, 4, &p))
        return Dims::Invalid;
    }
  return Dims::TooLarge;
}

void check(const char *call, int32_t status, bool mustFail) {
  std::string error = te_rt_last_error();
  if (mustFail && status == 0) {
    std::fprintf(stderr, "%s accepted invalid arguments\n", call);
    std::abort();
  }
  if (status != 0 && error.rfind(call, 0) != 0 &&
      error.find(": recipe ") == std::string::npos) {
    std::fprintf(stderr, "%s failed with an error not naming it: %s\n", call,
                 error.c_str());
    std::abort();
  }
}

bool validDtype(int32_t t) { return t >= 0 && t <= 2; }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static te_rt_context *ctx = te_rt_context_create(TE_RT_BACKEND_CPU);
  if (!ctx)
    std::abort();
  Input in(data, size);
  // Refill a few buffers with fuzzer bytes (NaN, Inf, denormals).
  for (int i = 0; i < 2; ++i) {
    float *f = static_cast<float *>(buffers()[i]);
    for (int k = 0; k < 64; ++k)
      f[k] = in.real();
  }
  // Whether a branch's run is open (case 25); every input ends with none.
  bool inRun = false;
  int calls = 1 + in.byte() % 4;
  for (int c = 0; c < calls; ++c) {
    uint8_t which = in.byte() % 26;
    int32_t dtype = in.code(3);
    bool badDtype = !validDtype(dtype);
    switch (which) {
    case 0: {
      int32_t kind = in.code(2);
      int64_t rows = in.dim(), cols = in.dim();
      Dims d = classify({rows, cols});
      if (d == Dims::TooLarge)
        break;
      bool rms = kind == TE_RT_NORM_RMSNORM;
      void *x = in.ptr(), *g = in.ptr(), *b = rms ? nullptr : in.ptr(),
           *z = in.ptr();
      float *mu = rms ? nullptr : static_cast<float *>(in.ptr());
      float *rs = static_cast<float *>(in.ptr());
      check("te_rt_norm_fwd",
            te_rt_norm_fwd(ctx, kind, dtype, x, g, b, in.real(), in.flag(),
                           rows, cols, z, mu, rs),
            d == Dims::Invalid || badDtype || !x || !g || !z || !rs);
      break;
    }
    case 1: {
      int32_t kind = in.code(2);
      int64_t rows = in.dim(), cols = in.dim();
      Dims d = classify({rows, cols});
      if (d == Dims::TooLarge)
        break;
      bool rms = kind == TE_RT_NORM_RMSNORM;
      void *dz = in.ptr(), *x = in.ptr(), *g = in.ptr(), *dx = in.ptr(),
           *dg = in.ptr(), *db = rms ? nullptr : in.ptr();
      float *mu = static_cast<float *>(in.ptr()),
            *rs = static_cast<float *>(in.ptr());
      check("te_rt_norm_bwd",
            te_rt_norm_bwd(ctx, kind, dtype, dz, x, mu, rs, g, in.flag(), rows,
                           cols, dx, dg, db),
            d == Dims::Invalid || badDtype || !dz || !x || !g || !dx || !dg);
      break;
    }
    case 2:
    case 3:
    case 4: {
      int64_t m = in.dim(), n = in.dim(), k = in.dim();
      Dims d = classify({m, n, k});
      if (d == Dims::TooLarge)
        break;
      void *a = in.ptr(), *b = in.ptr(), *bias = in.ptr(), *out = in.ptr();
      bool must = d == Dims::Invalid || badDtype || !a || !b || !out;
      if (which == 2)
        check("te_rt_gemm_fprop",
              te_rt_gemm_fprop(ctx, dtype, a, b, bias, out, m, n, k), must);
      else if (which == 3)
        check("te_rt_gemm_dgrad",
              te_rt_gemm_dgrad(ctx, dtype, a, b, out, m, n, k), must);
      else
        check("te_rt_gemm_wgrad",
              te_rt_gemm_wgrad(ctx, dtype, a, b, out, bias, m, n, k, in.flag()),
              must);
      break;
    }
    case 5:
    case 6: {
      int64_t m = in.dim(), n = in.dim(), k = in.dim();
      Dims d = classify({m, n, k});
      if (d == Dims::TooLarge)
        break;
      void *a = in.ptr(), *b = in.ptr(), *bias = in.ptr(), *out = in.ptr(),
           *aux = in.ptr();
      int32_t act = in.code(TE_RT_ACT_COUNT + 1);
      bool must = d == Dims::Invalid || badDtype || !a || !b || !out;
      if (which == 5)
        check("te_rt_gemm_fprop_act",
              te_rt_gemm_fprop_act(ctx, act, dtype, a, b, bias, out, aux, m, n,
                                   k),
              must);
      else
        check("te_rt_gemm_dgrad_dact",
              te_rt_gemm_dgrad_dact(ctx, act, dtype, a, b, aux, out, m, n, k),
              must || !aux);
      break;
    }
    case 7:
    case 8:
    case 9: {
      int32_t act = in.code(TE_RT_ACT_COUNT + 1);
      int64_t rows = in.dim(), cols = in.dim();
      Dims d = classify({rows, cols});
      if (d == Dims::TooLarge)
        break;
      void *x = in.ptr(), *y = in.ptr(), *dy = in.ptr(), *db = in.ptr();
      float *amax = static_cast<float *>(in.ptr());
      float limit = in.real(), alpha = in.real(), offset = in.real();
      bool must =
          d == Dims::Invalid || badDtype || act < 0 || act >= TE_RT_ACT_COUNT;
      if (which == 7)
        check("te_rt_act_fwd",
              te_rt_act_fwd(ctx, act, dtype, x, y, rows, cols, limit, alpha,
                            offset, amax),
              must || !x || !y);
      else if (which == 8)
        check("te_rt_act_bwd",
              te_rt_act_bwd(ctx, act, dtype, dy, x, y, rows, cols, limit, alpha,
                            offset, amax),
              must || !x || !y || !dy);
      else
        check("te_rt_dbias_dact",
              te_rt_dbias_dact(ctx, act, dtype, dy, x, y, db, rows, cols, limit,
                               alpha, offset, amax),
              must || !x || !y || !dy);
      break;
    }
    case 10: {
      int64_t rows = in.dim(), cols = in.dim();
      Dims d = classify({rows, cols});
      if (d == Dims::TooLarge)
        break;
      void *dy = in.ptr(), *db = in.ptr();
      check("te_rt_bias_grad", te_rt_bias_grad(ctx, dtype, dy, db, rows, cols),
            d == Dims::Invalid || badDtype || !dy || !db);
      break;
    }
    case 11:
    case 12: {
      int64_t n;
      if (__builtin_mul_overflow(in.dim(), in.dim(), &n))
        break;
      Dims d = n < 0 ? Dims::Invalid : n > 4096 ? Dims::TooLarge : Dims::Fits;
      if (d == Dims::TooLarge)
        break;
      void *a = in.ptr(), *b = in.ptr(), *out = in.ptr();
      if (which == 11)
        check("te_rt_add", te_rt_add(ctx, dtype, a, b, out, n),
              d == Dims::Invalid || badDtype || !a || !b || !out);
      else
        check("te_rt_cast", te_rt_cast(ctx, dtype, in.code(3), a, out, n),
              d == Dims::Invalid || badDtype || !a || !out);
      break;
    }
    case 13: {
      int64_t rows = in.dim(), cols = in.dim();
      Dims d = classify({rows, cols});
      if (d == Dims::TooLarge)
        break;
      void *src = in.ptr(), *dst = in.ptr();
      check("te_rt_transpose",
            te_rt_transpose(ctx, dtype, src, dst, rows, cols),
            d == Dims::Invalid || badDtype || !src || !dst);
      // te.add_columnwise's call: the byte transpose with the scale carried
      // (an overlap of the buffers the fuzzer picked is refused by name).
      float *si = static_cast<float *>(in.ptr()),
            *so = static_cast<float *>(in.ptr());
      check("te_rt_add_columnwise_fp8",
            te_rt_add_columnwise_fp8(ctx, src, si, rows, cols, dst, so),
            d == Dims::Invalid || !src || !si || !dst || !so);
      break;
    }
    case 14: {
      int64_t bytes;
      if (__builtin_mul_overflow(in.dim(), 64, &bytes) ||
          bytes > int64_t(kBufferBytes))
        break;
      void *a = in.ptr(), *b = in.ptr();
      check("te_rt_copy", te_rt_copy(ctx, a, b, bytes), bytes < 0 || !a || !b);
      check("te_rt_zero", te_rt_zero(ctx, a, bytes), bytes < 0 || !a);
      break;
    }
    case 15: {
      int64_t rows = in.dim(), cols = in.dim();
      Dims d = classify({rows, cols});
      if (d == Dims::TooLarge)
        break;
      int32_t format = in.code(2);
      void *x = in.ptr(), *q = in.ptr(), *t = in.ptr();
      float *scale = in.byte() & 1 ? static_cast<float *>(in.ptr()) : nullptr;
      float *si = static_cast<float *>(in.ptr()),
            *amax = static_cast<float *>(in.ptr());
      if (scale)
        scale[0] = in.real();
      check("te_rt_quantize_fp8",
            te_rt_quantize_fp8(ctx, dtype, x, rows, cols, format, scale,
                               in.flag(), q, t, si, amax, nullptr),
            d == Dims::Invalid || badDtype || !x || !si ||
                (format != 0 && format != 1));
      // The same cast with the bias gradient fused (after the plain one:
      // the inputs read before stay what they were).
      void *db = in.ptr();
      check("te_rt_dbias_quantize_fp8",
            te_rt_dbias_quantize_fp8(ctx, dtype, x, rows, cols, format, scale,
                                     in.flag(), q, t, si, amax, db),
            d == Dims::Invalid || badDtype || !x || !si || !db ||
                (format != 0 && format != 1) || (!q && !t));
      break;
    }
    case 16: {
      int64_t m = in.dim(), n = in.dim(), k = in.dim();
      Dims d = classify({m, n, k});
      if (d == Dims::TooLarge)
        break;
      void *a = in.ptr(), *b = in.ptr(), *out = in.ptr();
      float *as = static_cast<float *>(in.ptr()),
            *bs = static_cast<float *>(in.ptr());
      check("te_rt_gemm_fp8",
            te_rt_gemm_fp8(ctx, dtype, in.code(2), a, as, in.code(2), b, bs,
                           in.ptr(), out, m, n, k, in.flag(), in.flag()),
            d == Dims::Invalid || badDtype || !a || !b || !out || !as || !bs);
      break;
    }
    case 17: {
      int32_t kind = in.code(2);
      int64_t rows = in.dim(), cols = in.dim();
      Dims d = classify({rows, cols});
      if (d == Dims::TooLarge)
        break;
      bool rms = kind == TE_RT_NORM_RMSNORM;
      void *x = in.ptr(), *g = in.ptr(), *b = rms ? nullptr : in.ptr();
      float *mu = rms ? nullptr : static_cast<float *>(in.ptr());
      float *rs = static_cast<float *>(in.ptr()),
            *si = static_cast<float *>(in.ptr()),
            *amax = static_cast<float *>(in.ptr());
      void *q = in.ptr(), *t = in.ptr();
      check("te_rt_norm_quantize_fp8",
            te_rt_norm_quantize_fp8(ctx, kind, dtype, x, g, b, in.real(),
                                    in.flag(), rows, cols, mu, rs, in.code(2),
                                    nullptr, in.flag(), q, t, si, amax),
            d == Dims::Invalid || badDtype || !x || !g || !rs || !si ||
                (!q && !t));
      break;
    }
    case 18: {
      int64_t len = in.dim(), n = in.dim();
      Dims d = classify({len, n});
      if (d == Dims::TooLarge)
        break;
      float *h = static_cast<float *>(in.ptr()),
            *s = static_cast<float *>(in.ptr()),
            *a = static_cast<float *>(in.ptr()),
            *nh = static_cast<float *>(in.ptr()),
            *ns = static_cast<float *>(in.ptr());
      float fp8Max = in.real();
      int32_t margin = in.code(8), recent = in.flag();
      bool invalid = d == Dims::Invalid || !h || !s || !a || !nh || !ns;
      if (!in.flag()) {
        check("te_rt_amax_update",
              te_rt_amax_update(ctx, h, s, a, len, n, fp8Max, margin, recent,
                                nh, ns),
              invalid);
        break;
      }
      // Mostly a mask of the n slots, sometimes any 64 bits: a bit at or
      // above n, or any bit with n > 64, is an error.
      uint64_t unused = in.raw<uint64_t>();
      if (in.byte() < 192 && n >= 0 && n < 64)
        unused &= (uint64_t(1) << n) - 1;
      bool badMask =
          unused != 0 && (n > 64 || (n >= 0 && n < 64 && (unused >> n) != 0));
      // te_rt_amax_update_fork has _unused's arguments and checks (the cpu
      // backend runs it in order).
      if (in.flag())
        check("te_rt_amax_update_fork",
              te_rt_amax_update_fork(ctx, h, s, a, len, n, fp8Max, margin,
                                     recent, int64_t(unused), nh, ns),
              invalid || badMask);
      else
        check("te_rt_amax_update_unused",
              te_rt_amax_update_unused(ctx, h, s, a, len, n, fp8Max, margin,
                                       recent, int64_t(unused), nh, ns),
              invalid || badMask);
      break;
    }
    case 19: {
      int64_t rows = in.dim(), cols = in.dim();
      Dims d = classify({rows, cols});
      if (d == Dims::TooLarge)
        break;
      void *x = in.ptr(), *q = in.ptr(), *cq = in.ptr();
      float *s = static_cast<float *>(in.ptr()),
            *cs = static_cast<float *>(in.ptr());
      check("te_rt_quantize_fp8_block",
            te_rt_quantize_fp8_block(ctx, dtype, x, rows, cols, in.flag(),
                                     in.flag(), q, s, cq, cs),
            d == Dims::Invalid || badDtype || !x);
      break;
    }
    case 20: {
      int64_t rows = in.dim(), cols = in.dim();
      Dims d = classify({rows, cols});
      if (d == Dims::TooLarge)
        break;
      void *x = in.ptr(), *q = in.ptr(), *cq = in.ptr();
      uint8_t *s = static_cast<uint8_t *>(in.ptr()),
              *cs = static_cast<uint8_t *>(in.ptr());
      check("te_rt_quantize_mxfp8",
            te_rt_quantize_mxfp8(ctx, dtype, x, rows, cols, in.code(2),
                                 in.flag(), q, s, cq, cs),
            d == Dims::Invalid || badDtype || !x);
      break;
    }
    case 21: {
      int64_t rows = in.dim(), cols = in.dim();
      Dims d = classify({rows, cols});
      if (d == Dims::TooLarge)
        break;
      void *x = in.ptr(), *q = in.ptr(), *cq = in.ptr();
      uint8_t *s = static_cast<uint8_t *>(in.ptr()),
              *cs = static_cast<uint8_t *>(in.ptr());
      float *a = static_cast<float *>(in.ptr()),
            *ca = static_cast<float *>(in.ptr());
      check("te_rt_quantize_nvfp4",
            te_rt_quantize_nvfp4(ctx, dtype, x, rows, cols, in.flag(),
                                 in.flag(), in.flag(), in.raw<uint64_t>(),
                                 in.flag(), q, s, a, cq, cs, ca),
            d == Dims::Invalid || badDtype || !x);
      break;
    }
    case 22: {
      int64_t m = in.dim(), n = in.dim(), k = in.dim();
      Dims d = classify({m, n, k});
      if (d == Dims::TooLarge)
        break;
      int32_t which2 = in.code(3);
      void *a = in.ptr(), *b = in.ptr(), *out = in.ptr(), *bias = in.ptr();
      void *as = in.ptr(), *bs = in.ptr();
      bool must = d == Dims::Invalid || badDtype || !a || !b || !out;
      if (which2 == 0)
        check("te_rt_gemm_fp8_block",
              te_rt_gemm_fp8_block(ctx, dtype, a, static_cast<float *>(as),
                                   in.flag(), b, static_cast<float *>(bs),
                                   in.flag(), bias, out, m, n, k, in.flag()),
              must);
      else if (which2 == 1)
        check("te_rt_gemm_mxfp8",
              te_rt_gemm_mxfp8(
                  ctx, dtype, in.code(2), a, static_cast<uint8_t *>(as),
                  in.flag(), in.code(2), b, static_cast<uint8_t *>(bs),
                  in.flag(), in.flag(), bias, out, m, n, k, in.flag()),
              must);
      else
        check("te_rt_gemm_nvfp4",
              te_rt_gemm_nvfp4(ctx, dtype, a, static_cast<uint8_t *>(as),
                               static_cast<float *>(in.ptr()), b,
                               static_cast<uint8_t *>(bs),
                               static_cast<float *>(in.ptr()), in.flag(), bias,
                               out, m, n, k, in.flag()),
              must);
      break;
    }
    case 23: {
      int32_t act = in.code(TE_RT_ACT_COUNT + 1);
      int64_t rows = in.dim(), cols = in.dim();
      Dims d = classify({rows, cols});
      if (d == Dims::TooLarge)
        break;
      void *x = in.ptr(), *dy = in.ptr(), *db = in.ptr(), *q = in.ptr(),
           *t = in.ptr();
      float *scale = static_cast<float *>(in.ptr()),
            *si = static_cast<float *>(in.ptr()),
            *amax = static_cast<float *>(in.ptr());
      if (scale)
        scale[0] = in.real();
      float limit = in.real(), alpha = in.real(), offset = in.real();
      int32_t format = in.code(2);
      bool must = d == Dims::Invalid || badDtype || act < 0 ||
                  act >= TE_RT_ACT_COUNT || !x || !scale || !si ||
                  (format != 0 && format != 1);
      if (in.flag())
        check("te_rt_act_quantize_fp8",
              te_rt_act_quantize_fp8(ctx, act, dtype, x, rows, cols, limit,
                                     alpha, offset, format, scale, q, t, si,
                                     amax),
              must);
      else
        check("te_rt_dact_quantize_fp8",
              te_rt_dact_quantize_fp8(ctx, act, dtype, dy, x, db, rows, cols,
                                      limit, alpha, offset, format, scale, q, t,
                                      si, amax),
              must || !dy);
      break;
    }
    case 25: {
      // A branch's brackets in any order: begin inside a run, end outside
      // one, join inside one and a run below -1 must fail; the rest pass.
      // A failing call leaves the context as it was; the entry's end
      // (te_rt_arena_release) closes an open run.
      for (int k = 1 + in.byte() % 6; k > 0; --k) {
        switch (in.byte() % 4) {
        case 0:
          check("te_rt_branch_begin", te_rt_branch_begin(ctx), inRun);
          inRun = true;
          break;
        case 1:
          check("te_rt_branch_end", te_rt_branch_end(ctx), !inRun);
          inRun = false;
          break;
        case 2: {
          int64_t run = in.byte() < 128 ? int64_t(in.byte() % 8) - 3 : in.dim();
          check("te_rt_branch_join", te_rt_branch_join(ctx, run),
                inRun || run < -1);
          break;
        }
        default:
          te_rt_arena_release(ctx, nullptr);
          inRun = false;
          break;
        }
      }
      break;
    }
    default: {
      int64_t value = in.raw<int64_t>(), multiple = in.dim();
      check("te_rt_check_multiple",
            te_rt_check_multiple(ctx, value, multiple,
                                 "fuzz: recipe r needs "
                                 "d0 % m == 0"),
            multiple <= 0 || value % (multiple > 0 ? multiple : 1) != 0);
      // Allocations: negative or beyond any machine (errors promised), or
      // small; real multi-GiB ones are not this target's business.
      int64_t bytes = in.dim();
      bool refused = bytes < 0 || bytes > (int64_t(1) << 48);
      if (refused || bytes <= (int64_t(1) << 20)) {
        void *p = te_rt_alloc(ctx, bytes);
        if (refused != (p == nullptr))
          std::abort();
        check("te_rt_alloc", p ? 0 : 1, refused);
        te_rt_free(ctx, p);
      }
      break;
    }
    }
  }
  te_rt_arena_release(ctx, nullptr);
  return 0;
}
