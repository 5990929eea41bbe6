//===- quantize.cu - Per-tensor FP8 quantize ------------------------------===//
//
// The CUDA side of te_rt_quantize_fp8 and te_rt_dbias_quantize_fp8
// (DelayedScaling and Float8CurrentScaling, per-tensor scales): current
// scaling reduces amax = max |x| on the device (16-byte loads, one
// atomicMax of the float bits per block into a zeroed cell), then the cast
// kernel derives scale = fp8_max / amax itself (no host round trip); with
// amax_in (the amax the producer of x reduced while writing it,
// activation.cu, norm_fwd.cu) that pass is skipped and the cast reads
// amax_in; delayed scaling reads scale[0] and fuses the amax into the cast.
// The cast computes fp8(float(x) * scale) (round to nearest even,
// saturating, NaN -> 0x7F) with the sm_89+ `cvt.rn.satfinite` instruction,
// which te-formats-check (utils/gpu_check.sh) proves bit-identical to
// te_kernels/formats.h, the CPU backend's conversion, over all 2^32 fp32
// inputs; formats.h itself is used below sm_89. Data and transpose are
// written in one pass over x through shared-memory tiles (128x64 for 16-bit
// inputs of 128 rows or more, else 64x64; XOR swizzled: no bank
// conflicts), with 16-byte loads and transposed stores where the shape and
// pointers allow, element by element elsewhere. Data alone is a flat
// vectorized kernel. On the H200, 8192x4096 bf16 with data and transpose
// runs at ~89% of a device-to-device copy's bandwidth (f32: ~85-92%). With
// the bias gradient (te_rt_dbias_quantize_fp8, TE's cast_transpose_dbias)
// the same tiles also sum their columns in fp32 into a scratch partial per
// tile-row band, which colFinish reduces.
//
//===----------------------------------------------------------------------===//

#include "launch.cuh"
#include "quantize.cuh"

#include <algorithm>

using namespace te::kernels;

namespace {

constexpr int kUnroll = 4; // 16-byte loads in flight per thread

/// *a.amaxOut.out = max |x| (blockAmax): current scaling's
/// first pass. NaN is skipped (fmaxf), as std::max skips it on the CPU.
template <typename E>
__global__ void __launch_bounds__(kThreads) amaxKernel(QuantArgs a) {
  gridWait();
  using T = typename E::T;
  constexpr int kVec = perVec<E>();
  const T *x = static_cast<const T *>(a.x);
  int64_t n = a.rows * a.cols, done = 0;
  float m = 0.0f;
  if (a.vecLoad) {
    const uint4 *xv = static_cast<const uint4 *>(a.x);
    int64_t nv = n / kVec, stride = globalStride();
    for (int64_t v0 = globalId(); v0 < nv; v0 += kUnroll * stride) {
      uint4 raw[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (v0 + u * stride < nv)
          raw[u] = __ldg(xv + v0 + u * stride);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (v0 + u * stride < nv) {
          float f[kVec];
          unpack<E>(raw[u], f);
#pragma unroll
          for (int e = 0; e < kVec; ++e)
            m = fmaxf(m, fabsf(f[e]));
        }
    }
    done = nv * kVec;
  }
  for (int64_t i = done + globalId(); i < n; i += globalStride())
    m = fmaxf(m, fabsf(E::load(x[i])));
  blockAmax(m, a.amaxOut);
}

/// data = fp8(x * scale) over the flat [rows * cols] elements (no
/// transpose); the amax too when a.amaxOut is set.
template <typename E, int Fmt>
__global__ void __launch_bounds__(kThreads) castKernel(QuantArgs a) {
  gridWait();
  using T = typename E::T;
  constexpr int kVec = perVec<E>();
  const float s = quantScale(a);
  if (blockIdx.x == 0 && threadIdx.x == 0)
    *a.scaleInv = 1.0f / s;
  const T *x = static_cast<const T *>(a.x);
  int64_t n = a.rows * a.cols, done = 0;
  float m = 0.0f;
  if (a.vecLoad && (a.vecData || !a.data)) {
    const uint4 *xv = static_cast<const uint4 *>(a.x);
    int64_t nv = n / kVec, stride = globalStride();
    for (int64_t v0 = globalId(); v0 < nv; v0 += kUnroll * stride) {
      uint4 raw[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (v0 + u * stride < nv)
          raw[u] = __ldg(xv + v0 + u * stride);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        int64_t v = v0 + u * stride;
        if (v < nv) {
          float f[kVec];
          unpack<E>(raw[u], f);
#pragma unroll
          for (int e = 0; e < kVec; ++e)
            m = fmaxf(m, fabsf(f[e]));
          if (a.data)
            Packed<Fmt, kVec>(f, s).store(a.data + v * kVec);
        }
      }
    }
    done = nv * kVec;
  }
  for (int64_t i = done + globalId(); i < n; i += globalStride()) {
    float f = E::load(x[i]);
    m = fmaxf(m, fabsf(f));
    if (a.data)
      a.data[i] = toFP8<Fmt>(f * s);
  }
  if (a.amaxOut)
    blockAmax(m, a.amaxOut);
}

/// data (optional) and transpose of fp8(x * scale) in one pass over
/// kRows x kCols tiles: cast row-wise (16-byte loads, one vector of fp8 per
/// load) into shared memory, then written column-wise, 16 bytes (16 rows of
/// x) per thread and task. Ragged or misaligned tiles go element by element.
/// kDBias (te_kernels_dbias_quantize_fp8, TE's cast_transpose_dbias): the
/// fp32 column sums of each tile row's x go to dbiasPartial[tileRow * cols
/// + c], as actCastTransposeKernel sums its values (each thread its rows of
/// its columns, then the threads' sums in thread order), reduced by
/// colFinish; the transpose is optional then. With dbiasOut (x has one band
/// of tile rows: the band's sums are the column sums) the sums are rounded
/// to E and written to dbiasOut[c] instead, the bits colFinish would write
/// (it adds the one partial to 0.0f, and no partial is -0.0f: each starts
/// at +0.0f). The plain cast (kDBias false) compiles to what it was.
template <typename E, int Fmt, int kRows, int kCols, bool kDBias>
__global__ void __launch_bounds__(kThreads)
    castTransposeKernel(QuantArgs a, float *dbiasPartial,
                        typename E::T *dbiasOut) {
  gridWait();
  using T = typename E::T;
  constexpr int kVec = perVec<E>();
  constexpr int kRowVecs = kCols / kVec;            // vectors per tile row
  constexpr int kPer = kRows * kRowVecs / kThreads; // vectors per thread
  constexpr int kGroups = kThreads / kRowVecs;       // threads sharing columns
  static_assert(kPer * kThreads == kRows * kRowVecs &&
                    kThreads % kRowVecs == 0 && kThreads % kCols == 0,
                "tile shape");
  __shared__ __align__(16) uint8_t tile[kRows * kCols];
  __shared__ float colSums[kDBias ? kGroups * kCols : 1];
  const float s = quantScale(a);
  if (blockIdx.x == 0 && threadIdx.x == 0)
    *a.scaleInv = 1.0f / s;
  const T *x = static_cast<const T *>(a.x);
  const int64_t rows = a.rows, cols = a.cols;
  const int64_t tilesC = (cols + kCols - 1) / kCols;
  const int64_t tiles = (rows + kRows - 1) / kRows * tilesC;
  float m = 0.0f;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t r0 = t / tilesC * kRows, c0 = t % tilesC * kCols;
    const bool fullCols = c0 + kCols <= cols;
    // kDBias: vector path, every thread sums the columns cv * kVec .. + kVec
    // of its rows (idx % kRowVecs is threadIdx.x % kRowVecs); element path,
    // column threadIdx.x % kCols.
    float sum[kDBias ? kVec : 1];
#pragma unroll
    for (int e = 0; e < (kDBias ? kVec : 1); ++e)
      sum[e] = 0.0f;
    // The vector path takes every tile whose columns are all there; rows
    // past the end (a few-row input in a 64-row tile: 16 tokens) are
    // skipped, as the element path skips them.
    const bool vec = fullCols && a.vecLoad;
    if (vec) {
      uint4 raw[kPer];
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        int idx = threadIdx.x + p * kThreads;
        int r = idx / kRowVecs, cv = idx % kRowVecs;
        if (r0 + r < rows)
          raw[p] = __ldg(reinterpret_cast<const uint4 *>(x + (r0 + r) * cols +
                                                         c0 + cv * kVec));
      }
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        int idx = threadIdx.x + p * kThreads;
        int r = idx / kRowVecs, cv = idx % kRowVecs;
        if (r0 + r >= rows)
          continue;
        float f[kVec];
        unpack<E>(raw[p], f);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          m = fmaxf(m, fabsf(f[e]));
          if constexpr (kDBias)
            sum[e] += f[e];
        }
        Packed<Fmt, kVec> q(f, s);
        q.store(tile + swizzled<kCols>(r, cv * kVec));
        if (a.data)
          storeTo(q, a.data + (r0 + r) * cols + c0 + cv * kVec, a.vecData);
      }
    } else {
      for (int idx = threadIdx.x; idx < kRows * kCols; idx += kThreads) {
        int r = idx / kCols, c = idx % kCols;
        if (r0 + r < rows && c0 + c < cols) {
          int64_t i = (r0 + r) * cols + c0 + c;
          float f = E::load(x[i]);
          m = fmaxf(m, fabsf(f));
          if constexpr (kDBias)
            sum[0] += f;
          uint8_t q = toFP8<Fmt>(f * s);
          tile[swizzled<kCols>(r, c)] = q;
          if (a.data)
            a.data[i] = q;
        }
      }
    }
    if constexpr (kDBias) {
      const int groups = vec ? kGroups : kThreads / kCols;
      if (vec) {
        const int g = threadIdx.x / kRowVecs, cv = threadIdx.x % kRowVecs;
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          colSums[g * kCols + cv * kVec + e] = sum[e];
      } else {
        colSums[(threadIdx.x / kCols) * kCols + threadIdx.x % kCols] = sum[0];
      }
      __syncthreads();
      if (threadIdx.x < kCols && c0 + threadIdx.x < cols) {
        float total = 0.0f;
        for (int g = 0; g < groups; ++g)
          total += colSums[g * kCols + threadIdx.x];
        if (dbiasOut)
          dbiasOut[c0 + threadIdx.x] = E::store(total);
        else
          dbiasPartial[(r0 / kRows) * cols + c0 + threadIdx.x] = total;
      }
    }
    __syncthreads();
    // A whole tile with aligned transposed rows leaves by quads
    // (storeTileTransposed); else by 16-row pieces (storeTilePieces), byte
    // by byte where a piece is cut or misaligned.
    if (a.transpose) {
      uint8_t *dst = a.transpose + c0 * rows + r0;
      const bool vec = fullCols && a.vecTrans;
      if (vec && r0 + kRows <= rows)
        storeTileTransposed<kRows, kCols>(tile, dst, rows);
      else
        storeTilePieces<kRows, kCols>(tile, dst, rows, rows - r0, cols - c0,
                                      vec);
    }
    __syncthreads(); // the tile (and colSums) are refilled next
  }
  if (a.amaxOut)
    blockAmax(m, a.amaxOut);
}

template <typename E, int Fmt>
const char *quantize(te_kernels_state *s, QuantArgs a) {
  constexpr int kVec = perVec<E>();
  const int sms = smCount();
  const int64_t n = a.rows * a.cols;
  const int64_t vecWork =
      (n / kVec + kThreads * kUnroll - 1) / (kThreads * kUnroll);
  // The flat kernels need aligned pointers; the tiles, rows of whole
  // vectors too (and 16-byte transposed rows).
  QuantArgs flat = a;
  flat.vecLoad = aligned(a.x, 16);
  flat.vecData = aligned(a.data, kVec);
  if (!a.scale && !a.amaxIn) { // current scaling without a given amax
    launchKernel(s, amaxKernel<E>, blocksFor(vecWork, sms), kThreads, 0, flat);
    if (const char *err = launched())
      return err;
    a.amaxIn = flat.amaxIn = a.amaxOut.out;
    a.amaxOut = flat.amaxOut = AmaxOut{};
  }
  if (!a.transpose) {
    launchKernel(s, castKernel<E, Fmt>, blocksFor(vecWork, sms), kThreads, 0,
                 flat);
    return launched();
  }
  a.vecLoad = flat.vecLoad && a.cols % kVec == 0;
  a.vecData = flat.vecData && a.cols % kVec == 0;
  a.vecTrans = aligned(a.transpose, 16) && a.rows % 16 == 0;
  // 16-bit inputs of 128 rows or more: 128x64 tiles (four 16-byte loads in
  // flight per thread, as f32's 64x64; transposed rows written in whole
  // 128-byte lines); else 64x64.
  auto tilesOf = [&](int64_t tr, int64_t tc) {
    return (a.rows + tr - 1) / tr * ((a.cols + tc - 1) / tc);
  };
  if constexpr (sizeof(typename E::T) == 2) {
    if (a.rows >= 128) {
      launchKernel(s, castTransposeKernel<E, Fmt, 128, 64, false>,
                   blocksFor(tilesOf(128, 64), sms), kThreads, 0, a, nullptr,
                   nullptr);
      return launched();
    }
  }
  launchKernel(s, castTransposeKernel<E, Fmt, 64, 64, false>,
               blocksFor(tilesOf(64, 64), sms), kThreads, 0, a, nullptr,
               nullptr);
  return launched();
}

/// quantize() with the bias gradient (TE's cast_transpose_dbias + its
/// reduce_dbias): current scaling's amax pass first, then one
/// castTransposeKernel<kDBias> pass (the transpose optional: data alone
/// goes through the tiles too) writing each tile-row band's column sums
/// into the scratch, reduced into dbias by colFinish (one band: the tiles
/// write dbias, and there is no colFinish). a.amaxOut is the caller's amax
/// cell or null.
template <typename E, int Fmt>
const char *dbiasQuantize(te_kernels_state *s, QuantArgs a, void *dbias) {
  constexpr int kVec = perVec<E>();
  const int sms = smCount();
  const int64_t n = a.rows * a.cols;
  // The same tiles as quantize(): 128x64 for 16-bit inputs of 128 rows or
  // more, else 64x64.
  const bool tall = sizeof(typename E::T) == 2 && a.rows >= 128;
  const int64_t tileRows = tall ? 128 : 64;
  const int64_t rowTiles = (a.rows + tileRows - 1) / tileRows;
  const int64_t tiles = rowTiles * ((a.cols + 63) / 64);
  // One band of tile rows: its column sums are dbias (no partials, no
  // colFinish launch).
  using T = typename E::T;
  T *direct = rowTiles == 1 ? static_cast<T *>(dbias) : nullptr;
  const int64_t partials = direct ? 0 : rowTiles * a.cols;
  // One scratch request (the state has one buffer): the partial sums, then
  // the amax cell current scaling needs when the caller wants no amax.
  const bool cell = !a.scale && !a.amaxOut;
  const int64_t elems = partials + (cell ? 1 : 0);
  float *buf = nullptr;
  if (elems > 0)
    if (const char *err = scratch(s, elems, &buf))
      return err;
  float *partial = direct ? nullptr : buf;
  if (cell) // (no memset: the reduction's last block writes the cell)
    a.amaxOut = amaxOut(s, buf + partials);
  if (!a.scale) { // current scaling: the amax first
    QuantArgs flat = a;
    flat.vecLoad = aligned(a.x, 16);
    const int64_t vecWork =
        (n / kVec + kThreads * kUnroll - 1) / (kThreads * kUnroll);
    launchKernel(s, amaxKernel<E>, blocksFor(vecWork, sms), kThreads, 0, flat);
    if (const char *err = launched())
      return err;
    a.amaxIn = a.amaxOut.out;
    a.amaxOut = AmaxOut{};
  }
  a.vecLoad = aligned(a.x, 16) && a.cols % kVec == 0;
  a.vecData = aligned(a.data, kVec) && a.cols % kVec == 0;
  a.vecTrans = aligned(a.transpose, 16) && a.rows % 16 == 0;
  // (At least one block: scale_inv is written even when there is nothing
  // to cast.)
  if constexpr (sizeof(typename E::T) == 2) {
    if (tall)
      launchKernel(s, castTransposeKernel<E, Fmt, 128, 64, true>,
                   blocksFor(tiles, sms), kThreads, 0, a, partial, direct);
    else
      launchKernel(s, castTransposeKernel<E, Fmt, 64, 64, true>,
                   blocksFor(tiles, sms), kThreads, 0, a, partial, direct);
  } else {
    launchKernel(s, castTransposeKernel<E, Fmt, 64, 64, true>,
                 blocksFor(tiles, sms), kThreads, 0, a, partial, direct);
  }
  if (const char *err = launched())
    return err;
  if (a.cols == 0 || direct)
    return nullptr;
  launchKernel(s, colFinish<E>,
               blocksFor((a.cols + kThreads - 1) / kThreads, sms), kThreads, 0,
               partial, rowTiles, a.cols, static_cast<typename E::T *>(dbias));
  return launched();
}

} // namespace

extern "C" {

const char *te_kernels_quantize_fp8(te_kernels_state *s, int dtype,
                                    const void *x, int64_t rows, int64_t cols,
                                    int format, const float *scale,
                                    int pow2_scale, void *data, void *transpose,
                                    float *scale_inv, float *amax,
                                    const float *amax_in) {
  if (format != kE4M3 && format != kE5M2)
    return "FP8 quantize: unknown format";
  QuantArgs a{};
  a.x = x;
  a.rows = rows;
  a.cols = cols;
  a.scale = scale;
  a.fp8Max = fp8MaxOf(format);
  a.pow2 = pow2_scale != 0;
  a.data = static_cast<uint8_t *>(data);
  a.transpose = static_cast<uint8_t *>(transpose);
  a.scaleInv = scale_inv;
  // A given amax (the producer's, e.g. te_kernels_act_fwd's): the cast
  // kernels derive the scale from it, and there is no amax pass or output
  // (amax is NULL then).
  a.amaxIn = amax_in;
  float *cell = amax_in ? nullptr : amax;
  // Current scaling needs an amax cell even when the caller wants none.
  if (!scale && !amax_in && !amax)
    if (const char *err = scratch(s, 1, &cell))
      return err;
  // (No memset: the reduction's last block writes the cell.)
  a.amaxOut = amaxOut(s, cell);
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    return format == kE4M3 ? quantize<E, kE4M3>(s, a)
                           : quantize<E, kE5M2>(s, a);
  });
}

const char *te_kernels_dbias_quantize_fp8(
    te_kernels_state *s, int dtype, const void *x, int64_t rows, int64_t cols,
    int format, const float *scale, int pow2_scale, void *data, void *transpose,
    float *scale_inv, float *amax, void *dbias) {
  if (format != kE4M3 && format != kE5M2)
    return "FP8 quantize: unknown format";
  if (!data && !transpose)
    return "FP8 quantize + dbias: data and transpose are both NULL";
  QuantArgs a{};
  a.x = x;
  a.rows = rows;
  a.cols = cols;
  a.scale = scale;
  a.fp8Max = fp8MaxOf(format);
  a.pow2 = pow2_scale != 0;
  a.data = static_cast<uint8_t *>(data);
  a.transpose = static_cast<uint8_t *>(transpose);
  a.scaleInv = scale_inv;
  a.amaxOut = amaxOut(s, amax);
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    return format == kE4M3 ? dbiasQuantize<E, kE4M3>(s, a, dbias)
                           : dbiasQuantize<E, kE5M2>(s, a, dbias);
  });
}

} // extern "C"
