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

} // namespace te::kernels

#endif // TE_KERNELS_SRC_QUANTIZE_CUH
