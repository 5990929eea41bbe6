//===- tile.cuh - Swizzled byte tiles and their transposed stores -*- CUDA -*-===//
//
// The shared-memory tile every FP8 transpose goes through (the casts of
// quantize.cu and quantize_act.cu, elementwise.cu's byte transpose, the
// block-scaled casts of fp8_block.cu): FP8 bytes are written into it row
// by row and leave it column by column. Whole 128-row tiles (quantize.cu's
// cast and elementwise.cu's byte transpose) leave by quads: a thread takes
// 4 columns x 8 rows, 8 four-byte shared loads, two 4x4 byte transposes in
// byte permutes (PTX prmt), 4 eight-byte stores. Everything here but the
// block-wide loop is __host__ __device__, so that te-transpose-check
// (runtime-kernels/test/transpose_check.cu) runs it on the CPU: the bytes,
// and the shared-memory banks each warp's loads hit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_KERNELS_SRC_TILE_CUH
#define TE_KERNELS_SRC_TILE_CUH

#include <cstdint>

namespace te::kernels {

/// Byte offset of element (r, c) of a shared-memory tile of kCols-byte
/// rows, the 4-byte words of row r XOR-swizzled by ((r / 16) % 8) * 2: the
/// row-wise vector stores and a quad's four-byte loads (transposedQuad)
/// hit distinct banks. 4- and 8-byte vectors stay contiguous (the XOR is
/// even).
template <int kCols> __host__ __device__ inline int swizzled(int r, int c) {
  return r * kCols + (((c >> 2) ^ (((r >> 4) & 7) << 1)) << 2) + (c & 3);
}

/// PTX prmt in its default mode: byte n of the result is byte
/// (sel >> 4n) & 7 of the 8-byte value hi:lo (bytes 0-3 from lo).
__host__ __device__ inline uint32_t bytePerm(uint32_t lo, uint32_t hi,
                                             uint32_t sel) {
#ifdef __CUDA_ARCH__
  return __byte_perm(lo, hi, sel);
#else
  const uint64_t v = (static_cast<uint64_t>(hi) << 32) | lo;
  uint32_t r = 0;
  for (int n = 0; n < 4; ++n)
    r |= static_cast<uint32_t>((v >> (8 * ((sel >> (4 * n)) & 7))) & 0xffu)
         << (8 * n);
  return r;
#endif
}

/// A 4x4 byte block transposed: row[i] holds row i (byte j = column j),
/// col[j] gets column j (byte i = row i). With `swapped` row[] holds the
/// rows in the order 1, 0, 3, 2: flipping bit 2 of every selector nibble
/// swaps prmt's two operands, so the same 8 permutes undo it.
__host__ __device__ inline void transpose4x4(const uint32_t row[4],
                                             bool swapped, uint32_t col[4]) {
  const uint32_t flip = swapped ? 0x4444u : 0u;
  const uint32_t a = bytePerm(row[0], row[1], 0x5140u ^ flip); // c0, c1
  const uint32_t b = bytePerm(row[0], row[1], 0x7362u ^ flip); // c2, c3
  const uint32_t c = bytePerm(row[2], row[3], 0x5140u ^ flip);
  const uint32_t d = bytePerm(row[2], row[3], 0x7362u ^ flip);
  col[0] = bytePerm(a, c, 0x5410u);
  col[1] = bytePerm(a, c, 0x7632u);
  col[2] = bytePerm(b, d, 0x5410u);
  col[3] = bytePerm(b, d, 0x7632u);
}

/// The quads of a kRows x kCols tile: quad id takes columns 4w .. 4w + 3
/// and rows 8k .. 8k + 7, k = id % (kRows / 8), w = id / (kRows / 8), so
/// that consecutive threads write consecutive 8 bytes of a transposed row.
template <int kRows, int kCols> struct Quads {
  static_assert(kRows % 8 == 0 && kCols % 4 == 0, "tile shape");
  static constexpr int kChunks = kRows / 8;
  static constexpr int kCount = kChunks * (kCols / 4);
  /// Shared-memory offset of the load i (0..7) of quad id: row
  /// 8k + (i ^ (k & 1)) of word w. An odd k reads its rows pairwise
  /// swapped, so that at each load the warp's rows alternate in parity and
  /// (with the swizzle) its 32 words fall in 32 banks for 128 x 64 tiles
  /// (two per bank for 64 x 64; te-transpose-check counts them).
  static __host__ __device__ int loadOffset(int id, int i) {
    const int k = id % kChunks, w = id / kChunks;
    return swizzled<kCols>(8 * k + (i ^ (k & 1)), 4 * w);
  }
};

/// Quad id of a swizzled tile, transposed: out[j] holds column 4w + j's
/// rows 8k .. 8k + 7 (low word: rows 8k .. 8k + 3), one 8-byte store into
/// transposed row 4w + j at byte 8k.
template <int kRows, int kCols>
__host__ __device__ inline void transposedQuad(const uint8_t *tile, int id,
                                               uint64_t out[4]) {
  using Q = Quads<kRows, kCols>;
  uint32_t v[8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
    v[i] = *reinterpret_cast<const uint32_t *>(tile + Q::loadOffset(id, i));
  const bool swapped = (id % Q::kChunks) & 1;
  uint32_t lo[4], hi[4];
  transpose4x4(v, swapped, lo);
  transpose4x4(v + 4, swapped, hi);
#pragma unroll
  for (int j = 0; j < 4; ++j)
    out[j] = lo[j] | (static_cast<uint64_t>(hi[j]) << 32);
}

/// Quad id of a swizzled kRows x kCols tile stored transposed: column c
/// goes to dst + c * ld. dst and ld are multiples of 8 (the callers'
/// vector-store condition).
template <int kRows, int kCols>
__host__ __device__ inline void storeQuad(const uint8_t *tile, int id,
                                          uint8_t *dst, int64_t ld) {
  using Q = Quads<kRows, kCols>;
  uint64_t out[4];
  transposedQuad<kRows, kCols>(tile, id, out);
  const int k = id % Q::kChunks, w = id / Q::kChunks;
  uint8_t *p = dst + static_cast<int64_t>(4 * w) * ld + 8 * k;
#pragma unroll
  for (int j = 0; j < 4; ++j)
    *reinterpret_cast<uint64_t *>(p + j * ld) = out[j];
}

/// Rows 16q .. 16q + 15 of column c of a swizzled byte tile, packed for one
/// 16-byte store into a transposed row (byte i = row 16q + i).
template <int kCols>
__host__ __device__ inline uint4 transposedPiece(const uint8_t *tile, int q,
                                                 int c) {
  uint32_t w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    w[j] = 0;
#pragma unroll
    for (int b = 0; b < 4; ++b)
      w[j] |=
          static_cast<uint32_t>(tile[swizzled<kCols>(16 * q + 4 * j + b, c)])
          << (8 * b);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

/// The pieces of a kRows x kCols tile's transposed store that is not by
/// quads (a ragged or misaligned tile, or a kernel that keeps this form):
/// piece id takes rows 16q .. 16q + 15 of column c, c = id / (kRows / 16),
/// q = id % (kRows / 16), so that consecutive pieces fill a transposed row.
template <int kRows> struct Pieces {
  static_assert(kRows % 16 == 0, "tile shape");
  static constexpr int kChunks = kRows / 16;
};

/// Piece id of a swizzled kRows x kCols tile of which only rowsLeft rows
/// and colsLeft columns are the tensor's, stored transposed: column c goes
/// to dst + c * ld. One 16-byte store where `vec` (dst and ld multiples of
/// 16) and the piece's 16 rows are all there, else byte by byte; columns at
/// or past colsLeft and rows at or past rowsLeft are not written.
template <int kRows, int kCols>
__host__ __device__ inline void
storePiece(const uint8_t *tile, int id, uint8_t *dst, int64_t ld,
           int64_t rowsLeft, int64_t colsLeft, bool vec) {
  constexpr int kChunks = Pieces<kRows>::kChunks;
  const int c = id / kChunks, q = id % kChunks;
  if (c >= colsLeft)
    return;
  uint8_t *out = dst + c * ld + 16 * q;
  if (vec && 16 * q + 16 <= rowsLeft) {
    *reinterpret_cast<uint4 *>(out) = transposedPiece<kCols>(tile, q, c);
    return;
  }
  for (int i = 0; i < 16 && 16 * q + i < rowsLeft; ++i)
    out[i] = tile[swizzled<kCols>(16 * q + i, c)];
}

#ifdef __CUDACC__
/// storeQuad of every quad of the tile by the block's threads (consecutive
/// threads, consecutive quads).
template <int kRows, int kCols>
__device__ inline void storeTileTransposed(const uint8_t *tile, uint8_t *dst,
                                           int64_t ld) {
#pragma unroll 1
  for (int id = threadIdx.x; id < Quads<kRows, kCols>::kCount;
       id += blockDim.x)
    storeQuad<kRows, kCols>(tile, id, dst, ld);
}

/// storePiece of every piece of the tile by the block's threads
/// (consecutive threads, consecutive pieces of a transposed row).
template <int kRows, int kCols>
__device__ inline void storeTilePieces(const uint8_t *tile, uint8_t *dst,
                                       int64_t ld, int64_t rowsLeft,
                                       int64_t colsLeft, bool vec) {
#pragma unroll 1
  for (int id = threadIdx.x; id < Pieces<kRows>::kChunks * kCols;
       id += blockDim.x)
    storePiece<kRows, kCols>(tile, id, dst, ld, rowsLeft, colsLeft, vec);
}
#endif

} // namespace te::kernels

#endif // TE_KERNELS_SRC_TILE_CUH
