//===- elementwise.cu - Add, bias, cast, transpose, zeroing ---------------===//
//
// te_kernels_add, _bias_add, _cast, _transpose, _transpose_bytes (also the
// norm-cast's columnwise copy: transposeBytes), _bias_grad and
// _zero_ranges (one launch for up to TE_RT_ZERO_RANGES_PER_LAUNCH byte
// ranges, passed by value), and the GEMMs' bias helpers (broadcastRows,
// biasGrad). fp32 math, each output rounded once, to nearest even, with
// the CPU backend's bit conversions; bias gradients are deterministic
// column sums (launch.cuh).
//
//===----------------------------------------------------------------------===//

#include "launch.cuh"
#include "te/Runtime/TERuntime.h" // TE_RT_ZERO_RANGES_PER_LAUNCH

#include <algorithm>

using namespace te::kernels;

namespace {

/// dy at (i, j): the terms of the bias gradient.
template <typename E> struct Load2D {
  const typename E::T *p;
  int64_t cols;
  __device__ float2 operator()(int64_t i, int64_t j) const {
    return make_float2(E::load(p[i * cols + j]), 0.0f);
  }
};

/// c = a + b; N elements per 16-byte access when vec (all aligned).
template <typename E>
__global__ void addKernel(const typename E::T *a, const typename E::T *b,
                          typename E::T *c, int64_t n, bool vec) {
  gridWait();
  using T = typename E::T;
  constexpr int N = 16 / sizeof(T);
  int64_t done = 0;
  if (vec) {
    using V = Vec<T, N>;
    int64_t nv = n / N;
    for (int64_t i = globalId(); i < nv; i += globalStride()) {
      V va = reinterpret_cast<const V *>(a)[i];
      V vb = reinterpret_cast<const V *>(b)[i];
      V vc;
#pragma unroll
      for (int e = 0; e < N; ++e)
        vc.v[e] = E::store(E::load(va.v[e]) + E::load(vb.v[e]));
      reinterpret_cast<V *>(c)[i] = vc;
    }
    done = nv * N;
  }
  for (int64_t i = done + globalId(); i < n; i += globalStride())
    c[i] = E::store(E::load(a[i]) + E::load(b[i]));
}

/// out[r, c] = x[r, c] + bias[c] (te_rt_bias_add; out may be x). With vec
/// (x, bias and out 16-byte aligned and cols a multiple of N) each thread
/// adds N elements of one row per 16-byte access.
template <typename E>
__global__ void biasAddKernel(const typename E::T *x, const typename E::T *bias,
                              typename E::T *out, int64_t n, int64_t cols,
                              bool vec) {
  gridWait();
  using T = typename E::T;
  constexpr int N = 16 / sizeof(T);
  if (vec) {
    using V = Vec<T, N>;
    int64_t nv = n / N, colVecs = cols / N;
    for (int64_t i = globalId(); i < nv; i += globalStride()) {
      V vx = reinterpret_cast<const V *>(x)[i];
      V vb = reinterpret_cast<const V *>(bias)[i % colVecs];
      V vo;
#pragma unroll
      for (int e = 0; e < N; ++e)
        vo.v[e] = E::store(E::load(vx.v[e]) + E::load(vb.v[e]));
      reinterpret_cast<V *>(out)[i] = vo;
    }
    return;
  }
  for (int64_t i = globalId(); i < n; i += globalStride())
    out[i] = E::store(E::load(x[i]) + E::load(bias[i % cols]));
}

/// dst = D(S(src)); widening to fp32 is exact, so one rounding.
template <typename S, typename D>
__global__ void castKernel(const typename S::T *src, typename D::T *dst,
                           int64_t n, bool vec) {
  gridWait();
  constexpr int N = 4;
  int64_t done = 0;
  if (vec) {
    using VS = Vec<typename S::T, N>;
    using VD = Vec<typename D::T, N>;
    int64_t nv = n / N;
    for (int64_t i = globalId(); i < nv; i += globalStride()) {
      VS vs = reinterpret_cast<const VS *>(src)[i];
      VD vd;
#pragma unroll
      for (int e = 0; e < N; ++e)
        vd.v[e] = D::store(S::load(vs.v[e]));
      reinterpret_cast<VD *>(dst)[i] = vd;
    }
    done = nv * N;
  }
  for (int64_t i = done + globalId(); i < n; i += globalStride())
    dst[i] = D::store(S::load(src[i]));
}

/// dst[cols, rows] = src[rows, cols]^T through 32x32 shared-memory tiles.
template <typename T>
__global__ void transposeKernel(const T *src, T *dst, int64_t rows,
                                int64_t cols) {
  gridWait();
  __shared__ T tile[32][33];
  int64_t tilesY = (rows + 31) / 32;
  for (int64_t by = blockIdx.y; by < tilesY; by += gridDim.y) {
    int64_t i0 = by * 32, j0 = static_cast<int64_t>(blockIdx.x) * 32;
    for (int r = threadIdx.y; r < 32; r += blockDim.y) {
      int64_t i = i0 + r, j = j0 + threadIdx.x;
      if (i < rows && j < cols)
        tile[r][threadIdx.x] = src[i * cols + j];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < 32; r += blockDim.y) {
      int64_t j = j0 + r, i = i0 + threadIdx.x;
      if (i < rows && j < cols)
        dst[j * rows + i] = tile[threadIdx.x][r];
    }
    __syncthreads();
  }
}

/// dst [cols, rows] = src [rows, cols]^T over bytes (the columnwise copy of
/// FP8 data): kRows x 64 tiles through a swizzled shared-memory tile, 8-byte
/// row loads (kRows / 32 per thread, all in flight before the tile is read)
/// and 8-byte transposed stores by quads where the tile is whole and
/// aligned, byte by byte elsewhere. 128-row tiles keep twice the bytes in
/// flight per thread: a 64-row tile's loads alone left the copy at 60% of
/// the H100's bandwidth. With `carryTo` the first thread copies *carryFrom
/// there (an FP8 tensor's scale_inv beside its columnwise copy: no copy
/// launch).
template <int kRows>
__global__ void __launch_bounds__(kThreads)
    transposeBytesKernel(const uint8_t *src, uint8_t *dst, int64_t rows,
                         int64_t cols, bool vecLoad, bool vecStore,
                         const float *carryFrom, float *carryTo) {
  gridWait();
  if (carryTo && blockIdx.x == 0 && threadIdx.x == 0)
    *carryTo = *carryFrom;
  constexpr int kT = 64;                               // tile columns
  constexpr int kLoads = kRows * (kT / 8) / kThreads;  // 8-byte loads each
  static_assert(kLoads >= 1 && kLoads * kThreads == kRows * (kT / 8),
                "tile shape");
  __shared__ __align__(16) uint8_t tile[kRows * kT];
  const int64_t tilesC = (cols + kT - 1) / kT,
                tiles = (rows + kRows - 1) / kRows * tilesC;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t r0 = t / tilesC * kRows, c0 = t % tilesC * kT;
    const bool full = r0 + kRows <= rows && c0 + kT <= cols;
    if (full && vecLoad) {
      // kRows rows of 8 pieces of 8 bytes; a swizzled 8-byte pair stays
      // whole.
      uint2 piece[kLoads];
#pragma unroll
      for (int k = 0; k < kLoads; ++k) {
        const int id = threadIdx.x + k * kThreads, r = id / 8, p = id % 8;
        piece[k] = __ldg(reinterpret_cast<const uint2 *>(
            src + (r0 + r) * cols + c0 + 8 * p));
      }
#pragma unroll
      for (int k = 0; k < kLoads; ++k) {
        const int id = threadIdx.x + k * kThreads, r = id / 8, p = id % 8;
        *reinterpret_cast<uint2 *>(tile + swizzled<kT>(r, 8 * p)) = piece[k];
      }
    } else {
      for (int id = threadIdx.x; id < kRows * kT; id += kThreads) {
        const int r = id / kT, c = id % kT;
        if (r0 + r < rows && c0 + c < cols)
          tile[swizzled<kT>(r, c)] = src[(r0 + r) * cols + c0 + c];
      }
    }
    __syncthreads();
    // A whole tile with aligned rows leaves by quads (storeTileTransposed);
    // else byte by byte in 16-row pieces (storeTilePieces).
    if (full && vecStore)
      storeTileTransposed<kRows, kT>(tile, dst + c0 * rows + r0, rows);
    else
      storeTilePieces<kRows, kT>(tile, dst + c0 * rows + r0, rows, rows - r0,
                                 cols - c0, false);
    __syncthreads(); // the tile is refilled next
  }
}

/// The ranges of one te_kernels_zero_ranges launch, passed by value in the
/// kernel's parameters (2 KiB of the 4 KiB they may hold).
struct ZeroRanges {
  unsigned char *ptr[TE_RT_ZERO_RANGES_PER_LAUNCH];
  int64_t bytes[TE_RT_ZERO_RANGES_PER_LAUNCH];
};

/// Zeroes range blockIdx.y of `r`, the blocks along x striding over it:
/// single bytes up to its first 16-byte boundary and after its last one,
/// 16-byte stores between.
__global__ void zeroRangesKernel(ZeroRanges r) {
  gridWait();
  unsigned char *p = r.ptr[blockIdx.y];
  int64_t n = r.bytes[blockIdx.y];
  int64_t head = min(n, static_cast<int64_t>(
                            (16 - reinterpret_cast<uintptr_t>(p) % 16) % 16));
  int64_t nv = (n - head) / 16, tail = head + nv * 16;
  int64_t id = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  if (id < head) // head < 16 <= blockDim.x
    p[id] = 0;
  uint4 *v = reinterpret_cast<uint4 *>(p + head);
  for (int64_t i = id; i < nv; i += stride)
    v[i] = make_uint4(0, 0, 0, 0);
  if (id < n - tail) // n - tail < 16
    p[tail + id] = 0;
}

template <typename E>
__global__ void broadcastKernel(const typename E::T *bias, typename E::T *y,
                                int64_t rows, int64_t cols) {
  gridWait();
  int64_t n = rows * cols;
  for (int64_t k = globalId(); k < n; k += globalStride())
    y[k] = E::store(bias ? 0.0f + E::load(bias[k % cols]) : 0.0f);
}

} // namespace

namespace te::kernels {

const char *transposeBytes(te_kernels_state *s, const uint8_t *src,
                           uint8_t *dst, int64_t rows, int64_t cols,
                           const float *carryFrom, float *carryTo) {
  const bool vecLoad = aligned(src, 8) && cols % 8 == 0,
             vecStore = aligned(dst, 16) && rows % 16 == 0;
  const int64_t tilesC = (cols + 63) / 64;
  if (rows >= 128) {
    const int64_t tiles = (rows + 127) / 128 * tilesC;
    launchKernel(s, transposeBytesKernel<128>, blocksFor(tiles, smCount()),
                 kThreads, 0, src, dst, rows, cols, vecLoad, vecStore,
                 carryFrom, carryTo);
  } else {
    const int64_t tiles = (rows + 63) / 64 * tilesC;
    launchKernel(s, transposeBytesKernel<64>, blocksFor(tiles, smCount()),
                 kThreads, 0, src, dst, rows, cols, vecLoad, vecStore,
                 carryFrom, carryTo);
  }
  return launched();
}

const char *biasGrad(te_kernels_state *s, int dtype, const void *dy,
                     void *dbias, int64_t rows, int64_t cols) {
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::T;
    return columnSums<E>(s, Load2D<E>{static_cast<const T *>(dy), cols}, rows,
                         cols, static_cast<T *>(dbias), nullptr);
  });
}

const char *broadcastRows(te_kernels_state *s, int dtype, const void *bias,
                          void *y, int64_t rows, int64_t cols) {
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::T;
    launchKernel(s, broadcastKernel<E>, gridFor(rows * cols), kThreads, 0,
                 static_cast<const T *>(bias), static_cast<T *>(y), rows, cols);
    return launched();
  });
}

} // namespace te::kernels

namespace {
/// dst[cols, rows] = src[rows, cols]^T of T-sized elements: 32x32 tiles.
template <typename T>
const char *launchTranspose(te_kernels_state *s, const void *src, void *dst,
                            int64_t rows, int64_t cols) {
  if (rows == 0 || cols == 0)
    return nullptr;
  dim3 block(32, 8);
  dim3 grid(static_cast<unsigned>((cols + 31) / 32),
            static_cast<unsigned>(std::min<int64_t>((rows + 31) / 32, 65535)));
  launchKernel(s, transposeKernel<T>, grid, block, 0,
               static_cast<const T *>(src), static_cast<T *>(dst), rows, cols);
  return launched();
}
} // namespace

extern "C" {

const char *te_kernels_bias_grad(te_kernels_state *s, int dtype, const void *dy,
                                 void *dbias, int64_t rows, int64_t cols) {
  return biasGrad(s, dtype, dy, dbias, rows, cols);
}

const char *te_kernels_add(te_kernels_state *s, int dtype, const void *a,
                           const void *b, void *c, int64_t n) {
  if (n == 0)
    return nullptr;
  bool vec = aligned16(a) && aligned16(b) && aligned16(c);
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::T;
    launchKernel(s, addKernel<E>, gridFor(vec ? n / (16 / sizeof(T)) + 1 : n),
                 kThreads, 0, static_cast<const T *>(a),
                 static_cast<const T *>(b), static_cast<T *>(c), n, vec);
    return launched();
  });
}

const char *te_kernels_bias_add(te_kernels_state *s, int dtype, const void *x,
                                const void *bias, void *out, int64_t rows,
                                int64_t cols) {
  if (rows == 0 || cols == 0)
    return nullptr;
  int64_t n = rows * cols;
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::T;
    constexpr int N = 16 / sizeof(T);
    bool vec = cols % N == 0 && aligned16(x) && aligned16(bias) &&
               aligned16(out);
    launchKernel(s, biasAddKernel<E>, gridFor(vec ? n / N : n), kThreads, 0,
                 static_cast<const T *>(x), static_cast<const T *>(bias),
                 static_cast<T *>(out), n, cols, vec);
    return launched();
  });
}

const char *te_kernels_cast(te_kernels_state *s, int src_dtype, int dst_dtype,
                            const void *src, void *dst, int64_t n) {
  if (n == 0 || src == dst)
    return nullptr;
  if (src_dtype == dst_dtype) // bits unchanged, NaN payloads included
    return status(cudaMemcpyAsync(
        dst, src, static_cast<size_t>(n) * (src_dtype == 0 ? 4 : 2),
        cudaMemcpyDeviceToDevice, s->stream));
  // 4 elements per access: 16 bytes of f32, 8 of bf16/f16.
  bool vec =
      reinterpret_cast<uintptr_t>(src) % (src_dtype == 0 ? 16 : 8) == 0 &&
      reinterpret_cast<uintptr_t>(dst) % (dst_dtype == 0 ? 16 : 8) == 0;
  return byDtype(src_dtype, [&](auto se) {
    return byDtype(dst_dtype, [&](auto de) {
      using S = decltype(se);
      using D = decltype(de);
      launchKernel(s, castKernel<S, D>, gridFor(vec ? n / 4 + 1 : n), kThreads,
                   0, static_cast<const typename S::T *>(src),
                   static_cast<typename D::T *>(dst), n, vec);
      return launched();
    });
  });
}

const char *te_kernels_transpose(te_kernels_state *s, int dtype,
                                 const void *src, void *dst, int64_t rows,
                                 int64_t cols) {
  return dtype == 0 ? launchTranspose<uint32_t>(s, src, dst, rows, cols)
                    : launchTranspose<uint16_t>(s, src, dst, rows, cols);
}

const char *te_kernels_transpose_bytes(te_kernels_state *s, const void *src,
                                       void *dst, int64_t rows, int64_t cols) {
  if (rows == 0 || cols == 0)
    return nullptr;
  return transposeBytes(s, static_cast<const uint8_t *>(src),
                        static_cast<uint8_t *>(dst), rows, cols);
}

const char *te_kernels_add_columnwise_fp8(te_kernels_state *s, const void *data,
                                          const float *scale_inv, int64_t rows,
                                          int64_t cols, void *transpose,
                                          float *scale_inv_out) {
  if (rows == 0 || cols == 0)
    return status(cudaMemcpyAsync(scale_inv_out, scale_inv, sizeof(float),
                                  cudaMemcpyDeviceToDevice, s->stream));
  return transposeBytes(s, static_cast<const uint8_t *>(data),
                        static_cast<uint8_t *>(transpose), rows, cols,
                        scale_inv, scale_inv_out);
}

const char *te_kernels_zero_ranges(te_kernels_state *s, void *const *ptrs,
                                   const int64_t *bytes, int64_t count) {
  // The non-empty ranges, TE_RT_ZERO_RANGES_PER_LAUNCH a launch.
  ZeroRanges r;
  int k = 0;
  int64_t most = 0;
  auto launch = [&]() -> const char * {
    dim3 grid(gridFor(most / 16), static_cast<unsigned>(k));
    launchKernel(s, zeroRangesKernel, grid, kThreads, 0, r);
    k = 0;
    most = 0;
    return launched();
  };
  for (int64_t i = 0; i < count; ++i) {
    if (bytes[i] == 0)
      continue;
    r.ptr[k] = static_cast<unsigned char *>(ptrs[i]);
    r.bytes[k] = bytes[i];
    most = std::max(most, bytes[i]);
    if (++k == TE_RT_ZERO_RANGES_PER_LAUNCH)
      if (const char *err = launch())
        return err;
  }
  return k ? launch() : nullptr;
}

const char *te_kernels_zero_ranges_fork(te_kernels_state *s, void *const *ptrs,
                                        const int64_t *bytes, int64_t count) {
  bool any = false;
  for (int64_t i = 0; i < count && !any; ++i)
    any = bytes[i] != 0;
  if (!any)
    return nullptr;
  struct Args {
    void *const *ptrs;
    const int64_t *bytes;
    int64_t count;
  } args{ptrs, bytes, count};
  return onSideStream(
      s,
      [](te_kernels_state *st, void *p) {
        const Args &a = *static_cast<const Args *>(p);
        return te_kernels_zero_ranges(st, a.ptrs, a.bytes, a.count);
      },
      &args);
}

} // extern "C"
