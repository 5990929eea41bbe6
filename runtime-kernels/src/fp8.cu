//===- fp8.cu - Per-tensor FP8: quantize, GEMM, delayed-scaling update ----===//
//
// The CUDA side of te_rt_quantize_fp8, te_rt_dbias_quantize_fp8,
// te_rt_gemm_fp8 and te_rt_amax_update (DelayedScaling and
// Float8CurrentScaling, per-tensor scales):
//
// - quantize: current scaling reduces amax = max |x| on the device (16-byte
//   loads, one atomicMax of the float bits per block into a zeroed cell),
//   then the cast kernel derives scale = fp8_max / amax itself (no host
//   round trip); with amax_in (the amax the producer of x reduced while
//   writing it, ops.cu) that pass is skipped and the cast reads amax_in;
//   delayed scaling reads scale[0] and fuses the amax into the cast. The cast
//   computes fp8(float(x) * scale) (round to nearest even, saturating, NaN ->
//   0x7F) with the sm_89+ `cvt.rn.satfinite` instruction, which
//   te-formats-check (utils/gpu_check.sh) proves bit-identical to
//   te_kernels/formats.h, the CPU backend's conversion, over all 2^32 fp32
//   inputs; formats.h itself is used below sm_89. Data and transpose are
//   written in one pass over x through shared-memory tiles (128x64 for
//   16-bit inputs of 128 rows or more, else 64x64; XOR swizzled: no bank
//   conflicts), with 16-byte loads and transposed stores where the shape
//   and pointers allow, element by element elsewhere. Data alone is a flat
//   vectorized kernel. On the H200, 8192x4096 bf16 with data and transpose
//   runs at ~89% of a device-to-device copy's bandwidth (f32: ~85-92%).
//   With the bias gradient (te_rt_dbias_quantize_fp8, TE's
//   cast_transpose_dbias) the same tiles also sum their columns in fp32
//   into a scratch partial per tile-row band, which colFinish reduces.
// - GEMM: cuBLASLt's FP8 TN matmul (fp32 compute; split accumulation unless
//   the caller asks for fast accumulation, TE's fprop default) with the
//   operands' scale_inv as its A/B scale
//   pointers; bias through the BIAS epilogue for bf16/f16 output and a
//   kernel for f32 output (cuBLASLt's FP8 kernels take a bf16 bias there).
//   Descriptors and the heuristic are built per call, as in gemm.cu. The
//   matmul (fp8Matmul), the f32 bias, k = 0 and the dequantized fp32
//   fallback are shared with the block-scaled GEMM of fp8_block.cu.
// - amax update: one thread per quantizer slot, reading its column of the
//   history before writing it, so the outputs may alias the inputs.
//
//===----------------------------------------------------------------------===//

#include "act.cuh"
#include "internal.cuh"

#include <algorithm>
#include <cstdlib>
#include <type_traits>
#include <cfloat>

using namespace te::kernels;

namespace {

/// What the quantize kernels read and write.
struct QuantArgs {
  const void *x;
  int64_t rows, cols;
  const float *scale;  // delayed scaling: scale[0]
  const float *amaxIn; // current scaling: the reduced (or given) amax
  float fp8Max;
  bool pow2;
  uint8_t *data;      // [rows, cols] or null
  uint8_t *transpose; // [cols, rows] or null
  float *scaleInv;    // [1], or null (the amax kernel)
  AmaxOut amaxOut;    // max |x| over the grid (blockAmax), or none
  bool vecLoad;       // 16-byte loads of x (set by quantize)
  bool vecData;       // vector stores of data
  bool vecTrans;      // 16-byte stores of transposed rows
};

__device__ inline float quantScale(const QuantArgs &a) {
  return a.scale ? *a.scale : scaleFromAmax(*a.amaxIn, a.fp8Max, a.pow2);
}

constexpr int kThreads = 256;

/// kVec fp8 bytes of kVec scaled values, packed little-endian.
template <int Fmt, int kVec> struct Packed;
template <int Fmt> struct Packed<Fmt, 8> {
  uint2 v;
  __device__ Packed(const float *f, float s) {
    v.x = toFP8x2<Fmt>(f[0] * s, f[1] * s) |
          (toFP8x2<Fmt>(f[2] * s, f[3] * s) << 16);
    v.y = toFP8x2<Fmt>(f[4] * s, f[5] * s) |
          (toFP8x2<Fmt>(f[6] * s, f[7] * s) << 16);
  }
  __device__ void store(uint8_t *p) const { *reinterpret_cast<uint2 *>(p) = v; }
  __device__ uint8_t byte(int i) const {
    return static_cast<uint8_t>((i < 4 ? v.x : v.y) >> (8 * (i & 3)));
  }
};
template <int Fmt> struct Packed<Fmt, 4> {
  uint32_t v;
  __device__ Packed(const float *f, float s) {
    v = toFP8x2<Fmt>(f[0] * s, f[1] * s) |
        (toFP8x2<Fmt>(f[2] * s, f[3] * s) << 16);
  }
  __device__ void store(uint8_t *p) const {
    *reinterpret_cast<uint32_t *>(p) = v;
  }
  __device__ uint8_t byte(int i) const {
    return static_cast<uint8_t>(v >> (8 * i));
  }
};

/// One vector store of q where p is aligned (vec), else byte by byte.
template <int Fmt, int kVec>
__device__ inline void storeTo(const Packed<Fmt, kVec> &q, uint8_t *p,
                               bool vec) {
  if (vec) {
    q.store(p);
    return;
  }
#pragma unroll
  for (int i = 0; i < kVec; ++i)
    p[i] = q.byte(i);
}

//===----------------------------------------------------------------------===//
// Quantize kernels
//===----------------------------------------------------------------------===//

constexpr int kUnroll = 4; // 16-byte loads in flight per thread

/// *a.amaxOut.out = max |x| (blockAmax): current scaling's
/// first pass. NaN is skipped (fmaxf), as std::max skips it on the CPU.
template <typename E>
__global__ void __launch_bounds__(kThreads) amaxKernel(QuantArgs a) {
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
/// colFinish; the transpose is optional then. The plain cast (kDBias false)
/// compiles to what it was.
template <typename E, int Fmt, int kRows, int kCols, bool kDBias>
__global__ void __launch_bounds__(kThreads)
    castTransposeKernel(QuantArgs a, float *dbiasPartial) {
  using T = typename E::T;
  constexpr int kVec = perVec<E>();
  constexpr int kRowVecs = kCols / kVec;            // vectors per tile row
  constexpr int kPer = kRows * kRowVecs / kThreads; // vectors per thread
  constexpr int kChunks = kRows / 16; // 16-byte pieces per transposed row
  constexpr int kTasks = kCols * kChunks / kThreads; // pieces per thread
  constexpr int kGroups = kThreads / kRowVecs;       // threads sharing columns
  static_assert(kPer * kThreads == kRows * kRowVecs && kTasks >= 1 &&
                    kTasks * kThreads == kCols * kChunks &&
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
    const bool full = r0 + kRows <= rows && c0 + kCols <= cols;
    // kDBias: vector path, every thread sums the columns cv * kVec .. + kVec
    // of its rows (idx % kRowVecs is threadIdx.x % kRowVecs); element path,
    // column threadIdx.x % kCols.
    float sum[kDBias ? kVec : 1];
#pragma unroll
    for (int e = 0; e < (kDBias ? kVec : 1); ++e)
      sum[e] = 0.0f;
    const bool vec = full && a.vecLoad;
    if (vec) {
      uint4 raw[kPer];
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        int idx = threadIdx.x + p * kThreads;
        int r = idx / kRowVecs, cv = idx % kRowVecs;
        raw[p] = __ldg(reinterpret_cast<const uint4 *>(x + (r0 + r) * cols +
                                                       c0 + cv * kVec));
      }
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        int idx = threadIdx.x + p * kThreads;
        int r = idx / kRowVecs, cv = idx % kRowVecs;
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
        dbiasPartial[(r0 / kRows) * cols + c0 + threadIdx.x] = total;
      }
    }
    __syncthreads();
    // Task (c, q) writes transpose row c0 + c, columns r0 + 16q .. +16;
    // consecutive threads take consecutive pieces of a row.
#pragma unroll 1
    for (int k = 0; k < ((kDBias && !a.transpose) ? 0 : kTasks); ++k) {
      const int id = threadIdx.x + k * kThreads;
      const int c = id / kChunks, q = id % kChunks;
      uint8_t *out = a.transpose + (c0 + c) * rows + r0 + 16 * q;
      if (full && a.vecTrans) {
        *reinterpret_cast<uint4 *>(out) = transposedPiece<kCols>(tile, q, c);
      } else if (c0 + c < cols) {
        for (int i = 0; i < 16 && r0 + 16 * q + i < rows; ++i)
          out[i] = tile[swizzled<kCols>(16 * q + i, c)];
      }
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
    amaxKernel<E><<<blocksFor(vecWork, sms), kThreads, 0, s->stream>>>(flat);
    if (const char *err = launched())
      return err;
    a.amaxIn = flat.amaxIn = a.amaxOut.out;
    a.amaxOut = flat.amaxOut = AmaxOut{};
  }
  if (!a.transpose) {
    castKernel<E, Fmt>
        <<<blocksFor(vecWork, sms), kThreads, 0, s->stream>>>(flat);
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
      castTransposeKernel<E, Fmt, 128, 64, false>
          <<<blocksFor(tilesOf(128, 64), sms), kThreads, 0, s->stream>>>(
              a, nullptr);
      return launched();
    }
  }
  castTransposeKernel<E, Fmt, 64, 64, false>
      <<<blocksFor(tilesOf(64, 64), sms), kThreads, 0, s->stream>>>(a, nullptr);
  return launched();
}

/// quantize() with the bias gradient (TE's cast_transpose_dbias + its
/// reduce_dbias): current scaling's amax pass first, then one
/// castTransposeKernel<kDBias> pass (the transpose optional: data alone
/// goes through the tiles too) writing each tile-row band's column sums
/// into the scratch, reduced into dbias by colFinish. a.amaxOut is the
/// caller's amax cell or null.
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
  // One scratch request (the state has one buffer): the partial sums, then
  // the amax cell current scaling needs when the caller wants no amax.
  const bool cell = !a.scale && !a.amaxOut;
  const int64_t elems = rowTiles * a.cols + (cell ? 1 : 0);
  float *buf = nullptr;
  if (elems > 0)
    if (const char *err = scratch(s, elems, &buf))
      return err;
  float *partial = buf;
  if (cell) // (no memset: the reduction's last block writes the cell)
    a.amaxOut = amaxOut(s, buf + rowTiles * a.cols);
  if (!a.scale) { // current scaling: the amax first
    QuantArgs flat = a;
    flat.vecLoad = aligned(a.x, 16);
    const int64_t vecWork =
        (n / kVec + kThreads * kUnroll - 1) / (kThreads * kUnroll);
    amaxKernel<E><<<blocksFor(vecWork, sms), kThreads, 0, s->stream>>>(flat);
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
      castTransposeKernel<E, Fmt, 128, 64, true>
          <<<blocksFor(tiles, sms), kThreads, 0, s->stream>>>(a, partial);
    else
      castTransposeKernel<E, Fmt, 64, 64, true>
          <<<blocksFor(tiles, sms), kThreads, 0, s->stream>>>(a, partial);
  } else {
    castTransposeKernel<E, Fmt, 64, 64, true>
        <<<blocksFor(tiles, sms), kThreads, 0, s->stream>>>(a, partial);
  }
  if (const char *err = launched())
    return err;
  if (a.cols == 0)
    return nullptr;
  colFinish<E><<<blocksFor((a.cols + kThreads - 1) / kThreads, sms), kThreads,
                 0, s->stream>>>(partial, rowTiles, a.cols,
                                 static_cast<typename E::T *>(dbias));
  return launched();
}

//===----------------------------------------------------------------------===//
// Fused activation-casts (delayed scaling)
//===----------------------------------------------------------------------===//

/// The values a fused activation-cast quantizes: element (r, c) of its
/// [rows, cols] result is act(x) (kBwd false; gated: act(a) * b from the
/// halves of x's row [a | b]) or dy * act'(x) (kBwd; gated: [da | db]), in
/// fp32, as te_kernels_act_fwd / _act_bwd compute it before rounding.
template <typename E, bool kBwd, bool kGated> struct ActSource {
  using T = typename E::T;
  static constexpr int kVec = perVec<E>();
  static constexpr bool gated = kGated;
  /// Gated backward: a tile of the da half (columns c < half) also makes
  /// the db half's tile (columns half + c) from the same loads.
  static constexpr bool kPaired = kBwd && kGated;
  static constexpr int kHalves = kPaired ? 2 : 1;
  ActParams p;
  const T *x;   // kBwd false: [rows, gated ? 2 * cols : cols]; else [rows, cols]
  const T *dy;  // kBwd: [rows, gated ? cols / 2 : cols]
  int64_t cols; // of the result
  int64_t half; // gated: the width of a half of x's row

  static constexpr bool kBackward = kBwd;
  /// The 16-byte vectors behind kVec results: x (or its two halves), dy.
  static constexpr int kLoads = (kBwd ? 1 : 0) + (kGated ? 2 : 1);
  struct Raw {
    uint4 v[kLoads];
  };
  /// The address of load j (< kLoads) behind result elements
  /// (r, c .. c + kVec): x or its halves, dy first in the backward.
  __device__ const T *ptr(int64_t r, int64_t c, int j) const {
    if constexpr (!kBwd && !kGated) {
      return x + r * cols + c;
    } else if constexpr (!kBwd) {
      return x + r * 2 * half + (j ? half : 0) + c;
    } else if constexpr (!kGated) {
      return j == 0 ? dy + r * cols + c : x + r * cols + c;
    } else { // paired: c < half
      return j == 0 ? dy + r * half + c : x + r * cols + (j == 2 ? half : 0) + c;
    }
  }
  /// The 16-byte loads behind result elements (r, c .. c + kVec).
  __device__ void load(int64_t r, int64_t c, Raw &raw) const {
#pragma unroll
    for (int j = 0; j < kLoads; ++j)
      raw.v[j] = __ldg(reinterpret_cast<const uint4 *>(ptr(r, c, j)));
  }
  /// The fp32 values of those elements (not paired).
  __device__ void values(int64_t c, const Raw &raw, float (&f)[kVec]) const {
    unpack<E>(raw.v[0], f);
    if constexpr (!kBwd && !kGated) {
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        f[e] = actF(p.act, f[e]);
    } else if constexpr (!kBwd) {
      float b[kVec];
      unpack<E>(raw.v[1], b);
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        f[e] = gatedF(p, f[e], b[e]);
    } else if constexpr (!kGated) {
      float a[kVec];
      unpack<E>(raw.v[1], a);
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        f[e] = f[e] * actDf(p.act, a[e]);
    }
  }
  /// Paired: the values of both halves, da (f[0]) and db (f[1]).
  __device__ void values(int64_t, const Raw &raw, float (&f)[2][kVec]) const {
    float g[kVec], a[kVec], b[kVec];
    unpack<E>(raw.v[0], g);
    unpack<E>(raw.v[1], a);
    unpack<E>(raw.v[2], b);
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      gatedDf(p, a[e], b[e], g[e], f[0][e], f[1][e]);
  }
  /// One element, for ragged or misaligned tiles.
  __device__ float at(int64_t r, int64_t c) const {
    if constexpr (!kBwd && !kGated) {
      return actF(p.act, E::load(x[r * cols + c]));
    } else if constexpr (!kBwd) {
      const T *row = x + r * 2 * half;
      return gatedF(p, E::load(row[c]), E::load(row[half + c]));
    } else if constexpr (!kGated) {
      return E::load(dy[r * cols + c]) * actDf(p.act, E::load(x[r * cols + c]));
    } else {
      return 0.0f; // paired: at(r, c, f)
    }
  }
  /// Paired: both halves' values at (r, c < half).
  __device__ void at(int64_t r, int64_t c, float (&f)[2]) const {
    const T *row = x + r * cols;
    gatedDf(p, E::load(row[c]), E::load(row[half + c]),
            E::load(dy[r * half + c]), f[0], f[1]);
  }
};

/// castTransposeKernel with the values computed from the activation's
/// inputs (ActSource) instead of read: each value rounded to E once (the
/// value te_kernels_act_fwd / _act_bwd would store), then cast with the
/// given scale into data (optional) and the transpose (optional), the amax
/// of the rounded values into a.amaxOut (optional). With dbiasPartial, the
/// column sums of the unrounded values of each tile row go to
/// dbiasPartial[tileRow * cols + c] (each thread sums its rows of the
/// column, then the threads' sums are added in thread order; the grouping
/// differs between whole aligned tiles and the element path, so the last
/// bits of dbias depend on the path), reduced by colFinish. Paired sources
/// (gated backward) run their tiles over the da half and write the db
/// half's tile from the same loads (a second shared-memory tile).
template <typename E, int Fmt, int kRows, int kCols, typename Src,
          int kStages>
__global__ void __launch_bounds__(kThreads)
    actCastTransposeKernel(Src src, QuantArgs a, float *dbiasPartial) {
  constexpr int kVec = perVec<E>();
  constexpr int kRowVecs = kCols / kVec;
  constexpr int kPer = kRows * kRowVecs / kThreads;
  constexpr int kChunks = kRows / 16;
  constexpr int kTasks = kCols * kChunks / kThreads;
  constexpr int kGroups = kThreads / kRowVecs; // threads sharing columns
  constexpr int kHalves = Src::kHalves;
  constexpr int kLoads = Src::kLoads;
  // Only a non-gated backward sums dbias.
  constexpr bool kDBias = Src::kBackward && !Src::kPaired;
  static_assert(kPer * kThreads == kRows * kRowVecs && kTasks >= 1 &&
                    kTasks * kThreads == kCols * kChunks &&
                    kThreads % kRowVecs == 0 && kThreads % kCols == 0,
                "tile shape");
  __shared__ __align__(16) uint8_t tile[kHalves][kRows * kCols];
  __shared__ float colSums[kDBias ? kGroups * kCols : 1];
  // kStages > 0: the whole tiles' loads go through a ring of kStages
  // thread-private staging slots in shared memory (cp.async), issued
  // kStages - 1 tiles ahead of the one being cast, so that a block keeps
  // that many tiles of loads in flight without holding them in registers.
  __shared__ uint4 stage[kStages > 0 ? kStages * kPer * kLoads * kThreads : 1];
  const float s = *a.scale;
  if (blockIdx.x == 0 && threadIdx.x == 0)
    *a.scaleInv = 1.0f / s;
  // Tiles run over the result's columns, or the da half's when paired.
  const int64_t rows = a.rows, cols = a.cols;
  const int64_t tileCols = Src::kPaired ? src.half : cols;
  const int64_t tilesC = (tileCols + kCols - 1) / kCols;
  const int64_t tiles = (rows + kRows - 1) / kRows * tilesC;
  auto isFull = [&](int64_t t) {
    const int64_t r0 = t / tilesC * kRows, c0 = t % tilesC * kCols;
    return r0 + kRows <= rows && c0 + kCols <= tileCols;
  };
  auto slot = [&](int k, int p, int j) -> uint4 * {
    return stage + ((k * kPer + p) * kLoads + j) * kThreads + threadIdx.x;
  };
  // Issues tile t's loads into ring slot k (none for a ragged tile or past
  // the end), then commits the group (always, so that the count of groups
  // in flight is the same for every thread and iteration).
  auto issue = [&](int64_t t, int k) {
    if (t < tiles && a.vecLoad && isFull(t)) {
      const int64_t r0 = t / tilesC * kRows, c0 = t % tilesC * kCols;
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        int idx = threadIdx.x + p * kThreads;
        int r = idx / kRowVecs, cv = idx % kRowVecs;
#pragma unroll
        for (int j = 0; j < kLoads; ++j)
          cpAsync16(slot(k, p, j), src.ptr(r0 + r, c0 + cv * kVec, j));
      }
    }
    cpAsyncCommit();
  };
  if constexpr (kStages > 0) {
#pragma unroll
    for (int k = 0; k + 1 < kStages; ++k)
      issue(blockIdx.x + int64_t(k) * gridDim.x, k);
  }
  float m = 0.0f;
  int ring = 0; // the ring slot of tile t
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t r0 = t / tilesC * kRows, c0 = t % tilesC * kCols;
    const bool full = r0 + kRows <= rows && c0 + kCols <= tileCols;
    if constexpr (kStages > 0) {
      // The slot tile t + kStages - 1 goes into was read by tile t - 1,
      // before that iteration's last __syncthreads.
      issue(t + int64_t(kStages - 1) * gridDim.x,
            (ring + kStages - 1) % kStages);
      cpAsyncWait<kStages - 1>(); // tile t's group has landed
    }
    // Vector path: every thread keeps the columns cv * kVec .. + kVec of
    // its rows (idx % kRowVecs is threadIdx.x % kRowVecs); element path:
    // column threadIdx.x % kCols.
    float sum[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      sum[e] = 0.0f;
    const bool vec = full && a.vecLoad;
    if (vec) {
      typename Src::Raw raw[kPer];
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        if constexpr (kStages > 0) {
#pragma unroll
          for (int j = 0; j < kLoads; ++j)
            raw[p].v[j] = *slot(ring, p, j);
        } else {
          int idx = threadIdx.x + p * kThreads;
          int r = idx / kRowVecs, cv = idx % kRowVecs;
          src.load(r0 + r, c0 + cv * kVec, raw[p]);
        }
      }
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        int idx = threadIdx.x + p * kThreads;
        int r = idx / kRowVecs, cv = idx % kRowVecs;
        float f[kHalves][kVec];
        if constexpr (Src::kPaired)
          src.values(c0 + cv * kVec, raw[p], f);
        else
          src.values(c0 + cv * kVec, raw[p], f[0]);
#pragma unroll
        for (int h = 0; h < kHalves; ++h) {
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            sum[e] += f[h][e];
            f[h][e] = E::load(E::store(f[h][e]));
            m = fmaxf(m, fabsf(f[h][e]));
          }
          Packed<Fmt, kVec> q(f[h], s);
          q.store(tile[h] + swizzled<kCols>(r, cv * kVec));
          if (a.data)
            storeTo(q, a.data + (r0 + r) * cols + h * src.half + c0 +
                          cv * kVec,
                      a.vecData);
        }
      }
    } else {
      for (int idx = threadIdx.x; idx < kRows * kCols; idx += kThreads) {
        int r = idx / kCols, c = idx % kCols;
        if (r0 + r < rows && c0 + c < tileCols) {
          float v[kHalves];
          if constexpr (Src::kPaired)
            src.at(r0 + r, c0 + c, v);
          else
            v[0] = src.at(r0 + r, c0 + c);
#pragma unroll
          for (int h = 0; h < kHalves; ++h) {
            sum[0] += v[h];
            float f = E::load(E::store(v[h]));
            m = fmaxf(m, fabsf(f));
            uint8_t q = toFP8<Fmt>(f * s);
            tile[h][swizzled<kCols>(r, c)] = q;
            if (a.data)
              a.data[(r0 + r) * cols + h * src.half + c0 + c] = q;
          }
        }
      }
    }
    if constexpr (kDBias) {
      if (dbiasPartial) {
        const int groups = vec ? kGroups : kThreads / kCols;
        if (vec) {
          const int g = threadIdx.x / kRowVecs, cv = threadIdx.x % kRowVecs;
#pragma unroll
          for (int e = 0; e < kVec; ++e)
            colSums[g * kCols + cv * kVec + e] = sum[e];
        } else {
          colSums[(threadIdx.x / kCols) * kCols + threadIdx.x % kCols] =
              sum[0];
        }
        __syncthreads();
        if (threadIdx.x < kCols && c0 + threadIdx.x < cols) {
          float total = 0.0f;
          for (int g = 0; g < groups; ++g)
            total += colSums[g * kCols + threadIdx.x];
          dbiasPartial[(r0 / kRows) * cols + c0 + threadIdx.x] = total;
        }
      }
    }
    __syncthreads();
    if (a.transpose) {
#pragma unroll
      for (int h = 0; h < kHalves; ++h) {
#pragma unroll 1
        for (int k = 0; k < kTasks; ++k) {
          const int id = threadIdx.x + k * kThreads;
          const int c = id / kChunks, q = id % kChunks;
          uint8_t *out =
              a.transpose + (h * src.half + c0 + c) * rows + r0 + 16 * q;
          if (full && a.vecTrans) {
            *reinterpret_cast<uint4 *>(out) =
                transposedPiece<kCols>(tile[h], q, c);
          } else if (c0 + c < tileCols) {
            for (int i = 0; i < 16 && r0 + 16 * q + i < rows; ++i)
              out[i] = tile[h][swizzled<kCols>(16 * q + i, c)];
          }
        }
      }
    }
    __syncthreads(); // the tiles and colSums are refilled next
    ring = (ring + 1) % (kStages > 0 ? kStages : 1);
  }
  if constexpr (kStages > 0)
    cpAsyncWait<0>(); // no copy outlives the block
  if (a.amaxOut)
    blockAmax(m, a.amaxOut);
}

/// The cp.async ring depths a fused activation-cast may run with (0: plain
/// loads into registers) for a source of kLoads 16-byte loads per vector
/// of E: what fits the 48 KB of static shared memory with a 64x64 tile.
template <typename E, typename Src> constexpr int maxActStages() {
  if constexpr (sizeof(typename E::T) != 2 || Src::kPaired)
    return 0;
  else
    return Src::kLoads == 1 ? 3 : 2;
}

/// The ring depth: TE_KERNELS_ACT_STAGES (0..3, for measurements; read
/// once) when set, else the default, both capped by maxActStages.
/// Measured on the H200 (8192x16384 bf16, te-kernels-selftest
/// --bench-act-cast): see docs/bench.md.
inline int actStagesWanted() {
  static const int wanted = [] {
    const char *env = std::getenv("TE_KERNELS_ACT_STAGES");
    if (env && *env >= '0' && *env <= '9' && env[1] == 0)
      return *env - '0';
    return 3;
  }();
  return wanted;
}

/// Blocks of a persistent grid for `kernel` (as many as are resident at
/// once on every multiprocessor), at most `tiles`, at least one; cached
/// per kernel.
template <typename Kernel>
unsigned persistentBlocks(Kernel kernel, int64_t tiles, int sms) {
  static const int perSm = [&] {
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kThreads,
                                                      0) != cudaSuccess ||
        n <= 0) {
      cudaGetLastError();
      return 4;
    }
    return n;
  }();
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>(tiles, int64_t(perSm) * sms)));
}

template <typename E, int Fmt, typename Src>
const char *actCast(te_kernels_state *s, Src src, QuantArgs a, void *dbias) {
  constexpr int kVec = perVec<E>();
  const int sms = smCount();
  // 16-byte loads of every operand, whole vectors per row and per half.
  bool vecLoad = aligned(src.x, 16) && a.cols % kVec == 0 &&
                 (!src.gated || src.half % kVec == 0);
  if (src.dy)
    vecLoad = vecLoad && aligned(src.dy, 16);
  a.vecLoad = vecLoad;
  a.vecData = aligned(a.data, kVec) && a.cols % kVec == 0;
  a.vecTrans = aligned(a.transpose, 16) && a.rows % 16 == 0;
  // 64x64 tiles: measured on the H200 at 8192x16384 bf16, 128-row tiles
  // (what the plain cast uses) are 10-20% slower here, the activation's
  // math and loads holding more registers per tile.
  const int64_t rowTiles = (a.rows + 63) / 64;
  const int64_t tiles =
      rowTiles * (((Src::kPaired ? src.half : a.cols) + 63) / 64);
  float *partial = nullptr;
  if (dbias && a.rows > 0)
    if (const char *err = scratch(s, rowTiles * a.cols, &partial))
      return err;
  // (At least one block: scale_inv is written even when there is nothing
  // to cast.)
  constexpr int kMax = maxActStages<E, Src>();
  const int stages = std::min(actStagesWanted(), kMax);
  auto launch = [&](auto kernel, bool persistent) {
    unsigned blocks = persistent ? persistentBlocks(kernel, tiles, sms)
                                 : blocksFor(tiles, sms);
    kernel<<<blocks, kThreads, 0, s->stream>>>(src, a, partial);
  };
  if (kMax >= 3 && stages >= 3)
    launch(actCastTransposeKernel<E, Fmt, 64, 64, Src, kMax >= 3 ? 3 : 0>,
           true);
  else if (kMax >= 2 && stages == 2)
    launch(actCastTransposeKernel<E, Fmt, 64, 64, Src, kMax >= 2 ? 2 : 0>,
           true);
  else
    launch(actCastTransposeKernel<E, Fmt, 64, 64, Src, 0>, false);
  if (const char *err = launched())
    return err;
  if (!dbias)
    return nullptr;
  if (a.cols == 0)
    return nullptr;
  colFinish<E><<<blocksFor((a.cols + kThreads - 1) / kThreads, sms), kThreads,
                 0, s->stream>>>(partial, a.rows > 0 ? rowTiles : 0, a.cols,
                                 static_cast<typename E::T *>(dbias));
  return launched();
}

//===----------------------------------------------------------------------===//
// Delayed scaling's update
//===----------------------------------------------------------------------===//

/// One thread per slot s: a = max over the column (row 0 := amax[s]; the
/// comparison order and NaN handling of std::max on the CPU), the column
/// rolled up by one with the new amax last and row 0 zeroed, the scale
/// (fp8_max / a) / 2^margin. Each element is read before it is written, so
/// the outputs may alias the inputs.
__global__ void amaxUpdateKernel(const float *history, const float *scale,
                                 const float *amax, int64_t len, int64_t n,
                                 float fp8Max, int margin, bool mostRecent,
                                 float *newHistory, float *newScale) {
  int64_t s = globalId();
  if (s >= n)
    return;
  const float first = amax[s];
  const float old = scale[s];
  float a = first;
  for (int64_t r = 1; r < len; ++r) {
    float h = history[r * n + s];
    if (!mostRecent)
      a = a < h ? h : a;
    newHistory[(r - 1) * n + s] = h;
  }
  newHistory[(len - 1) * n + s] = first;
  newHistory[s] = 0.0f;
  float next = old;
  if (isfinite(a) && a > 0.0f) {
    next = fp8Max / a / ldexpf(1.0f, margin);
    if (isinf(next))
      next = FLT_MAX;
  }
  newScale[s] = next;
}

/// The same update with one block per slot (blockIdx.x), the history
/// column staged in shared memory (`len` floats, dynamic): every thread
/// reads its rows, the block synchronizes, then writes the rolled column,
/// so reads precede writes as with aliased buffers they must. The max over
/// the rows is a block reduction with amaxUpdateKernel's result: fmaxf
/// skips NaN history rows (as `a < h ? h : a` does) and a NaN step amax
/// stays NaN. One slot's 1024-row column is ~1024 dependent global
/// accesses for amaxUpdateKernel's single thread (~0.1-0.3 ms per update
/// on the H200); here it is a few microseconds.
__global__ void __launch_bounds__(kThreads)
    amaxUpdateBlockKernel(const float *history, const float *scale,
                          const float *amax, int64_t len, int64_t n,
                          float fp8Max, int margin, bool mostRecent,
                          float *newHistory, float *newScale) {
  extern __shared__ float column[];
  __shared__ float part[kThreads / 32];
  const int64_t s = blockIdx.x;
  float m = -FLT_MAX;
  for (int64_t r = 1 + threadIdx.x; r < len; r += blockDim.x) {
    float h = history[r * n + s];
    column[r] = h;
    m = fmaxf(m, h);
  }
  for (int o = 16; o > 0; o >>= 1)
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    part[warp] = m;
  __syncthreads(); // every read of the column is done
  for (int64_t r = 2 + threadIdx.x; r < len; r += blockDim.x)
    newHistory[(r - 1) * n + s] = column[r];
  if (threadIdx.x == 0) {
    float rows = part[0];
    for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w)
      rows = fmaxf(rows, part[w]);
    const float first = amax[s];
    float a = first;
    if (!mostRecent && !isnan(first))
      a = fmaxf(first, rows);
    newHistory[(len - 1) * n + s] = first;
    newHistory[s] = 0.0f;
    float next = scale[s];
    if (isfinite(a) && a > 0.0f) {
      next = fp8Max / a / ldexpf(1.0f, margin);
      if (isinf(next))
        next = FLT_MAX;
    }
    newScale[s] = next;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// GEMM (shared with fp8_block.cu through internal.cuh)
//===----------------------------------------------------------------------===//

namespace {

cudaDataType_t fp8Type(int format) {
  return format == kE4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
}

/// d[i, j] = d[i, j] + bias[j] over [rows, cols], rounded once.
template <typename E>
__global__ void addBiasKernel(const typename E::T *bias, typename E::T *d,
                              int64_t rows, int64_t cols) {
  for (int64_t i = blockIdx.y; i < rows; i += gridDim.y)
    for (int64_t j =
             static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         j < cols; j += static_cast<int64_t>(gridDim.x) * blockDim.x)
      d[i * cols + j] = E::store(E::load(d[i * cols + j]) + E::load(bias[j]));
}

/// x[i] = fp8(q[i]) * scale_inv[0], in fp32.
__global__ void dequantizeKernel(const uint8_t *q, const float *scaleInv,
                                 int format, int64_t n, float *x) {
  float si = *scaleInv;
  for (int64_t i = globalId(); i < n; i += globalStride())
    x[i] = (format == kE4M3 ? te::formats::e4m3ToFloat(q[i])
                            : te::formats::e5m2ToFloat(q[i])) *
           si;
}

const char *dequantize(te_kernels_state *s, const void *q,
                       const float *scaleInv, int format, int64_t n, float *x) {
  int64_t blocks = std::min<int64_t>((n + 255) / 256, 65535);
  dequantizeKernel<<<unsigned(std::max<int64_t>(blocks, 1)), 256, 0,
                     s->stream>>>(static_cast<const uint8_t *>(q), scaleInv,
                                  format, n, x);
  return launched();
}

/// Sets one attribute of a matmul descriptor.
template <typename V>
const char *setAttr(cublasLtMatmulDesc_t op,
                    cublasLtMatmulDescAttributes_t which, const V &value) {
  return ltError(
      cublasLtMatmulDescSetAttribute(op, which, &value, sizeof(value)));
}

} // namespace

namespace te::kernels {

const char *addBias(te_kernels_state *s, int dtype, const void *bias, void *d,
                    int64_t rows, int64_t cols) {
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::T;
    dim3 grid(static_cast<unsigned>(
                  std::min<int64_t>((cols + kThreads - 1) / kThreads, 1024)),
              static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
    addBiasKernel<E><<<grid, kThreads, 0, s->stream>>>(
        static_cast<const T *>(bias), static_cast<T *>(d), rows, cols);
    return launched();
  });
}

const char *gemmWithoutK(te_kernels_state *s, int out_dtype, const void *bias,
                         void *d, int64_t m, int64_t n, int accumulate) {
  return accumulate ? (bias ? addBias(s, out_dtype, bias, d, m, n) : nullptr)
                    : broadcastRows(s, out_dtype, bias, d, m, n);
}

const char *dequantizedGemm(te_kernels_state *s, int out_dtype,
                            const DequantizeOperands &dequantizeOperands,
                            const void *bias, void *d, int64_t m, int64_t n,
                            int64_t k, int accumulate) {
  const int64_t mk = m * k, nk = n * k, mn = m * n;
  float *buf = nullptr;
  if (const char *err = scratch(s, mk + nk + 2 * mn + n, &buf))
    return err;
  float *A = buf, *B = A + mk, *D = B + nk, *Old = D + mn, *Bias = Old + mn;
  if (const char *err = dequantizeOperands(A, B))
    return err;
  if (bias)
    if (const char *err = te_kernels_cast(s, out_dtype, 0, bias, Bias, n))
      return err;
  if (const char *err =
          te_kernels_gemm_fprop(s, 0, A, B, bias ? Bias : nullptr, D, m, n, k))
    return err;
  if (accumulate) {
    if (const char *err = te_kernels_cast(s, out_dtype, 0, d, Old, mn))
      return err;
    if (const char *err = te_kernels_add(s, 0, D, Old, D, mn))
      return err;
  }
  return te_kernels_cast(s, 0, out_dtype, D, d, mn);
}

// Row-major D[m, n] is column-major D^T[n, m] = B[n, k] . A[m, k]^T: the
// cuBLASLt A is our b (column-major [k, n], op T), its B our a (column-major
// [k, m], op N), the TN form Hopper's FP8 kernels require; fprop in gemm.cu
// is the same call. The scales follow their operands: cuBLASLt's A scale
// (and scale mode) is b's, its B scale a's.
const char *fp8Matmul(te_kernels_state *s, int out_dtype, const Fp8Operand &a,
                      const Fp8Operand &b, const void *bias, void *d, int64_t m,
                      int64_t n, int64_t k, int accumulate, bool *unsupported,
                      bool fastAccumulate) {
  *unsupported = false;
  if (const char *err = ltReady(s))
    return err;
  const cudaDataType_t t = cudaTypeOf(out_dtype);
  const bool epilogueBias = bias && out_dtype != 0;
  Descriptors g;
  if (const char *err = ltError(
          cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F)))
    return err;
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  // Split accumulation (fast accumulation off) is TE's choice for dgrad and
  // wgrad and for every block-scaled GEMM; fprop under the per-tensor
  // recipes accumulates fast (use_split_accumulator False).
  const int8_t fastAccum = fastAccumulate ? 1 : 0;
  if (const char *err = setAttr(g.op, CUBLASLT_MATMUL_DESC_TRANSA, ta))
    return err;
  if (const char *err = setAttr(g.op, CUBLASLT_MATMUL_DESC_TRANSB, tb))
    return err;
  if (const char *err =
          setAttr(g.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fastAccum))
    return err;
  if (const char *err =
          setAttr(g.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, b.scaleInv))
    return err;
  if (const char *err =
          setAttr(g.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a.scaleInv))
    return err;
  if (a.scaleMode != kPerTensorScale || b.scaleMode != kPerTensorScale) {
    // Block scales: the scale-mode attributes and the 128-element modes
    // exist from cuBLAS 12.9 on (older libraries: the caller's fallback).
#if CUBLAS_VERSION >= 120900
    if (cublasLtGetVersion() < 120900) {
      *unsupported = true;
      return nullptr;
    }
    auto mode = [](int scaleMode) {
      return scaleMode == kPerTensorScale
                 ? CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F
                 : static_cast<cublasLtMatmulMatrixScale_t>(scaleMode);
    };
    const cublasLtMatmulMatrixScale_t modeA = mode(b.scaleMode),
                                      modeB = mode(a.scaleMode);
    if (cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
                                       &modeA, sizeof(modeA)) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
                                       &modeB, sizeof(modeB)) !=
            CUBLAS_STATUS_SUCCESS) {
      *unsupported = true;
      return nullptr;
    }
#else
    *unsupported = true;
    return nullptr;
#endif
  }
  if (epilogueBias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    if (const char *err = setAttr(g.op, CUBLASLT_MATMUL_DESC_EPILOGUE, epi))
      return err;
    if (const char *err =
            setAttr(g.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias))
      return err;
    if (const char *err = setAttr(g.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, t))
      return err;
  }
  if (const char *err =
          ltError(cublasLtMatrixLayoutCreate(&g.a, b.type, k, n, k)))
    return err;
  if (const char *err =
          ltError(cublasLtMatrixLayoutCreate(&g.b, a.type, k, m, k)))
    return err;
  if (const char *err = ltError(cublasLtMatrixLayoutCreate(&g.c, t, n, m, n)))
    return err;
  if (const char *err = ltError(cublasLtMatrixLayoutCreate(&g.d, t, n, m, n)))
    return err;
  GemmKey key;
  key.add(1 /* FP8 */).add(out_dtype).add(a.type).add(b.type);
  key.add(a.scaleMode).add(b.scaleMode).add(m).add(n).add(k).add(fastAccum);
  key.add(epilogueBias).add(accumulate != 0).add(alignmentOf(b.data));
  key.add(alignmentOf(a.data)).add(alignmentOf(d));
  key.add(epilogueBias ? alignmentOf(bias) : 0);
  if (const char *err = runMatmul(s, key, g, b.data, a.data, d,
                                  accumulate ? 1.0f : 0.0f, unsupported))
    return err;
  if (*unsupported)
    return nullptr;
  return bias && !epilogueBias ? addBias(s, out_dtype, bias, d, m, n) : nullptr;
}

} // namespace te::kernels

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
  a.fp8Max = format == kE4M3 ? 448.0f : 57344.0f;
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
  a.fp8Max = format == kE4M3 ? 448.0f : 57344.0f;
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

/// The quantization half of a fused activation-cast (delayed scaling).
static QuantArgs fusedCastArgs(te_kernels_state *s, int format, int64_t rows,
                               int64_t cols, const float *scale, void *data,
                               void *transpose, float *scale_inv,
                               float *amax) {
  QuantArgs a{};
  a.rows = rows;
  a.cols = cols;
  a.scale = scale;
  a.fp8Max = format == kE4M3 ? 448.0f : 57344.0f;
  a.data = static_cast<uint8_t *>(data);
  a.transpose = static_cast<uint8_t *>(transpose);
  a.scaleInv = scale_inv;
  a.amaxOut = amaxOut(s, amax);
  return a;
}

const char *te_kernels_act_quantize_fp8(te_kernels_state *s, int act,
                                        int dtype, const void *x, int64_t rows,
                                        int64_t cols, float limit, float alpha,
                                        float offset, int format,
                                        const float *scale, void *data,
                                        void *transpose, float *scale_inv,
                                        float *amax) {
  if (format != kE4M3 && format != kE5M2)
    return "FP8 quantize: unknown format";
  const bool gated = isGated(act);
  if (!scale)
    return "fused activation-cast: scale is NULL (delayed scaling only)";
  if (gated && cols % 2)
    return "fused activation-cast: a gated activation needs an even cols";
  const int64_t yCols = gated ? cols / 2 : cols;
  QuantArgs a = fusedCastArgs(s, format, rows, yCols, scale, data, transpose,
                              scale_inv, amax);
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    auto run = [&](auto gatedTag) {
      ActSource<E, false, decltype(gatedTag)::value> src{
          ActParams{act, limit, alpha, offset},
          static_cast<const typename E::T *>(x), nullptr, yCols, yCols};
      return format == kE4M3 ? actCast<E, kE4M3>(s, src, a, nullptr)
                             : actCast<E, kE5M2>(s, src, a, nullptr);
    };
    return gated ? run(std::true_type{}) : run(std::false_type{});
  });
}

const char *te_kernels_dact_quantize_fp8(
    te_kernels_state *s, int act, int dtype, const void *dy, const void *x,
    void *dbias, int64_t rows, int64_t cols, float limit, float alpha,
    float offset, int format, const float *scale, void *data, void *transpose,
    float *scale_inv, float *amax) {
  if (format != kE4M3 && format != kE5M2)
    return "FP8 quantize: unknown format";
  const bool gated = isGated(act);
  if (gated && dbias)
    return "fused dbias + dact: gated activations have none";
  if (!scale)
    return "fused activation-cast: scale is NULL (delayed scaling only)";
  if (gated && cols % 2)
    return "fused activation-cast: a gated activation needs an even cols";
  QuantArgs a = fusedCastArgs(s, format, rows, cols, scale, data, transpose,
                              scale_inv, amax);
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::T;
    auto run = [&](auto gatedTag) {
      ActSource<E, true, decltype(gatedTag)::value> src{
          ActParams{act, limit, alpha, offset}, static_cast<const T *>(x),
          static_cast<const T *>(dy), cols, gated ? cols / 2 : cols};
      return format == kE4M3 ? actCast<E, kE4M3>(s, src, a, dbias)
                             : actCast<E, kE5M2>(s, src, a, dbias);
    };
    return gated ? run(std::true_type{}) : run(std::false_type{});
  });
}

const char *te_kernels_gemm_fp8(te_kernels_state *s, int out_dtype,
                                int a_format, const void *a,
                                const float *a_scale_inv, int b_format,
                                const void *b, const float *b_scale_inv,
                                const void *bias, void *d, int64_t m, int64_t n,
                                int64_t k, int accumulate,
                                int fast_accumulate) {
  if (a_format == kE5M2 && b_format == kE5M2)
    return "FP8 GEMM: E5M2 x E5M2 is not supported by cuBLASLt (one operand "
           "must be E4M3)";
  if (m == 0 || n == 0)
    return nullptr;
  if (k == 0)
    return gemmWithoutK(s, out_dtype, bias, d, m, n, accumulate);
  // Shapes cuBLASLt's FP8 kernels do not take (a dim not a multiple of 16,
  // e.g. 8 tokens): the fp32 GEMM of the dequantized operands.
  if (m % 16 || n % 16 || k % 16)
    return dequantizedGemm(
        s, out_dtype,
        [&](float *A, float *B) -> const char * {
          if (const char *err =
                  dequantize(s, a, a_scale_inv, a_format, m * k, A))
            return err;
          return dequantize(s, b, b_scale_inv, b_format, n * k, B);
        },
        bias, d, m, n, k, accumulate);
  bool unsupported = false;
  if (const char *err = fp8Matmul(
          s, out_dtype, {a, fp8Type(a_format), a_scale_inv, kPerTensorScale},
          {b, fp8Type(b_format), b_scale_inv, kPerTensorScale}, bias, d, m, n,
          k, accumulate, &unsupported, fast_accumulate != 0))
    return err;
  return unsupported ? "cuBLASLt has no FP8 algorithm for this GEMM (FP8 "
                       "needs sm_89 or newer)"
                     : nullptr;
}

const char *te_kernels_amax_update(te_kernels_state *s, const float *history,
                                   const float *scale, const float *amax,
                                   int64_t len, int64_t n, float fp8_max,
                                   int margin, int most_recent,
                                   float *new_history, float *new_scale) {
  if (n == 0 || len == 0)
    return nullptr;
  // A block per slot with its history column in shared memory (TE's
  // default history of 1024 rows is 4 KiB); a thread per slot for
  // histories too long for that.
  const size_t columnBytes = static_cast<size_t>(len) * sizeof(float);
  if (columnBytes <= 32 * 1024 && n <= 65535) {
    amaxUpdateBlockKernel<<<static_cast<unsigned>(n), kThreads, columnBytes,
                            s->stream>>>(history, scale, amax, len, n, fp8_max,
                                         margin, most_recent != 0, new_history,
                                         new_scale);
    return launched();
  }
  unsigned blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  amaxUpdateKernel<<<blocks, kThreads, 0, s->stream>>>(
      history, scale, amax, len, n, fp8_max, margin, most_recent != 0,
      new_history, new_scale);
  return launched();
}

} // extern "C"
