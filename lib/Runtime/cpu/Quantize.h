//===- Quantize.h - CPU reference quantization ------------------*- C++ -*-===//
//
// Scale computation and quantization of TransformerEngine's recipes on the
// CPU (reference §4, §8.4), built on te_kernels/formats.h so that the CPU
// and GPU produce the same bits: current and delayed per-tensor FP8 scaling
// (with the amax-history update), and MXFP8 1x32 block scaling.
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

/// NVFP4 (§4.5) rowwise, 1x16 blocks, round to nearest (no RHT, no
/// stochastic rounding): global S_enc = 448*6 / amax(x) (1 when amax is 0);
/// per block S_dec = e4m3(block_amax * S_enc / 6); values e2m1(x * S_enc /
/// S_dec), two per byte (even element in the low nibble). Writes q [rows,
/// cols/2], the E4M3 block scales in [roundup(rows,128),
/// roundup(cols/16,4)] and returns the global amax (amax_rowwise).
float quantizeNVFP4Rowwise(const float *x, int64_t rows, int64_t cols,
                           uint8_t *q, uint8_t *scales);
void dequantizeNVFP4Rowwise(const uint8_t *q, const uint8_t *scales,
                            float globalAmax, int64_t rows, int64_t cols,
                            float *x);

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
