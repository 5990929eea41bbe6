//===- quantize.cuh - Shared parts of the FP8 casts ------------*- CUDA -*-===//
//
// What the per-tensor FP8 casts (quantize.cu) and the fused
// activation-casts (quantize_act.cu) share: their arguments, the scale
// they cast with, and the packing of fp8 bytes for vector stores.
//
//===----------------------------------------------------------------------===//

#ifndef TE_KERNELS_SRC_QUANTIZE_CUH
#define TE_KERNELS_SRC_QUANTIZE_CUH

#include "internal.cuh"

namespace te::kernels {

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

/// The largest finite value of FP8 format `format` (kE4M3 or kE5M2): the
/// numerator of current scaling's scale.
inline float fp8MaxOf(int format) {
  return format == kE4M3 ? 448.0f : 57344.0f;
}

__device__ inline float quantScale(const QuantArgs &a) {
  return a.scale ? *a.scale : scaleFromAmax(*a.amaxIn, a.fp8Max, a.pow2);
}

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

/// Current scaling inside one CTA whose shared memory holds all of a
/// [rows, cols] tensor as stored (stage, 16-byte aligned): the amax (the
/// max over the threads' m, each the max |value| of what it staged; the
/// cell blockAmax would write), the scale (quantScale's for that amax) and
/// scale_inv, then the FP8 bytes of the staged values into data (if set,
/// [rows, cols]) and transpose (if set, [cols, rows]): the bytes
/// te_kernels_quantize_fp8 writes for the staged tensor. Every thread of
/// the CTA calls it once; its first barrier also orders the staging.
/// Column c's rows go to the transpose 16 bytes per store where the rows
/// and the buffer allow.
template <typename E, int Fmt>
__device__ void castOwnScale(const typename E::T *stage, float m, int64_t rows,
                             int64_t cols, float fp8Max, bool pow2,
                             uint8_t *data, uint8_t *transpose,
                             float *scaleInv, float *amaxOut) {
  constexpr int P = perVec<E>();
  __shared__ float part[32];
  __shared__ float all;
  m = blockMax(m, part); // (its barrier: every value is staged)
  if (threadIdx.x == 0) {
    all = m > 0.0f ? m : 0.0f;
    if (amaxOut)
      *amaxOut = all;
  }
  __syncthreads();
  const float s = scaleFromAmax(all, fp8Max, pow2);
  if (threadIdx.x == 0)
    *scaleInv = 1.0f / s;
  const int64_t n = rows * cols;
  if (data) {
    if (cols % P == 0 && reinterpret_cast<uintptr_t>(data) % P == 0) {
      const uint4 *sv = reinterpret_cast<const uint4 *>(stage);
      for (int64_t i = threadIdx.x; i < n / P; i += blockDim.x) {
        float f[P];
        unpack<E>(sv[i], f);
        Packed<Fmt, P>(f, s).store(data + i * P);
      }
    } else {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        data[i] = toFP8<Fmt>(E::load(stage[i]) * s);
    }
  }
  if (!transpose)
    return;
  const bool vec =
      rows % 16 == 0 && reinterpret_cast<uintptr_t>(transpose) % 16 == 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    uint8_t *dst = transpose + c * rows;
    for (int64_t r0 = 0; r0 < rows; r0 += 16) {
      const int k1 = rows - r0 < 16 ? static_cast<int>(rows - r0) : 16;
      uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
      for (int k = 0; k < 16; k += 2)
        if (k < k1) {
          const float lo = E::load(stage[(r0 + k) * cols + c]) * s;
          const float hi =
              k + 1 < k1 ? E::load(stage[(r0 + k + 1) * cols + c]) * s : 0.0f;
          w[k / 4] |= toFP8x2<Fmt>(lo, hi) << (8 * (k % 4));
        }
      if (vec) {
        *reinterpret_cast<uint4 *>(dst + r0) =
            make_uint4(w[0], w[1], w[2], w[3]);
      } else {
        for (int k = 0; k < k1; ++k)
          dst[r0 + k] = static_cast<uint8_t>(w[k / 4] >> (8 * (k % 4)));
      }
    }
  }
}

} // namespace te::kernels

#endif // TE_KERNELS_SRC_QUANTIZE_CUH
