//===- formats_check.cu - te_kernels/formats.h vs the CUDA intrinsics -----===//
//
// Converts every fp32 bit pattern (2^32 values) with te::formats and with
// CUDA's conversion intrinsics on the GPU and counts the differences:
//   E4M3, E5M2  vs __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...)
//   E2M1        vs __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest)
//   E8M0 (up)   vs __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundPosInf)
// and every FP8 code's decoded value against the intrinsic decode. Prints
// the first mismatches; exit status 0 when all agree.
//
//===----------------------------------------------------------------------===//

#include "te_kernels/formats.h"

#include <cuda_fp4.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdio>

namespace {

constexpr int kFormats = 4;
const char *kNames[kFormats] = {"e4m3", "e5m2", "e2m1", "e8m0"};
constexpr int kKeep = 4;

struct Mismatches {
  unsigned long long count[kFormats];
  unsigned int first[kFormats][kKeep];
  unsigned char ours[kFormats][kKeep];
  unsigned char theirs[kFormats][kKeep];
};

__device__ void record(Mismatches *m, int f, unsigned int bits,
                       unsigned char ours, unsigned char theirs) {
  unsigned long long slot = atomicAdd(&m->count[f], 1ull);
  if (slot < kKeep) {
    m->first[f][slot] = bits;
    m->ours[f][slot] = ours;
    m->theirs[f][slot] = theirs;
  }
}

__global__ void compareAll(Mismatches *m) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i =
           blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
       i < (1ull << 32); i += stride) {
    unsigned int bits = (unsigned int)i;
    float x = __uint_as_float(bits);
    unsigned char a, b;
    a = te::formats::floatToE4M3(x);
    b = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    if (a != b)
      record(m, 0, bits, a, b);
    a = te::formats::floatToE5M2(x);
    b = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
    if (a != b)
      record(m, 1, bits, a, b);
    a = te::formats::floatToE2M1(x);
    b = __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest) & 0xF;
    if (a != b)
      record(m, 2, bits, a, b);
    a = te::formats::floatToE8M0RoundUp(x);
    b = __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundPosInf);
    if (a != b)
      record(m, 3, bits, a, b);
  }
}

__global__ void compareDecode(unsigned int *bad) {
  int c = threadIdx.x;
  __nv_fp8_e4m3 e4;
  e4.__x = (unsigned char)c;
  __nv_fp8_e5m2 e5;
  e5.__x = (unsigned char)c;
  float o4 = te::formats::e4m3ToFloat(c), t4 = float(e4);
  float o5 = te::formats::e5m2ToFloat(c), t5 = float(e5);
  bool same4 = (isnan(o4) && isnan(t4)) || o4 == t4;
  bool same5 = (isnan(o5) && isnan(t5)) || o5 == t5;
  if (!same4 || !same5)
    atomicAdd(bad, 1u);
}

/// CUDA's results on a few probes, printed for the record.
__global__ void probes(unsigned char *out, const float *in, int n) {
  int i = threadIdx.x;
  if (i < n) {
    out[4 * i + 0] = __nv_cvt_float_to_fp8(in[i], __NV_SATFINITE, __NV_E4M3);
    out[4 * i + 1] = __nv_cvt_float_to_fp8(in[i], __NV_SATFINITE, __NV_E5M2);
    out[4 * i + 2] =
        __nv_cvt_float_to_fp4(in[i], __NV_E2M1, cudaRoundNearest) & 0xF;
    out[4 * i + 3] =
        __nv_cvt_float_to_e8m0(in[i], __NV_SATFINITE, cudaRoundPosInf);
  }
}

void printProbes() {
  const float in[] = {-1.0f,
                      -0.0f,
                      0.0f,
                      te::formats::bitsToFloat(0x00400000),
                      te::formats::bitsToFloat(0x00400001),
                      te::formats::bitsToFloat(0x00000001),
                      -INFINITY,
                      INFINITY,
                      NAN,
                      -NAN,
                      1.5f,
                      3e38f};
  const int n = sizeof(in) / sizeof(in[0]);
  float *din = nullptr;
  unsigned char *dout = nullptr, out[4 * n];
  if (cudaMalloc(&din, sizeof(in)) != cudaSuccess ||
      cudaMalloc(&dout, sizeof(out)) != cudaSuccess)
    return;
  cudaMemcpy(din, in, sizeof(in), cudaMemcpyHostToDevice);
  probes<<<1, 32>>>(dout, din, n);
  cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i)
    std::printf("formats-check: probe x=0x%08x (%g): e4m3 0x%02x e5m2 0x%02x "
                "e2m1 0x%x e8m0 0x%02x\n",
                te::formats::floatBits(in[i]), in[i], out[4 * i],
                out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]);
  cudaFree(din);
  cudaFree(dout);
}

} // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("formats-check: SKIPPED (no CUDA device)\n");
    return 77;
  }
  Mismatches host{}, *m = nullptr;
  unsigned int badHost = 0, *bad = nullptr;
  cudaError_t err = cudaMalloc(&m, sizeof(Mismatches));
  if (err == cudaSuccess)
    err = cudaMalloc(&bad, sizeof(unsigned int));
  if (err == cudaSuccess)
    err = cudaMemcpy(m, &host, sizeof(host), cudaMemcpyHostToDevice);
  if (err == cudaSuccess)
    err = cudaMemcpy(bad, &badHost, sizeof(badHost), cudaMemcpyHostToDevice);
  if (err == cudaSuccess) {
    compareAll<<<4096, 256>>>(m);
    compareDecode<<<1, 256>>>(bad);
    err = cudaDeviceSynchronize();
  }
  if (err == cudaSuccess)
    err = cudaMemcpy(&host, m, sizeof(host), cudaMemcpyDeviceToHost);
  if (err == cudaSuccess)
    err = cudaMemcpy(&badHost, bad, sizeof(badHost), cudaMemcpyDeviceToHost);
  if (err != cudaSuccess) {
    std::printf("formats-check: FAILED: %s\n", cudaGetErrorString(err));
    return 1;
  }
  printProbes();
  int status = 0;
  for (int f = 0; f < kFormats; ++f) {
    std::printf("formats-check: %s: %llu of 4294967296 fp32 patterns differ\n",
                kNames[f], host.count[f]);
    for (int k = 0; k < kKeep && k < (int)host.count[f]; ++k)
      std::printf("  x=0x%08x (%g): ours 0x%02x, CUDA 0x%02x\n",
                  host.first[f][k], te::formats::bitsToFloat(host.first[f][k]),
                  host.ours[f][k], host.theirs[f][k]);
    if (host.count[f])
      status = 1;
  }
  std::printf("formats-check: fp8 decode: %u of 256 codes differ\n", badHost);
  if (badHost)
    status = 1;
  std::printf("formats-check: %s\n", status ? "FAILED" : "PASSED");
  cudaFree(m);
  cudaFree(bad);
  return status;
}
