//===- Quantize.h - CPU reference quantization ------------------*- C++ -*-===//
//
// Scale computation and quantization of TransformerEngine's recipes on the
// CPU (reference §4, §8.4), built on te_kernels/formats.h so that the CPU
// and GPU produce the same bits: current and delayed per-tensor FP8 scaling
// (with the amax-history update), MXFP8 1x32 block scaling, Float8 block
// scaling and NVFP4 (two-level E4M3 / fp32 scales, 16x16 tiles, stochastic
// rounding, the random Hadamard transform).
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_CPU_QUANTIZE_H
#define TE_LIB_RUNTIME_CPU_QUANTIZE_H

#include <cstdint>

namespace te::cpu {

enum class FP8 { E4M3, E5M2 };

/// The smallest multiple of b (> 0) not below a (>= 0).
inline int64_t roundUpTo(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

/// Largest finite value: 448 (E4M3) or 57344 (E5M2).
float fp8Max(FP8 format);

uint8_t quantizeFP8(float x, FP8 format);
float dequantizeFP8(uint8_t q, FP8 format);

/// Current scaling's scale from an amax: amax < eps counts as eps; a zero
/// or non-finite amax gives 1; otherwise fp8_max / amax, an infinite result
/// becoming FLT_MAX; with `pow2` rounded down to a power of two.
float scaleFromAmax(float amax, float fp8MaxValue, bool pow2, float eps = 0);

/// max |x|
float amaxOf(const float *x, int64_t n);

/// q = fp8(x * scale) for n values; returns the amax of x.
float quantizePerTensor(const float *x, int64_t n, float scale, FP8 format,
                        uint8_t *q);
void dequantizePerTensor(const uint8_t *q, int64_t n, float scaleInv,
                         FP8 format, float *x);

/// Delayed scaling's update (§4.1) for `n` quantizer slots: amax per slot =
/// max over the history (or its row 0 when `mostRecent`); the history
/// [len, n] rolls by -1 along its first dim and row 0 is zeroed; scale =
/// (fp8_max / amax) / 2^margin when amax is finite and > 0, else unchanged;
/// an infinite scale becomes FLT_MAX.
void updateDelayedScaling(float *amaxHistory, float *scale, int64_t len,
                          int64_t n, float fp8MaxValue, int margin,
                          bool mostRecent);

/// MXFP8 rowwise quantization of x [rows, cols] (cols % 32 == 0): one E8M0
/// scale per 1x32 block, scale = ceil_pow2(amax_block / fp8_max), written
/// to `scaleInv` in TE's compact layout [roundup(rows,128),
/// roundup(cols/32,4)] (padding zero); data q [rows, cols].
void quantizeMXFP8Rowwise(const float *x, int64_t rows, int64_t cols,
                          FP8 format, uint8_t *q, uint8_t *scaleInv);
void dequantizeMXFP8Rowwise(const uint8_t *q, const uint8_t *scaleInv,
                            int64_t rows, int64_t cols, FP8 format, float *x);

/// Columns of TE's compact MXFP8 rowwise scale tensor.
int64_t mxfp8RowwiseScaleCols(int64_t cols);

/// Float8 block scaling (§4.4) of x [rows, cols], E4M3, rowwise: with
/// `block2d` one scale per 128x128 block, else per 1x128 block; scale =
/// scaleFromAmax(block amax, 448, pow2 = !fp32Scales). Writes q [rows, cols]
/// and scale_inv in TE's compact layout: 1x128 ->
/// [ceil(cols/128), roundup(rows, 4)] (row index fastest, "GEMM ready");
/// 128x128 -> [ceil(rows/128), roundup(ceil(cols/128), 4)]. Padding is 0.
void quantizeBlockRowwise(const float *x, int64_t rows, int64_t cols,
                          bool block2d, bool fp32Scales, uint8_t *q,
                          float *scaleInv);
void dequantizeBlockRowwise(const uint8_t *q, const float *scaleInv,
                            int64_t rows, int64_t cols, bool block2d, float *x);

//===----------------------------------------------------------------------===//
// NVFP4 (§4.5): E2M1 codes (sign << 3 | magnitude index; magnitudes 0, 0.5,
// 1, 1.5, 2, 3, 4, 6), two per byte with the even element in the low
// nibble; one E4M3 scale S_dec per 16-element block; an fp32 global amax.
//===----------------------------------------------------------------------===//

/// Columns of NVFP4's compact scale tensor for rows of `cols` elements:
/// roundup(cols / 16, 4) (its rows: roundup(rows, 128)).
int64_t nvfp4ScaleCols(int64_t cols);

/// The global encode scale S_enc = 448 * 6 / globalAmax: 1 when the amax
/// is 0 or not finite, FLT_MAX when the quotient overflows.
float nvfp4EncodeScale(float globalAmax);

/// The 32 random bits of stochastic rounding for element `index` of copy
/// `copy` (te_rt_nvfp4_random_bits): the splitmix64 finalizer of
/// (contextSeed ^ seed * 0xD1B54A32D192ED03) + (2 * index + copy + 1) *
/// 0x9E3779B97F4A7C15, all mod 2^64; the high 32 bits.
uint32_t nvfp4RandomBits(uint64_t contextSeed, uint64_t seed, int32_t copy,
                         int64_t index);

/// fp32 -> E2M1 with stochastic rounding: |x| clamped to 6; lo = the
/// largest magnitude <= |x|, hi the next; |x| == lo stays lo, otherwise it
/// rounds up iff u < p, u = (r >> 8) * 2^-24 and p = (|x| - lo) / (hi - lo)
/// in fp32. Sign and NaN as floatToE2M1: the sign bit is kept (a negative
/// value that rounds to 0 gives 0x8), NaN gives +6 (0x7).
uint8_t floatToE2M1Stochastic(float x, uint32_t r);

/// How quantizeNVFP4 forms blocks and rounds.
struct NVFP4Options {
  /// One block amax per 16x16 tile (its S_dec written for each of the
  /// tile's rows) instead of per 1x16 block.
  bool block2d = false;
  /// Stochastic rounding with the bits of nvfp4RandomBits(contextSeed,
  /// seed, copy, row * cols + col); else round to nearest even.
  bool stochastic = false;
  uint64_t contextSeed = 0, seed = 0;
  /// 0 for a rowwise copy, 1 for a columnwise one (the quantization of
  /// x^T): selects the random-bit stream.
  int32_t copy = 0;
  /// Row-scaled NVFP4: one global amax per row (written here, `rows`
  /// floats), each row quantized with its own S_enc; not with block2d.
  float *rowAmax = nullptr;
};

/// NVFP4 quantization of x [rows, cols] (cols % 16 == 0; with block2d
/// partial tiles at the bottom edge are allowed): globalAmax = max |x|
/// (NaNs ignored), S_enc = nvfp4EncodeScale(globalAmax); per block S_dec =
/// e4m3(block_amax * S_enc / 6) (the scale byte), values e2m1(x * (S_enc /
/// S_dec)) (x * 0 when S_dec is 0). Writes q [rows, cols/2] and the scale
/// bytes in the compact layout [roundup(rows,128), nvfp4ScaleCols(cols)]
/// (padding 0); returns globalAmax. A columnwise copy is this applied to
/// x^T. With options.rowAmax each row i takes S_enc_i =
/// nvfp4EncodeScale(max |x[i, :]|) instead (its amax written to rowAmax[i]).
float quantizeNVFP4(const float *x, int64_t rows, int64_t cols,
                    const NVFP4Options &options, uint8_t *q, uint8_t *scales);

/// NVFP4 quantization with TE's 4-over-6 block scales (nvfp4_4over6), round
/// to nearest even, of x [rows, cols] (both % 16 == 0): A = globalAmax,
/// S_enc = 6 * e4m3Max / A (1 when A or S_enc is 0, FLT_MAX on overflow),
/// S_dec = 1 / S_enc. Per block (1x16, or 16x16 with block2d) of amax b,
/// base = b / 6 * S_enc; candidate 6's scale byte is e4m3(min(base, 448)),
/// candidate 4's e4m3(min(base * 1.5, 448)); a candidate with scale s codes
/// v as e2m1(v * min(1 / (s * S_dec), FLT_MAX)) and has the error sum, in
/// element order, of |d| (MAE) or d * d (mse), d = e2m1 * s * A / (6 *
/// e4m3Max) - v, each step rounded to fp32; with block2d each tile row's
/// sum, the 16 rows added as r + r+8, then + 4, + 2, + 1. Candidate 4 is
/// kept iff its error is smaller. Layout as quantizeNVFP4; returns A.
float quantizeNVFP4FourOverSix(const float *x, int64_t rows, int64_t cols,
                               bool block2d, bool mse, float e4m3Max,
                               uint8_t *q, uint8_t *scales);

/// NVFP4 rowwise, 1x16 blocks, round to nearest even (quantizeNVFP4 with
/// default options). Returns the global amax (amax_rowwise).
float quantizeNVFP4Rowwise(const float *x, int64_t rows, int64_t cols,
                           uint8_t *q, uint8_t *scales);
/// x = e2m1(code) * S_dec / S_enc, the value the codes stand for.
void dequantizeNVFP4Rowwise(const uint8_t *q, const uint8_t *scales,
                            float globalAmax, int64_t rows, int64_t cols,
                            float *x);
/// x = e2m1(code) * e4m3(scale byte) (exact in fp32), without the global
/// scale: the operand values of the NVFP4 GEMM. Compact scales.
void dequantizeNVFP4Blocks(const uint8_t *q, const uint8_t *scales,
                           int64_t rows, int64_t cols, float *x);

/// The 16x16 random Hadamard transform matrix of NVFP4's wgrad operands,
/// row-major: M[i][j] = H[i][j] * s[j] / 4 with H[i][j] =
/// (-1)^popcount(i & j) (Sylvester) and s = 1 1 1 -1 1 -1 -1 -1 -1 -1 -1 1
/// -1 1 -1 -1. Orthogonal (M M^T = I).
void nvfp4RHTMatrix(float m[256]);

/// Replaces every 16-element chunk v of the rows of x [rows, cols]
/// (cols % 16 == 0) by v . M: out[j] = sum over i = 0..15 of v[i] * M[i][j],
/// accumulated in fp32 from 0 in index order.
void applyNVFP4RHT(float *x, int64_t rows, int64_t cols);

/// MXFP8 columnwise quantization of x [rows, cols] (both % 32): one E8M0
/// scale per 32x1 block down each column; data stays [rows, cols] (not
/// transposed); scales in TE's compact layout [roundup(rows/32, 4),
/// roundup(cols, 128)].
void quantizeMXFP8Columnwise(const float *x, int64_t rows, int64_t cols,
                             FP8 format, uint8_t *q, uint8_t *scaleInv);

/// Reorders a compact block-scale tensor [rowsPadded, colsPadded]
/// (rowsPadded % 128 == 0, colsPadded % 4 == 0) into cuBLAS's block-scaling
/// layout (§4.3): 128x4 tiles of 512 bytes, tiles in row-major order, and
/// element (r, c) of a tile at (r % 32) * 16 + (r / 32) * 4 + c. Columnwise
/// scales are swizzled as the rowwise swizzle of their transpose.
void swizzleScales(const uint8_t *compact, int64_t rowsPadded,
                   int64_t colsPadded, uint8_t *swizzled);
void unswizzleScales(const uint8_t *swizzled, int64_t rowsPadded,
                     int64_t colsPadded, uint8_t *compact);

} // namespace te::cpu

#endif // TE_LIB_RUNTIME_CPU_QUANTIZE_H
