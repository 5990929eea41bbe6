//===- fp8_block.cu - Float8 block scaling: quantize and GEMM -------------===//
//
// The CUDA side of te_rt_quantize_fp8_block and te_rt_gemm_fp8_block
// (TransformerEngine's Float8BlockScaling, DeepSeek-style FP8): E4M3 data
// with one fp32 scale per 1x128 ("1-D") or 128x128 ("2-D") block.
//
// - quantize: one CTA of 256 threads per 128x128 tile of x (grid-stride
//   over the tiles), x read once. The tile's rows are loaded with 16-byte
//   vectors into registers (128 / kVec threads per row, kVec = 4 f32 or 8
//   16-bit values per thread and row; 8 or 16 rows per thread), then:
//     * rowwise 1-D: each row's amax is a shuffle reduction over the
//       threads of the row; the bytes go straight to `data` (4- or 8-byte
//       stores) and scale_inv[jb][row] is written by the row's first thread;
//     * columnwise 1-D: each thread's per-column maxima are reduced over
//       the tile's rows (a shuffle between the two rows a warp holds for
//       16-bit inputs, then the 8 warps through shared memory); 128 threads
//       turn them into the column scales (kept in shared memory, written as
//       columnwise_scale_inv[ib][col]);
//     * 2-D: one amax for the whole tile (warp shuffles, then the warps'
//       maxima in shared memory) and one scale for both copies.
//   The columnwise bytes of x^T are produced through shared memory: every
//   thread stores its fp8(x * column scale) row-wise into a 128x128-byte
//   tile (XOR-swizzled words, as quantize.cu's transpose), then each thread
//   gathers 16 rows of one column and writes them as 16 contiguous bytes
//   of columnwise_data (a 128-byte line per 8 threads). Edge tiles (any
//   rows, cols >= 1) read zeros outside x (a zero never raises an amax) and
//   store only inside; misaligned pointers or rows that are not whole
//   vectors fall back to element loads / byte stores. Each tile also writes
//   the zero padding of the scale tensors that falls in its span.
//   Scale and bytes are bit-identical to the CPU backend
//   (te::cpu::quantizeBlockRowwise): the same amax (NaN skipped), the same
//   scaleFromAmax (448 / amax, 1 for a zero or non-finite amax, FLT_MAX on
//   overflow, the mantissa cleared with pow2), x * scale rounded once in
//   fp32, the E4M3 conversion of internal.cuh, scale_inv = 1 / scale.
// - GEMM: cuBLASLt's block-scaled FP8 matmul (Hopper, cuBLAS 12.9+: scale
//   modes VEC128_32F for 1-D and BLK128x128_32F for 2-D operands) through
//   gemm_fp8.cu's fp8Matmul; see te_kernels_gemm_fp8_block for the scale
//   layouts and the fallback.
//
//===----------------------------------------------------------------------===//

#include "internal.cuh"

#include <algorithm>

using namespace te::kernels;

namespace {

constexpr int kBlock = 128; // the block edge, and the tile's
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr float kE4M3Max = 448.0f;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/// What the quantize kernel reads and writes.
struct BlockArgs {
  const void *x;
  int64_t rows, cols;
  int64_t rowTiles, colTiles; // ceil(rows / 128), ceil(cols / 128)
  bool block2d, pow2;
  uint8_t *data;     // [rows, cols], or null (no rowwise copy)
  float *scaleInv;   // the rowwise scales
  int64_t ld;        // their row length: roundup(rows, 4) or
                     // roundup(colTiles, 4)
  uint8_t *cwData;   // [cols, rows], or null (no columnwise copy)
  float *cwScaleInv; // the columnwise scales
  int64_t cwLd;      // roundup(cols, 4) or roundup(rowTiles, 4)
  bool vecLoad;      // x 16-byte aligned and rows of whole vectors
  bool vecData;      // data aligned for kVec-byte stores, same rows
  bool vecCw;        // columnwise_data 16-byte aligned, rows % 16 == 0
};

/// The E4M3 bytes of f[e] * s[e], little-endian, four per word.
template <int kVec>
__device__ inline void packE4M3(const float (&f)[kVec], const float (&s)[kVec],
                                uint32_t (&w)[kVec / 4]) {
#pragma unroll
  for (int i = 0; i < kVec / 4; ++i)
    w[i] = toFP8x2<kE4M3>(f[4 * i] * s[4 * i], f[4 * i + 1] * s[4 * i + 1]) |
           (toFP8x2<kE4M3>(f[4 * i + 2] * s[4 * i + 2],
                           f[4 * i + 3] * s[4 * i + 3])
            << 16);
}

/// Stores kVec packed bytes at p with one 4- or 8-byte store.
template <int kVec>
__device__ inline void storePacked(uint8_t *p, const uint32_t (&w)[kVec / 4]) {
  if constexpr (kVec == 8)
    *reinterpret_cast<uint2 *>(p) = make_uint2(w[0], w[1]);
  else
    *reinterpret_cast<uint32_t *>(p) = w[0];
}

__device__ inline uint8_t byteOf(const uint32_t *w, int e) {
  return static_cast<uint8_t>(w[e / 4] >> (8 * (e % 4)));
}

/// quantizeBlockKernel's tile layout and the steps of one tile, each
/// force-inlined into the kernel (its code, moved: the same operations in
/// the same order). Thread t holds kVec values of kPasses rows of the
/// tile: columns c .. c + kVec - 1 (c = t % kRowThreads * kVec) of rows
/// rFirst + p * kRowsPerPass (rFirst = t / kRowThreads).
template <typename E> struct BlockTile {
  using T = typename E::T;
  static constexpr int kVec = perVec<E>();          // values per 16 bytes
  static constexpr int kRowThreads = kBlock / kVec; // threads per tile row
  static constexpr int kRowsPerPass = kThreads / kRowThreads;
  static constexpr int kPasses = kBlock / kRowsPerPass; // rows per thread
  static_assert(kRowThreads <= 32 && kPasses * kRowsPerPass == kBlock,
                "tile shape");

  /// The thread's values of the tile whose rows start at r0: rows r0 +
  /// rFirst + p * kRowsPerPass, columns gc .. gc + kVec - 1; zeros outside
  /// x.
  static __device__ __forceinline__ void
  load(const BlockArgs &a, const T *x, int64_t rows, int64_t cols, int64_t r0,
       int64_t gc, int rFirst, float (&f)[kPasses][kVec]) {
    if (a.vecLoad) {
      uint4 raw[kPasses];
#pragma unroll
      for (int p = 0; p < kPasses; ++p) {
        const int64_t gr = r0 + rFirst + p * kRowsPerPass;
        raw[p] =
            gr < rows && gc < cols
                ? __ldg(reinterpret_cast<const uint4 *>(x + gr * cols + gc))
                : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int p = 0; p < kPasses; ++p)
        unpack<E>(raw[p], f[p]);
    } else {
#pragma unroll
      for (int p = 0; p < kPasses; ++p) {
        const int64_t gr = r0 + rFirst + p * kRowsPerPass;
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          f[p][e] = gr < rows && gc + e < cols ? E::load(x[gr * cols + gc + e])
                                               : 0.0f;
      }
    }
  }

  /// The amaxes: per row (over this thread's vector), per column (over
  /// this thread's rows). fmaxf skips NaN, as std::max(amax, NaN) does on
  /// the CPU.
  static __device__ __forceinline__ void amaxes(const float (&f)[kPasses][kVec],
                                                float (&rowMax)[kPasses],
                                                float (&colMax)[kVec]) {
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      colMax[e] = 0.0f;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      float m = 0.0f;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float v = fabsf(f[p][e]);
        m = fmaxf(m, v);
        colMax[e] = fmaxf(colMax[e], v);
      }
      rowMax[p] = m;
    }
  }

  /// 2-D: the amax of the tile, over the thread's rows (rowMax), warp
  /// shuffles, then the warps' maxima through warpMaxima.
  static __device__ __forceinline__ float
  tileAmax(const float (&rowMax)[kPasses], float *warpMaxima, int lane,
           int warp) {
    float m = 0.0f;
#pragma unroll
    for (int p = 0; p < kPasses; ++p)
      m = fmaxf(m, rowMax[p]);
    m = warpMax(m);
    if (lane == 0)
      warpMaxima[warp] = m;
    __syncthreads();
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      m = fmaxf(m, warpMaxima[w]);
    return m;
  }

  /// 1-D: rowwise, each row's amax over the row's threads (rowMax);
  /// colwise, each column's over the tile's rows, turned into the column
  /// scales (colScale) and the columnwise scale_inv of tile row ib.
  static __device__ __forceinline__ void
  reduce1d(const BlockArgs &a, float (&rowMax)[kPasses], float (&colMax)[kVec],
           float (&colPart)[kWarps][kBlock], float *colScale, int lane,
           int warp, int c, int64_t ib, int64_t c0, int64_t cols, bool rowwise,
           bool colwise) {
    if (rowwise) {
#pragma unroll
      for (int p = 0; p < kPasses; ++p)
        for (int o = kRowThreads / 2; o > 0; o >>= 1)
          rowMax[p] =
              fmaxf(rowMax[p], __shfl_xor_sync(0xffffffffu, rowMax[p], o));
    }
    if (colwise) {
      // The lanes of a warp that hold the same columns (16-bit inputs:
      // lane l and l + 16), then the warps.
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        for (int o = 16; o >= kRowThreads; o >>= 1)
          colMax[e] =
              fmaxf(colMax[e], __shfl_xor_sync(0xffffffffu, colMax[e], o));
      if (lane < kRowThreads)
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          colPart[warp][c + e] = colMax[e];
      __syncthreads();
      if (threadIdx.x < kBlock) {
        const int col = threadIdx.x;
        float m = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w)
          m = fmaxf(m, colPart[w][col]);
        const float s = scaleFromAmax(m, kE4M3Max, a.pow2);
        colScale[col] = s;
        const int64_t g = c0 + col; // row g of x^T
        if (g < a.cwLd)
          a.cwScaleInv[ib * a.cwLd + g] = g < cols ? 1.0f / s : 0.0f;
      }
      __syncthreads();
    }
  }

  /// Rowwise copy: data straight from the registers (and 1-D's scale_inv
  /// of each row).
  static __device__ __forceinline__ void
  storeRowwise(const BlockArgs &a, const float (&f)[kPasses][kVec],
               const float (&rowMax)[kPasses], float tileScale, int64_t r0,
               int64_t gc, int rFirst, int c, int64_t jb, int64_t rows,
               int64_t cols) {
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int64_t gr = r0 + rFirst + p * kRowsPerPass;
      const float s =
          a.block2d ? tileScale : scaleFromAmax(rowMax[p], kE4M3Max, a.pow2);
      float sv[kVec];
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        sv[e] = s;
      uint32_t w[kVec / 4];
      packE4M3<kVec>(f[p], sv, w);
      if (gr < rows) {
        uint8_t *out = a.data + gr * cols + gc;
        if (a.vecData && gc < cols)
          storePacked<kVec>(out, w);
        else if (!a.vecData)
#pragma unroll
          for (int e = 0; e < kVec; ++e)
            if (gc + e < cols)
              out[e] = byteOf(w, e);
      }
      if (!a.block2d && c == 0 && gr < a.ld)
        a.scaleInv[jb * a.ld + gr] = gr < rows ? 1.0f / s : 0.0f;
    }
  }

  /// The columnwise copy's bytes from the shared tile (filled by the
  /// kernel) into columnwise_data: task (col, q) writes row c0 + col of
  /// x^T, its bytes r0 + 16q .. + 16; consecutive threads take consecutive
  /// pieces of a row.
  static __device__ __forceinline__ void
  storeTransposed(const BlockArgs &a, const uint8_t *tile, int64_t r0,
                  int64_t c0, int64_t rows, int64_t cols) {
    // (vecCw: rows % 16 == 0, so a piece that starts in the tensor is
    // whole.)
    storeTilePieces<kBlock, kBlock>(tile, a.cwData + c0 * rows + r0, rows,
                                    rows - r0, cols - c0, a.vecCw);
  }
};

template <typename E>
__global__ void __launch_bounds__(kThreads, 2)
    quantizeBlockKernel(BlockArgs a) {
  gridWait();
  using T = typename E::T;
  using Tile = BlockTile<E>;
  constexpr int kVec = Tile::kVec, kPasses = Tile::kPasses;
  __shared__ __align__(16) uint8_t tile[kBlock * kBlock];
  __shared__ float colPart[kWarps][kBlock];
  __shared__ float colScale[kBlock];
  __shared__ float warpMaxima[kWarps];

  const T *x = static_cast<const T *>(a.x);
  const int64_t rows = a.rows, cols = a.cols;
  const bool rowwise = a.data != nullptr, colwise = a.cwData != nullptr;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int c = threadIdx.x % Tile::kRowThreads * kVec; // first tile column
  const int rFirst = threadIdx.x / Tile::kRowThreads;   // tile row of pass 0

  for (int64_t t = blockIdx.x; t < a.rowTiles * a.colTiles; t += gridDim.x) {
    const int64_t ib = t / a.colTiles, jb = t % a.colTiles;
    const int64_t r0 = ib * kBlock, c0 = jb * kBlock, gc = c0 + c;
    float f[kPasses][kVec];
    Tile::load(a, x, rows, cols, r0, gc, rFirst, f);
    float rowMax[kPasses], colMax[kVec];
    Tile::amaxes(f, rowMax, colMax);

    float tileScale = 1.0f; // 2-D: the tile's scale
    if (a.block2d) {
      const float m = Tile::tileAmax(rowMax, warpMaxima, lane, warp);
      tileScale = scaleFromAmax(m, kE4M3Max, a.pow2);
      if (threadIdx.x == 0) {
        const float inv = 1.0f / tileScale;
        if (rowwise) {
          float *si = a.scaleInv + ib * a.ld;
          si[jb] = inv;
          if (jb == a.colTiles - 1) // the padding of the scale row
            for (int64_t z = jb + 1; z < a.ld; ++z)
              si[z] = 0.0f;
        }
        if (colwise) {
          float *si = a.cwScaleInv + jb * a.cwLd;
          si[ib] = inv;
          if (ib == a.rowTiles - 1)
            for (int64_t z = ib + 1; z < a.cwLd; ++z)
              si[z] = 0.0f;
        }
      }
    } else {
      Tile::reduce1d(a, rowMax, colMax, colPart, colScale, lane, warp, c, ib,
                     c0, cols, rowwise, colwise);
    }

    if (rowwise)
      Tile::storeRowwise(a, f, rowMax, tileScale, r0, gc, rFirst, c, jb, rows,
                         cols);

    // Columnwise copy: the bytes of x^T through the shared tile.
    if (colwise) {
      float sv[kVec];
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        sv[e] = a.block2d ? tileScale : colScale[c + e];
#pragma unroll
      for (int p = 0; p < kPasses; ++p) {
        uint32_t w[kVec / 4];
        packE4M3<kVec>(f[p], sv, w);
        storePacked<kVec>(
            tile + swizzled<kBlock>(rFirst + p * Tile::kRowsPerPass, c), w);
      }
      __syncthreads();
      Tile::storeTransposed(a, tile, r0, c0, rows, cols);
    }
    __syncthreads(); // the shared arrays are refilled by the next tile
  }
}

/// x[i, j] = e4m3(q[i, j]) * the scale_inv of its block, in fp32 (as
/// te::cpu::dequantizeBlockRowwise): the fallback GEMM's operands.
__global__ void dequantizeBlockKernel(const uint8_t *q, const float *scaleInv,
                                      int64_t rows, int64_t cols, bool block2d,
                                      int64_t ld, float *x) {
  gridWait();
  for (int64_t i = blockIdx.y; i < rows; i += gridDim.y)
    for (int64_t j = globalId(); j < cols; j += globalStride()) {
      const float s = block2d ? scaleInv[i / kBlock * ld + j / kBlock]
                              : scaleInv[j / kBlock * ld + i];
      x[i * cols + j] = te::formats::e4m3ToFloat(q[i * cols + j]) * s;
    }
}

const char *dequantizeBlock(te_kernels_state *s, const void *q,
                            const float *scaleInv, int64_t rows, int64_t cols,
                            bool block2d, float *x) {
  const int64_t ld =
      block2d ? roundUp(ceilDiv(cols, kBlock), 4) : roundUp(rows, 4);
  dim3 grid(static_cast<unsigned>(
                std::clamp<int64_t>(ceilDiv(cols, kThreads), 1, 64)),
            static_cast<unsigned>(std::clamp<int64_t>(rows, 1, 65535)));
  launchKernel(s, dequantizeBlockKernel, grid, kThreads, 0,
               static_cast<const uint8_t *>(q), scaleInv, rows, cols, block2d,
               ld, x);
  return launched();
}

} // namespace

extern "C" {

const char *te_kernels_quantize_fp8_block(
    te_kernels_state *s, int dtype, const void *x, int64_t rows, int64_t cols,
    int block_2d, int pow2_scale, void *data, float *scale_inv,
    void *columnwise_data, float *columnwise_scale_inv) {
  if (rows == 0 || cols == 0 || (!data && !columnwise_data))
    return nullptr; // nothing to write (empty scale tensors)
  BlockArgs a{};
  a.x = x;
  a.rows = rows;
  a.cols = cols;
  a.rowTiles = ceilDiv(rows, kBlock);
  a.colTiles = ceilDiv(cols, kBlock);
  a.block2d = block_2d != 0;
  a.pow2 = pow2_scale != 0;
  a.data = static_cast<uint8_t *>(data);
  a.scaleInv = scale_inv;
  a.ld = a.block2d ? roundUp(a.colTiles, 4) : roundUp(rows, 4);
  a.cwData = static_cast<uint8_t *>(columnwise_data);
  a.cwScaleInv = columnwise_scale_inv;
  a.cwLd = a.block2d ? roundUp(a.rowTiles, 4) : roundUp(cols, 4);
  a.vecCw = aligned(columnwise_data, 16) && rows % 16 == 0;
  const int sms = smCount();
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    constexpr int kVec = perVec<E>();
    a.vecLoad = aligned(x, 16) && cols % kVec == 0;
    a.vecData = aligned(data, kVec) && cols % kVec == 0;
    launchKernel(s, quantizeBlockKernel<E>,
                 blocksFor(a.rowTiles * a.colTiles, sms), kThreads, 0, a);
    return launched();
  });
}

// Scale layouts. Row-major D[m, n] is the column-major cuBLASLt problem
// D^T = B'.A' with A' = b (M = n, op T, stored [k, n] column-major) and
// B' = a (N = m, op N, stored [k, m]), as in every FP8 GEMM here; the
// scales travel with their operand. cuBLASLt (cuBLAS documentation,
// "128-element 1D and 128x128 2D block scaling for FP8 data types",
// scaling factors layout) wants, with L = ceil(k / 128):
//   VEC128_32F:     an M x L (N x L) fp32 matrix, M-major: element (i, l) at
//                   l * M + i, i.e. te_rt's 1-D layout [ceil(k/128),
//                   roundup(rows, 4)] once rows is a multiple of 4;
//   BLK128x128_32F: roundup(L, 4) x ceil(M / 128), K-major with a column
//                   stride of roundup(L, 4): te_rt's 2-D layout
//                   [ceil(rows/128), roundup(ceil(k/128), 4)];
// and 16-byte-aligned scale pointers. These are TE's "GEMM ready" scale
// tensors, which TE hands to cuBLASLt the same way (transformer_engine/
// common/gemm/cublaslt_gemm.cu: block-scaled operands are always used as
// A = op T, B = op N with their own scale_inv and the modes above).
//
// Fallback: the dequantized fp32 GEMM (dequantizedGemm, the value the CPU
// backend computes up to summation order) when
//   - m, n or k is not a multiple of 16 (FP8 tensor-core leading
//     dimensions; it also keeps M and N multiples of 4 for the 1-D scales
//     and meets TE's own m % 8 / n % 8 requirement),
//   - a scale pointer is not 16-byte aligned,
//   - cuBLASLt is older than 12.9 (no block scale modes), or
//   - cuBLASLt has no algorithm / returns NOT_SUPPORTED (block scaling is
//     a Hopper (sm_90) feature of cuBLASLt: other GPUs take this path).
const char *te_kernels_gemm_fp8_block(te_kernels_state *s, int out_dtype,
                                      const void *a, const float *a_scale_inv,
                                      int a_block_2d, const void *b,
                                      const float *b_scale_inv, int b_block_2d,
                                      const void *bias, void *d, int64_t m,
                                      int64_t n, int64_t k, int accumulate) {
  if (a_block_2d && b_block_2d)
    return "FP8 block GEMM: both operands with 128x128 blocks is not "
           "supported (1-D x 1-D, 1-D x 2-D or 2-D x 1-D)";
  if (m == 0 || n == 0)
    return nullptr;
  if (k == 0)
    return gemmWithoutK(s, out_dtype, bias, d, m, n, accumulate);
#if CUBLAS_VERSION >= 120900
  if (m % 16 == 0 && n % 16 == 0 && k % 16 == 0 && aligned(a_scale_inv, 16) &&
      aligned(b_scale_inv, 16)) {
    auto modeOf = [](int block2d) -> int {
      return block2d ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                     : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    };
    bool unsupported = false;
    if (const char *err = fp8Matmul(
            s, out_dtype, {a, CUDA_R_8F_E4M3, a_scale_inv, modeOf(a_block_2d)},
            {b, CUDA_R_8F_E4M3, b_scale_inv, modeOf(b_block_2d)}, bias, d, m, n,
            k, accumulate, &unsupported))
      return err;
    if (!unsupported)
      return nullptr;
  }
#endif
  return dequantizedGemm(
      s, out_dtype,
      [&](float *A, float *B) -> const char * {
        if (const char *err =
                dequantizeBlock(s, a, a_scale_inv, m, k, a_block_2d != 0, A))
          return err;
        return dequantizeBlock(s, b, b_scale_inv, n, k, b_block_2d != 0, B);
      },
      bias, d, m, n, k, accumulate);
}

} // extern "C"
