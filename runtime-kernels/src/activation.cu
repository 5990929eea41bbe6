//===- activation.cu - Activations and their derivatives ------------------===//
//
// te_kernels_act_fwd, te_kernels_act_bwd and te_kernels_dbias_dact: the
// 13 activations of act.cuh (lib/Runtime/cpu/Reference.cpp's formulas)
// and their derivatives in fp32, each output rounded once; 16-byte
// accesses where the pointers and rows allow. The kernels optionally
// reduce the amax of what they store (an atomicMax per block: max is
// order-independent), for a current-scaling FP8 quantization of their
// output that then skips its own amax pass (te_kernels_quantize_fp8's
// amax_in). dbias is deterministic: fixed row chunks summed per column,
// then the chunk partials summed in order.
//
//===----------------------------------------------------------------------===//

#include "act.cuh"
#include "launch.cuh"

#include <algorithm>
#include <type_traits>

using namespace te::kernels;

namespace {

/// Calls fn(std::true_type{}) when the optional amax output is given, else
/// fn(std::false_type{}): the producer kernels are instantiated with and
/// without their amax reduction (kAmax).
template <typename Fn> const char *withAmax(const float *amax, Fn fn) {
  return amax ? fn(std::true_type{}) : fn(std::false_type{});
}

/// The grid of a grid-stride producer kernel over n items: gridFor(n), or
/// with its amax reduction (kAmax) at most 32 blocks per multiprocessor.
/// On the H200 (8192x4096), one block per 256 items made the blocks'
/// reductions cost 15-30% of the kernel; 16 blocks per multiprocessor
/// slowed the f32 kernels (too few loads in flight), 64 the bf16 ones.
template <bool kAmax> unsigned producerGrid(int64_t n) {
  if constexpr (kAmax)
    return static_cast<unsigned>(
        std::min<int64_t>(gridFor(n), int64_t(32) * smCount()));
  return gridFor(n);
}

// The producers' amax (kAmax; te_rt_act_fwd's amax, ...): each thread
// keeps max |v| over the fp32 values v it rounds and stores (one max per
// element, NaN skipped) in a register, rounds that maximum to E once, and
// blockAmax folds the block's into the zeroed cell at the end (every
// thread reaches it: grid-stride loops, no early return). Rounding to
// nearest even is monotone and odd (|r(v)| = r(|v|)), so r(max |v|) is
// exactly the max |r(v)| of the stored values. The amax variants run on a
// capped grid (producerGrid: fewer block reductions and atomics, each
// thread looping over several vectors), the vectorized ones with at most
// 32 registers a thread. Without an amax the kernels are instantiated with
// kAmax false, on their usual grid, and do nothing more than before.

/// E::store(v), with kAmax m = max(m, |v|) (NaN skipped).
template <typename E, bool kAmax>
__device__ inline typename E::T storeFold(float v, float &m) {
  if constexpr (kAmax)
    m = fmaxf(m, fabsf(v));
  return E::store(v);
}

/// The block's amax of the stored values: m rounded to E (see above).
template <typename E> __device__ inline void blockAmaxOf(float m, AmaxOut amax) {
  blockAmax(E::load(E::store(m)), amax);
}

/// Activation forward with 16-byte accesses: non-gated over n / N vectors,
/// gated over rows of yCols / N vectors (a at j, b at yCols + j). The body
/// of actFwdVecKernel and actFwdVecAmaxKernel.
template <typename E, bool kAmax>
__device__ __forceinline__ void
actFwdVec(ActParams p, bool gated, const typename E::T *x, typename E::T *y,
          int64_t rows, int64_t yCols, AmaxOut amax) {
  using T = typename E::T;
  constexpr int N = 16 / sizeof(T);
  using V = Vec<T, N>;
  const int64_t rowVecs = yCols / N, nv = rows * rowVecs;
  const int fn = actFn(p.act);
  float m = 0.0f;
  for (int64_t v = globalId(); v < nv; v += globalStride()) {
    V out;
    if (!gated) {
      V in = reinterpret_cast<const V *>(x)[v];
      byActFn(fn, [&](auto act) {
        const int a = withAct<decltype(act)::value>(p).act;
#pragma unroll
        for (int e = 0; e < N; ++e)
          out.v[e] = storeFold<E, kAmax>(actF(a, E::load(in.v[e])), m);
      });
    } else {
      int64_t i = v / rowVecs, jv = v - i * rowVecs;
      const V *row = reinterpret_cast<const V *>(x + i * 2 * yCols);
      V a = row[jv], b = row[rowVecs + jv];
      byActFn(fn, [&](auto act) {
        const ActParams q = withAct<decltype(act)::value>(p);
#pragma unroll
        for (int e = 0; e < N; ++e)
          out.v[e] = storeFold<E, kAmax>(
              gatedF(q, E::load(a.v[e]), E::load(b.v[e])), m);
      });
    }
    reinterpret_cast<V *>(y)[v] = out;
  }
  if constexpr (kAmax)
    blockAmaxOf<E>(m, amax);
}

template <typename E>
__global__ void actFwdVecKernel(ActParams p, bool gated, const typename E::T *x,
                                typename E::T *y, int64_t rows, int64_t yCols,
                                AmaxOut amax) {
  gridWait();
  actFwdVec<E, false>(p, gated, x, y, rows, yCols, amax);
}

/// With the amax: at most 32 registers a thread, so that 8 blocks fit on a
/// multiprocessor (the amax's register would otherwise cost occupancy; on
/// the H200 a quarter of the bf16 kernels' speed with the capped grid).
template <typename E>
__global__ void __launch_bounds__(kThreads, 8)
    actFwdVecAmaxKernel(ActParams p, bool gated, const typename E::T *x,
                        typename E::T *y, int64_t rows, int64_t yCols,
                        AmaxOut amax) {
  gridWait();
  actFwdVec<E, true>(p, gated, x, y, rows, yCols, amax);
}

/// Fused dbias + dact of a non-gated activation with 16-byte accesses: each
/// thread owns N adjacent columns of one chunk of rows, writes dx and sums
/// the fp32 dact down its columns in row order (the order colPartial uses,
/// so dbias is the same as columnSums of Dact). colFinish adds the chunks;
/// with one chunk the sums go to dbiasOut rounded to E, the bits colFinish
/// would write (0.0f plus a sum that is never -0.0f).
/// Threads past the last column do nothing (with kAmax they still join the
/// block's amax reduction). N: the columns a thread owns (16 bytes' worth,
/// or 1 where that leaves too few threads: te_kernels_dbias_dact).
template <typename E, bool kAmax, int N>
__global__ void dbiasDactVecKernel(int act, const typename E::T *dy,
                                   const typename E::T *x, typename E::T *dx,
                                   int64_t rows, int64_t cols, int64_t chunk,
                                   float *partial, typename E::T *dbiasOut,
                                   AmaxOut amax) {
  gridWait();
  using T = typename E::T;
  using V = Vec<T, N>;
  const int64_t colVecs = cols / N;
  int64_t jv = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int fn = actFn(act);
  float m = 0.0f;
  if (jv < colVecs) {
    int64_t c = blockIdx.y;
    int64_t r0 = c * chunk, r1 = min(rows, r0 + chunk);
    float sum[N];
#pragma unroll
    for (int e = 0; e < N; ++e)
      sum[e] = 0.0f;
    const V *g = reinterpret_cast<const V *>(dy);
    const V *in = reinterpret_cast<const V *>(x);
    V *out = reinterpret_cast<V *>(dx);
    // kAhead rows' loads in flight before the first of them is used: dx
    // may alias dy or x, so the compiler cannot move a row's loads above
    // the previous row's store by itself, and a chunk's rows would each
    // wait a whole memory latency (16 rows: 13 us on an H100). The sums
    // stay in row order. (A thread's rows are its own column, so loading
    // ahead of its own stores reads nothing they write.)
    constexpr int kAhead = 4;
    for (int64_t i0 = r0; i0 < r1; i0 += kAhead) {
      V gv[kAhead], xv[kAhead];
#pragma unroll
      for (int u = 0; u < kAhead; ++u)
        if (i0 + u < r1) {
          gv[u] = g[(i0 + u) * colVecs + jv];
          xv[u] = in[(i0 + u) * colVecs + jv];
        }
#pragma unroll
      for (int u = 0; u < kAhead; ++u) {
        if (i0 + u >= r1)
          break;
        V d;
        byActFn(fn, [&](auto c) {
          const int a = decltype(c)::value >= 0 ? decltype(c)::value : act;
#pragma unroll
          for (int e = 0; e < N; ++e) {
            float v = E::load(gv[u].v[e]) * actDf(a, E::load(xv[u].v[e]));
            sum[e] += v;
            d.v[e] = storeFold<E, kAmax>(v, m);
          }
        });
        out[(i0 + u) * colVecs + jv] = d;
      }
    }
    if (dbiasOut) {
#pragma unroll
      for (int e = 0; e < N; ++e)
        dbiasOut[jv * N + e] = E::store(sum[e]);
    } else {
#pragma unroll
      for (int e = 0; e < N; ++e)
        partial[c * cols + jv * N + e] = sum[e];
    }
  }
  if constexpr (kAmax)
    blockAmaxOf<E>(m, amax);
}

/// Below this many threads of 16 bytes (chunks x column vectors),
/// te_kernels_dbias_dact gives each thread one column instead (8192 at
/// most: 16 tokens x 16384 columns of bf16 is 2048; 8192 tokens x 16384,
/// 128 chunks, is 262144).
constexpr int64_t kNarrowThreads = 8192;

/// Activation backward with 16-byte accesses (see actFwdVec).
template <typename E, bool kAmax>
__device__ __forceinline__ void
actBwdVec(ActParams p, bool gated, const typename E::T *dy,
          const typename E::T *x, typename E::T *dx, int64_t rows,
          int64_t yCols, AmaxOut amax) {
  using T = typename E::T;
  constexpr int N = 16 / sizeof(T);
  using V = Vec<T, N>;
  const int64_t rowVecs = yCols / N, nv = rows * rowVecs;
  const int fn = actFn(p.act);
  float m = 0.0f;
  for (int64_t v = globalId(); v < nv; v += globalStride()) {
    V g = reinterpret_cast<const V *>(dy)[v];
    if (!gated) {
      V in = reinterpret_cast<const V *>(x)[v], out;
      byActFn(fn, [&](auto act) {
        const int a = withAct<decltype(act)::value>(p).act;
#pragma unroll
        for (int e = 0; e < N; ++e)
          out.v[e] = storeFold<E, kAmax>(
              E::load(g.v[e]) * actDf(a, E::load(in.v[e])), m);
      });
      reinterpret_cast<V *>(dx)[v] = out;
      continue;
    }
    int64_t i = v / rowVecs, jv = v - i * rowVecs;
    const V *row = reinterpret_cast<const V *>(x + i * 2 * yCols);
    V *drow = reinterpret_cast<V *>(dx + i * 2 * yCols);
    V a = row[jv], b = row[rowVecs + jv], da, db;
    byActFn(fn, [&](auto act) {
      const ActParams q = withAct<decltype(act)::value>(p);
#pragma unroll
      for (int e = 0; e < N; ++e) {
        float fa, fb;
        gatedDf(q, E::load(a.v[e]), E::load(b.v[e]), E::load(g.v[e]), fa, fb);
        da.v[e] = storeFold<E, kAmax>(fa, m);
        db.v[e] = storeFold<E, kAmax>(fb, m);
      }
    });
    drow[jv] = da;
    drow[rowVecs + jv] = db;
  }
  if constexpr (kAmax)
    blockAmaxOf<E>(m, amax);
}

template <typename E>
__global__ void actBwdVecKernel(ActParams p, bool gated,
                                const typename E::T *dy, const typename E::T *x,
                                typename E::T *dx, int64_t rows, int64_t yCols,
                                AmaxOut amax) {
  gridWait();
  actBwdVec<E, false>(p, gated, dy, x, dx, rows, yCols, amax);
}

/// With the amax (see actFwdVecAmaxKernel).
template <typename E>
__global__ void __launch_bounds__(kThreads, 8)
    actBwdVecAmaxKernel(ActParams p, bool gated, const typename E::T *dy,
                        const typename E::T *x, typename E::T *dx, int64_t rows,
                        int64_t yCols, AmaxOut amax) {
  gridWait();
  actBwdVec<E, true>(p, gated, dy, x, dx, rows, yCols, amax);
}

/// out[k] = v rounded to E, with kAmax m = max(m, |v|) (the element-wise
/// kernels' store).
template <typename E, bool kAmax>
__device__ inline void put(typename E::T *out, int64_t k, float v, float &m) {
  out[k] = storeFold<E, kAmax>(v, m);
}

template <typename E, bool kAmax>
__global__ void actFwdKernel(ActParams p, bool gated, const typename E::T *x,
                             typename E::T *y, int64_t rows, int64_t cols,
                             AmaxOut amax) {
  gridWait();
  int64_t yCols = gated ? cols / 2 : cols, n = rows * yCols;
  float m = 0.0f;
  for (int64_t k = globalId(); k < n; k += globalStride()) {
    if (!gated) {
      put<E, kAmax>(y, k, actF(p.act, E::load(x[k])), m);
      continue;
    }
    int64_t i = k / yCols, j = k - i * yCols;
    put<E, kAmax>(y, k,
                  gatedF(p, E::load(x[i * cols + j]),
                         E::load(x[i * cols + yCols + j])),
                  m);
  }
  if constexpr (kAmax)
    blockAmaxOf<E>(m, amax);
}

/// dy * act'(x) of a non-gated activation, in fp32.
template <typename E> struct Dact {
  int act;
  const typename E::T *dy, *x;
  int64_t cols;
  __device__ float at(int64_t k) const {
    return E::load(dy[k]) * actDf(act, E::load(x[k]));
  }
  __device__ float2 operator()(int64_t i, int64_t j) const {
    return make_float2(at(i * cols + j), 0.0f);
  }
};

template <typename E, bool kAmax>
__global__ void actBwdKernel(ActParams p, bool gated, const typename E::T *dy,
                             const typename E::T *x, typename E::T *dx,
                             int64_t rows, int64_t cols, AmaxOut amax) {
  gridWait();
  int64_t yCols = gated ? cols / 2 : cols, n = rows * yCols;
  Dact<E> dact{p.act, dy, x, cols};
  float m = 0.0f;
  for (int64_t k = globalId(); k < n; k += globalStride()) {
    if (!gated) {
      put<E, kAmax>(dx, k, dact.at(k), m);
      continue;
    }
    int64_t i = k / yCols, j = k - i * yCols;
    int64_t ia = i * cols + j, ib = ia + yCols;
    float da, db;
    gatedDf(p, E::load(x[ia]), E::load(x[ib]), E::load(dy[k]), da, db);
    put<E, kAmax>(dx, ia, da, m);
    put<E, kAmax>(dx, ib, db, m);
  }
  if constexpr (kAmax)
    blockAmaxOf<E>(m, amax);
}

} // namespace

extern "C" {

const char *te_kernels_act_fwd(te_kernels_state *s, int act, int dtype,
                               const void *x, void *y, int64_t rows,
                               int64_t cols, float limit, float alpha,
                               float offset, float *amax) {
  bool gated = isGated(act);
  int64_t n = rows * (gated ? cols / 2 : cols);
  if (n == 0) // the amax of an empty output (no kernel writes it)
    return amax ? zeroAmax(s->stream, amax) : nullptr;
  const AmaxOut out = amaxOut(s, amax);
  return byDtype(dtype, [&](auto e) {
    return withAmax(amax, [&](auto amaxOn) {
      using E = decltype(e);
      using T = typename E::T;
      constexpr bool A = decltype(amaxOn)::value;
      constexpr int N = 16 / sizeof(T);
      int64_t yCols = gated ? cols / 2 : cols;
      if (aligned16(x) && aligned16(y) && yCols % N == 0) {
        auto kernel = A ? actFwdVecAmaxKernel<E> : actFwdVecKernel<E>;
        launchKernel(s, kernel, producerGrid<A>(n / N), kThreads, 0,
                     ActParams{act, limit, alpha, offset}, gated,
                     static_cast<const T *>(x), static_cast<T *>(y), rows,
                     yCols, out);
        return launched();
      }
      launchKernel(s, actFwdKernel<E, A>, producerGrid<A>(n), kThreads, 0,
                   ActParams{act, limit, alpha, offset}, gated,
                   static_cast<const T *>(x), static_cast<T *>(y), rows, cols,
                   out);
      return launched();
    });
  });
}

const char *te_kernels_act_bwd(te_kernels_state *s, int act, int dtype,
                               const void *dy, const void *x, void *dx,
                               int64_t rows, int64_t cols, float limit,
                               float alpha, float offset, float *amax) {
  bool gated = isGated(act);
  int64_t n = rows * (gated ? cols / 2 : cols);
  if (n == 0) // the amax of an empty output (no kernel writes it)
    return amax ? zeroAmax(s->stream, amax) : nullptr;
  const AmaxOut out = amaxOut(s, amax);
  return byDtype(dtype, [&](auto e) {
    return withAmax(amax, [&](auto amaxOn) {
      using E = decltype(e);
      using T = typename E::T;
      constexpr bool A = decltype(amaxOn)::value;
      constexpr int N = 16 / sizeof(T);
      int64_t yCols = gated ? cols / 2 : cols;
      if (aligned16(dy) && aligned16(x) && aligned16(dx) && yCols % N == 0) {
        auto kernel = A ? actBwdVecAmaxKernel<E> : actBwdVecKernel<E>;
        launchKernel(s, kernel, producerGrid<A>(n / N), kThreads, 0,
                     ActParams{act, limit, alpha, offset}, gated,
                     static_cast<const T *>(dy), static_cast<const T *>(x),
                     static_cast<T *>(dx), rows, yCols, out);
        return launched();
      }
      launchKernel(s, actBwdKernel<E, A>, producerGrid<A>(n), kThreads, 0,
                   ActParams{act, limit, alpha, offset}, gated,
                   static_cast<const T *>(dy), static_cast<const T *>(x),
                   static_cast<T *>(dx), rows, cols, out);
      return launched();
    });
  });
}

const char *te_kernels_dbias_dact(te_kernels_state *s, int act, int dtype,
                                  const void *dy, const void *x, void *dx,
                                  void *dbias, int64_t rows, int64_t cols,
                                  float limit, float alpha, float offset,
                                  float *amax) {
  if (rows > 0 && cols > 0 && aligned16(dy) && aligned16(x) && aligned16(dx) &&
      cols % (dtype == 0 ? 4 : 8) == 0)
    return byDtype(dtype, [&](auto e) -> const char * {
      using E = decltype(e);
      using T = typename E::T;
      constexpr int N = 16 / sizeof(T);
      int64_t chunk = chunkRows(rows), chunks = (rows + chunk - 1) / chunk;
      // One chunk: its sums are dbias (no partials, no colFinish launch).
      T *direct = chunks == 1 ? static_cast<T *>(dbias) : nullptr;
      float *partial = nullptr;
      if (!direct)
        if (const char *err = scratch(s, chunks * cols, &partial))
          return err;
      // A thread's time is its chunk's rows x its columns' activation
      // derivatives, one after another. Few rows (one chunk) of few columns
      // leave a block or two of 16-byte threads (16 x 1024 bf16: 128
      // threads, 128 derivatives each, 9 us on an H100): there a thread
      // takes one column, N times the threads. The sums and outputs are
      // the same either way (each column's in row order).
      const bool narrow = chunks * (cols / N) < kNarrowThreads;
      const int64_t perThread = narrow ? 1 : N;
      dim3 grid(static_cast<unsigned>(
                    (cols / perThread + kThreads - 1) / kThreads),
                static_cast<unsigned>(chunks));
      if (const char *err = withAmax(amax, [&](auto amaxOn) {
            constexpr bool A = decltype(amaxOn)::value;
            launchKernel(s,
                         narrow ? dbiasDactVecKernel<E, A, 1>
                                : dbiasDactVecKernel<E, A, N>,
                         grid, kThreads, 0, act, static_cast<const T *>(dy),
                         static_cast<const T *>(x), static_cast<T *>(dx), rows,
                         cols, chunk, partial, direct, amaxOut(s, amax));
            return launched();
          }))
        return err;
      if (direct)
        return nullptr;
      launchKernel(s, colFinish<E>, gridFor(cols), kThreads, 0, partial, chunks,
                   cols, static_cast<T *>(dbias));
      return launched();
    });
  // Unaligned or ragged: the column sums, then the element-wise dact
  // (which reduces the amax). In this order dx may be dy's or x's buffer
  // (the memory plan writes it over the one that dies here): the sums
  // recompute the fp32 dact from dy and x (not the rounded dx) before the
  // dact overwrites them, element i read before element i is written.
  if (const char *err = byDtype(dtype, [&](auto e) {
        using E = decltype(e);
        using T = typename E::T;
        return columnSums<E>(s,
                             Dact<E>{act, static_cast<const T *>(dy),
                                     static_cast<const T *>(x), cols},
                             rows, cols, static_cast<T *>(dbias), nullptr);
      }))
    return err;
  return te_kernels_act_bwd(s, act, dtype, dy, x, dx, rows, cols, limit, alpha,
                            offset, amax);
}

} // extern "C"
