//===- amax.cu - Delayed scaling's amax update ----------------------------===//
//
// The CUDA side of te_rt_amax_update (DelayedScaling): per quantizer slot,
// the amax history rolled up by one with the step's amax, and the next
// scale from the history's max. Each slot reads its column of the history
// before writing it, so the outputs may alias the inputs. A slot the
// `unused` mask marks (te_rt_amax_update_unused) takes 0 as its step amax
// without reading amax[s]: the same results as an amax zeroed beforehand,
// without that memset's kernel node in an entry's graph.
//
//===----------------------------------------------------------------------===//

#include "launch.cuh"

#include <cfloat>

using namespace te::kernels;

namespace {

/// The step amax of slot s: amax[s], or 0 when bit s of `unused` marks the
/// slot as recording nothing (bits exist for s < 64 only; a nonzero mask
/// comes with n <= 64).
__device__ float stepAmax(const float *amax, uint64_t unused, int64_t s) {
  return s < 64 && ((unused >> s) & 1) ? 0.0f : amax[s];
}

/// One thread per slot s: a = max over the column (row 0 := the step amax;
/// the comparison order and NaN handling of std::max on the CPU), the column
/// rolled up by one with the new amax last and row 0 zeroed, the scale
/// (fp8_max / a) / 2^margin. Each element is read before it is written, so
/// the outputs may alias the inputs.
__global__ void amaxUpdateKernel(const float *history, const float *scale,
                                 const float *amax, int64_t len, int64_t n,
                                 float fp8Max, int margin, bool mostRecent,
                                 uint64_t unused, float *newHistory,
                                 float *newScale) {
  gridWait();
  int64_t s = globalId();
  if (s >= n)
    return;
  const float first = stepAmax(amax, unused, s);
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
                          uint64_t unused, float *newHistory, float *newScale) {
  gridWait();
  extern __shared__ float column[];
  __shared__ float part[kThreads / 32];
  const int64_t s = blockIdx.x;
  // Thread 0's step amax and old scale, loaded with the column rather than
  // after the block's reduction (one memory latency less per update).
  float first = 0.0f, old = 0.0f;
  if (threadIdx.x == 0) {
    first = stepAmax(amax, unused, s);
    old = scale[s];
  }
  float m = -FLT_MAX;
  for (int64_t r = 1 + threadIdx.x; r < len; r += blockDim.x) {
    float h = history[r * n + s];
    column[r] = h;
    m = fmaxf(m, h);
  }
  m = warpMax(m);
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
    float a = first;
    if (!mostRecent && !isnan(first))
      a = fmaxf(first, rows);
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
}

} // namespace

extern "C" {

const char *te_kernels_amax_update(te_kernels_state *s, const float *history,
                                   const float *scale, const float *amax,
                                   int64_t len, int64_t n, float fp8_max,
                                   int margin, int most_recent, int64_t unused,
                                   float *new_history, float *new_scale) {
  if (n == 0 || len == 0)
    return nullptr;
  // A block per slot with its history column in shared memory (TE's
  // default history of 1024 rows is 4 KiB); a thread per slot for
  // histories too long for that.
  const size_t columnBytes = static_cast<size_t>(len) * sizeof(float);
  if (columnBytes <= 32 * 1024 && n <= 65535) {
    launchKernel(s, amaxUpdateBlockKernel, static_cast<unsigned>(n), kThreads,
                 columnBytes, history, scale, amax, len, n, fp8_max, margin,
                 most_recent != 0, static_cast<uint64_t>(unused), new_history,
                 new_scale);
    return launched();
  }
  unsigned blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  launchKernel(s, amaxUpdateKernel, blocks, kThreads, 0, history, scale, amax,
               len, n, fp8_max, margin, most_recent != 0,
               static_cast<uint64_t>(unused), new_history, new_scale);
  return launched();
}

const char *te_kernels_amax_update_fork(te_kernels_state *s,
                                        const float *history,
                                        const float *scale, const float *amax,
                                        int64_t len, int64_t n, float fp8_max,
                                        int margin, int most_recent,
                                        int64_t unused, float *new_history,
                                        float *new_scale) {
  if (n == 0 || len == 0)
    return nullptr;
  struct Args {
    const float *history, *scale, *amax;
    int64_t len, n;
    float fp8Max;
    int margin, mostRecent;
    int64_t unused;
    float *newHistory, *newScale;
  } args{
      history, scale,       amax,   len,         n,         fp8_max,
      margin,  most_recent, unused, new_history, new_scale,
  };
  return onSideStream(
      s,
      [](te_kernels_state *st, void *p) {
        const Args &a = *static_cast<const Args *>(p);
        return te_kernels_amax_update(st, a.history, a.scale, a.amax, a.len,
                                      a.n, a.fp8Max, a.margin, a.mostRecent,
                                      a.unused, a.newHistory, a.newScale);
      },
      &args);
}

const char *te_kernels_join(te_kernels_state *s) {
  if (!s)
    return nullptr;
  const char *branchErr = te_kernels_branch_join(s, -1);
  if (!s->forkedFrom)
    return branchErr;
  cudaStream_t to = s->forkedFrom;
  s->forkedFrom = nullptr;
  if (const char *err = status(cudaEventRecord(s->joinEvent, s->sideStream)))
    return err;
  return status(cudaStreamWaitEvent(to, s->joinEvent, 0));
}

} // extern "C"
