//===- internal.cuh - Shared internals of the compute kernels ---*- CUDA
//-*-===//
//
// What the .cu files of the kernel library share: the per-context state
// behind te_kernels_state; the element types (loads/stores with one
// round-to-nearest-even, 16-byte vector unpacking) and the dtype dispatch;
// the FP8 conversion and scale rule of the CPU backend; the cuBLASLt
// plumbing (status names, handle/workspace, descriptors); and the helpers
// the FP8 GEMMs have in common (f32 bias, k = 0, the dequantized fallback).
//
//===----------------------------------------------------------------------===//

#ifndef TE_KERNELS_SRC_INTERNAL_CUH
#define TE_KERNELS_SRC_INTERNAL_CUH

#include "te_kernels/formats.h"
#include "te_kernels/ops.h"
#include "tile.cuh"

#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

/// The cuBLASLt algorithm chosen for one problem (gemm.cu's algorithm
/// cache), or the fact that cuBLASLt has none.
struct te_kernels_gemm_choice {
  cublasLtMatmulAlgo_t algo;
  bool unsupported = false;
  bool tuned = false; // timed against the heuristic's other candidates
};

/// cuBLASLt's workspace (te_rt_gemm_workspace_bytes says the same).
constexpr size_t kGemmWorkspaceBytes = size_t(32) << 20;

struct te_kernels_state {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr; // created by the first GEMM
  /// The GEMM workspace in use: the state's own (ownWorkspace, allocated
  /// by the first GEMM) or the caller's (te_kernels_state_bind).
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  void *ownWorkspace = nullptr;
  float *scratch = nullptr; // grow-only, stream-ordered
  int64_t scratchElems = 0;
  /// The caller's scratch (the rest of its workspace), used instead of
  /// `scratch` while bound; a request larger than it fails and leaves the
  /// workspace bytes that would have sufficed in `scratchNeeded`.
  bool callerWorkspace = false;
  float *callerScratch = nullptr;
  int64_t callerScratchElems = 0;
  int64_t scratchNeeded = 0;
  /// Scratch buffers replaced by a larger one. A CUDA graph captured before
  /// the growth still reads the old buffer on every replay, so a retired
  /// buffer is freed only with the state (after te_kernels_state_destroy
  /// has waited for the stream, which still exists then).
  std::vector<float *> retiredScratch;
  /// gemm.cu's algorithm cache: problem key -> choice, and its counters
  /// (te_kernels_gemm_cache_stats). tuneGemms: time the heuristic's
  /// candidates on a problem's first call (TE_RT_GEMM_TUNING=1 turns it
  /// on; read when the cuBLASLt handle is created).
  std::map<std::string, te_kernels_gemm_choice> gemmChoices;
  int64_t gemmHeuristicQueries = 0, gemmTunedProblems = 0;
  /// GELU-epilogue GEMMs that ran as the plain GEMM + activation kernel
  /// (te_kernels_gemm_act_fallbacks).
  int64_t gemmActFallbacks = 0;
  bool tuneGemms = true;
  /// The amax reductions' two counters (te::kernels::AmaxOut): the running
  /// max of the float bits and the blocks done; zero between kernels (the
  /// last block of each reduction resets them). Allocated and zeroed with
  /// the state.
  unsigned *amaxTicket = nullptr;
  /// Kernels queued as programmatic dependent launches (launchKernel):
  /// compute capability 9.0 or newer, unless TE_RT_PDL=0. Set with the
  /// state.
  bool pdl = false;
  /// te_kernels_amax_update_fork's branch: a side stream and the events
  /// that fork it from, and join it back to, the stream being captured
  /// (created by the first fork). `forkedFrom`: the stream a fork that is
  /// not joined yet left (null: none).
  cudaStream_t sideStream = nullptr;
  cudaEvent_t forkEvent = nullptr, joinEvent = nullptr;
  cudaStream_t forkedFrom = nullptr;
  /// te_kernels_branch_begin's branch: a state of its own (its stream,
  /// GEMM workspace, scratch and amax ticket, so that nothing queued on the
  /// branch shares a buffer with what this state queues meanwhile), created
  /// by the first branch begun while capturing, with the events that fork
  /// it from, and join it back to, this state's stream. `branchFrom`: the
  /// stream a branch that is not joined yet left (null: none).
  te_kernels_state *branch = nullptr;
  cudaEvent_t branchForkEvent = nullptr, branchJoinEvent = nullptr;
  cudaStream_t branchFrom = nullptr;
  /// The runs of the pending branch (te_kernels_branch_end): the event
  /// each recorded on the branch's stream at its end (created as needed,
  /// reused by later branches), and how many ended since the branch was
  /// forked; runs before branchJoined are joined already.
  std::vector<cudaEvent_t> branchRunEvents;
  int64_t branchRuns = 0, branchJoined = 0;
  /// In a branch's state: the state that began it. Its GEMMs take the
  /// parent's algorithm cache (the same algorithm for the same problem,
  /// hence the same bits as in order), and its buffers are allocated in
  /// relaxed capture mode (it grows inside the capture that began it).
  te_kernels_state *parent = nullptr;

  ~te_kernels_state() {
    for (float *p : retiredScratch)
      cudaFreeAsync(p, stream);
    if (!retiredScratch.empty())
      cudaStreamSynchronize(stream);
    if (amaxTicket)
      cudaFree(amaxTicket);
  }
};

namespace te::kernels {

//===----------------------------------------------------------------------===//
// Errors, launches, scratch
//===----------------------------------------------------------------------===//

/// Null on success, else CUDA's (static) message.
inline const char *status(cudaError_t err) {
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

/// The launch error of the kernel just queued, if any.
inline const char *launched() { return status(cudaGetLastError()); }

/// The first statement of every kernel of this library: waits until the
/// kernels before it on the stream have finished and their writes are
/// visible (griddepcontrol.wait), then lets the next kernel launch
/// (griddepcontrol.launch_dependents), which waits here in turn. Without a
/// programmatic dependency (a plain launch, a device before Hopper) both
/// are no-ops. Nothing may touch global memory before it:
/// utils/check_kernel_sources.py (lit test/Sources/kernels-wait-first.test)
/// checks that every __global__ function of runtime-kernels/src begins
/// with it.
__device__ __forceinline__ void gridWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Queues kernel<<<grid, block, smem, s->stream>>>(args...); its error, if
/// any, is launched()'s. With s->pdl as a programmatic dependent launch
/// (Hopper): the kernel's blocks may start while the kernel before it on
/// the stream is finishing, and wait in gridWait(), which hides most of a
/// launch's latency between small kernels (~0.3 us per kernel in a CUDA
/// graph on an H100, bench/probe_pdl.cu). A CUDA graph captured from the
/// stream keeps the edge programmatic.
template <typename... P, typename... A>
void launchKernel(te_kernels_state *s, void (*kernel)(P...), dim3 grid,
                  dim3 block, size_t smem, A &&...args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = s->stream;
  cudaLaunchAttribute attr[1] = {};
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attr;
  config.numAttrs = s->pdl ? 1 : 0;
  // (an error is also the thread's last error: launched() returns it)
  (void)cudaLaunchKernelEx(&config, kernel, std::forward<A>(args)...);
}

/// What fitKernel found for a kernel on the current device.
struct KernelFit {
  const char *err = nullptr; // a CUDA error of the attribute calls
  int perSm = 0;             // blocks of `threads` resident a multiprocessor
};

/// Once per device, kernel and dynamic shared-memory size: the kernel's
/// opt-in to `smem` bytes of dynamic shared memory, with `carveoutMax`
/// the whole shared memory for its carveout, and how many blocks of
/// `threads` are resident per multiprocessor then (4 when the occupancy
/// query fails). Later calls read the answer from a cache (a mutex and a
/// map lookup, no driver call): cudaFuncSetAttribute on every launch
/// cost host time in eager steps.
KernelFit fitKernel(const void *kernel, size_t smem, int threads,
                    bool carveoutMax);

/// A device fp32 buffer of at least `elems` elements, valid on s->stream
/// until the next call. Growing it while s->stream is capturing a CUDA
/// graph fails (run the captured work once before capturing).
const char *scratch(te_kernels_state *s, int64_t elems, float **out);

/// A stream for a branch of a capture in progress, with the events that
/// fork it from, and join it back to, the captured stream: created outside
/// the capture's rules (relaxed mode: creating a stream or an event records
/// nothing). On failure nothing is left created and all three are null.
const char *createSideStream(cudaStream_t *stream, cudaEvent_t *fork,
                             cudaEvent_t *join);

/// While s->stream is capturing a CUDA graph: queues fn(s, arg) on the
/// state's side stream, forked from s->stream after the work queued there
/// so far (in the graph, a branch beside what s->stream queues after it,
/// until te_kernels_join); a fork still pending from another stream joins
/// that stream first (the side stream serves one stream at a time).
/// Otherwise (no capture) fn(s, arg) on s->stream, in order. fn's first
/// launch is a plain one (its predecessor is the fork, not a kernel).
const char *onSideStream(te_kernels_state *s,
                         const char *(*fn)(te_kernels_state *, void *),
                         void *arg);

/// Ampere-style asynchronous 16-byte global -> shared copies (cp.async.cg:
/// cached in L2 only), their commit groups, and the wait until at most N
/// of this thread's groups are still in flight. Both addresses 16-byte
/// aligned.
__device__ inline void cpAsync16(void *smem, const void *gmem) {
  unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst),
               "l"(gmem)
               : "memory");
}
__device__ inline void cpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ inline void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

inline bool aligned(const void *p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

/// Multiprocessors of the current device (for grid-stride grids).
inline int smCount() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) !=
          cudaSuccess ||
      sms <= 0)
    return 132;
  return sms;
}

/// Blocks for a grid-stride loop over `work` items: at most 16 per
/// multiprocessor (the loop takes the rest), at least one.
inline unsigned blocksFor(int64_t work, int sms) {
  int64_t b = std::min<int64_t>(work, int64_t(16) * sms);
  return static_cast<unsigned>(std::max<int64_t>(b, 1));
}

__device__ inline int64_t globalId() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t globalStride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

//===----------------------------------------------------------------------===//
// Per-tensor amax (current scaling: quantize.cu; activation.cu, norm_fwd.cu)
//===----------------------------------------------------------------------===//

/// A kernel's amax output: the cell `out` that receives max |x| over the
/// whole grid (null: no amax), and the state's ticket (te_kernels_state::
/// amaxTicket) its blocks reduce through. Build it on the host with
/// amaxOut(s, cell).
struct AmaxOut {
  float *out = nullptr;
  unsigned *ticket = nullptr;
  __host__ __device__ explicit operator bool() const { return out; }
};

inline AmaxOut amaxOut(te_kernels_state *s, float *cell) {
  return AmaxOut{cell, cell ? s->amaxTicket : nullptr};
}

/// The max of m over the warp's 32 lanes, in every lane.
__device__ inline float warpMax(float m) {
  for (int o = 16; o > 0; o >>= 1)
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  return m;
}

/// The max of m over the block's threads, in thread 0 (warp 0's other
/// lanes have it too; the other warps, their warp's): every thread calls it
/// (blockDim.x a multiple of 32, at most 1024), with `part` 32 floats of
/// shared memory. Its one barrier also orders what the block did before
/// it; `part` may be reused after a later barrier.
__device__ inline float blockMax(float m, float *part) {
  m = warpMax(m);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    part[warp] = m;
  __syncthreads();
  if (warp == 0)
    m = warpMax(lane < static_cast<int>(blockDim.x >> 5) ? part[lane] : 0.0f);
  return m;
}

/// Folds the thread's max |x| into the grid's amax, which the last block
/// to finish writes to amax.out: warp shuffles, the warps' maxima through
/// shared memory, then per block one atomicMax of the float bits into
/// ticket[0] (non-negative floats, never NaN, order like unsigned
/// integers) and one acquire-release add of ticket[1]; the block
/// that counts last takes ticket[0] (resetting both to 0 for the next
/// kernel) and stores it. So the cell needs no memset before the kernel
/// (one graph node less per amax), and kernels of one state, which run in
/// stream order, share the ticket. A grid of one block stores its max
/// itself (the same bits: the ticket's atomicMax skips m = 0). Every thread of
/// every block calls it, once per kernel (blockDim.x a multiple of 32, at most
/// 1024).
__device__ inline void blockAmax(float m, AmaxOut amax) {
  __shared__ float part[32];
  m = blockMax(m, part);
  if (threadIdx.x == 0) {
    const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
    if (blocks == 1) { // the block's max is the grid's: no ticket
      *amax.out = m > 0.0f ? m : 0.0f;
      return;
    }
    if (m > 0.0f)
      atomicMax(amax.ticket, __float_as_uint(m));
    // The count as a release (the max above is ordered before it, with no
    // fence of its own: one round trip to L2 less per block) and an
    // acquire (the last block sees every block's max).
    unsigned done;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;"
                 : "=r"(done)
                 : "l"(amax.ticket + 1)
                 : "memory");
    if (done == blocks - 1) {
      const unsigned bits = atomicExch(amax.ticket, 0u);
      atomicExch(amax.ticket + 1, 0u);
      *amax.out = __uint_as_float(bits);
    }
  }
}

/// Zeroes an amax cell on `stream` (an async memset: capturable in CUDA
/// graphs): for outputs no reduction kernel writes (empty inputs) and for
/// cells reduced by other means.
inline const char *zeroAmax(cudaStream_t stream, float *amax) {
  return status(cudaMemsetAsync(amax, 0, sizeof(float), stream));
}

//===----------------------------------------------------------------------===//
// Element types (the bit conversions of the CPU backend)
//===----------------------------------------------------------------------===//

struct F32 {
  using T = float;
  static __device__ float load(float v) { return v; }
  static __device__ float store(float v) { return v; }
};

struct BF16 {
  using T = uint16_t;
  static __device__ float load(uint16_t h) {
    return __uint_as_float(static_cast<uint32_t>(h) << 16);
  }
  /// As te::cpu::floatToBF16: quiet NaN with its payload's top, else RNE.
  static __device__ uint16_t store(float x) {
    uint32_t u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u)
      return static_cast<uint16_t>((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
};

struct F16 {
  using T = uint16_t;
  static __device__ float load(uint16_t h) {
    return __half2float(__ushort_as_half(h));
  }
  /// As te::cpu::floatToF16: quiet NaN with its payload's top, else RNE.
  static __device__ uint16_t store(float x) {
    uint32_t u = __float_as_uint(x);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
      return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7e00u |
                                   ((a >> 13) & 0x3ffu));
    return __half_as_ushort(__float2half_rn(x));
  }
};

/// Calls fn(E{}) for the element type of dtype (0 f32, 1 bf16, 2 f16).
template <typename Fn> const char *byDtype(int dtype, Fn fn) {
  switch (dtype) {
  case 0:
    return fn(F32{});
  case 1:
    return fn(BF16{});
  case 2:
    return fn(F16{});
  }
  return "unknown dtype";
}

/// Elements of E per 16-byte vector.
template <typename E> constexpr int perVec() {
  return 16 / static_cast<int>(sizeof(typename E::T));
}

/// The values of a 16-byte vector of E, in memory order (for 16-bit types
/// element 2i is the low half of word i).
template <typename E>
__device__ inline void unpack(const uint4 &r, float (&f)[perVec<E>()]) {
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
  if constexpr (perVec<E>() == 4) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      f[i] = __uint_as_float(w[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      f[2 * i] = E::load(static_cast<uint16_t>(w[i] & 0xffffu));
      f[2 * i + 1] = E::load(static_cast<uint16_t>(w[i] >> 16));
    }
  }
}

/// lo and hi rounded to E by one hardware conversion of the pair
/// (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32), lo in the low half: E::store's
/// bits for every number (round to nearest even, subnormals kept, overflow
/// to inf); a NaN becomes the canonical one, where E::store keeps its sign
/// and payload's top.
__device__ inline uint32_t cvtPair(BF16, float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ inline uint32_t cvtPair(F16, float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/// a and b rounded to E and widened back: E::load(E::store(x)) for every
/// number, a NaN for a NaN (cvtPair). For values that only go on to an FP8
/// cast (every NaN casts to 0x7F) and an fmaxf amax (which skips NaN); the
/// manual rounding of E::store took ~8 integer instructions per element,
/// a fifth or so of what a fused activation-cast issued per element.
template <typename E> __device__ inline void roundPair(float &a, float &b) {
  if constexpr (!std::is_same_v<E, F32>) {
    const uint32_t d = cvtPair(E{}, a, b);
    a = E::load(static_cast<uint16_t>(d & 0xffffu));
    b = E::load(static_cast<uint16_t>(d >> 16));
  }
}

/// roundPair over n (even) values.
template <typename E, int n> __device__ inline void roundAll(float (&f)[n]) {
  static_assert(n % 2 == 0, "pairs");
#pragma unroll
  for (int i = 0; i < n; i += 2)
    roundPair<E>(f[i], f[i + 1]);
}

//===----------------------------------------------------------------------===//
// FP8 conversion and the scale
//===----------------------------------------------------------------------===//

constexpr int kE4M3 = 0, kE5M2 = 1;

/// fp8(lo) | fp8(hi) << 8, each rounded to nearest even and saturated (every
/// NaN -> 0x7F). sm_89+ uses `cvt.rn.satfinite`, which te-formats-check
/// proves bit-identical to te_kernels/formats.h (the CPU backend's
/// conversion) over every fp32 input; formats.h itself runs below sm_89.
template <int Fmt> __device__ inline uint32_t toFP8x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  return __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE,
                                  Fmt == kE4M3 ? __NV_E4M3 : __NV_E5M2);
#else
  using namespace te::formats;
  uint32_t a = Fmt == kE4M3 ? floatToE4M3(lo) : floatToE5M2(lo);
  uint32_t b = Fmt == kE4M3 ? floatToE4M3(hi) : floatToE5M2(hi);
  return a | (b << 8);
#endif
}

template <int Fmt> __device__ inline uint8_t toFP8(float x) {
  return static_cast<uint8_t>(toFP8x2<Fmt>(x, 0.0f) & 0xffu);
}

/// te::cpu::scaleFromAmax with eps 0 (TE's compute_scale_from_amax): 1 for
/// a zero or non-finite amax, FLT_MAX when fp8_max / amax overflows, the
/// mantissa cleared (rounded down to a power of two) with pow2.
__device__ inline float scaleFromAmax(float amax, float fp8Max, bool pow2) {
  if (amax == 0.0f || !isfinite(amax))
    return 1.0f;
  float scale = fp8Max / amax;
  if (isinf(scale))
    scale = FLT_MAX;
  if (pow2)
    scale = __uint_as_float(__float_as_uint(scale) & 0xFF800000u);
  return scale;
}

/// dst [cols, rows] = src [rows, cols]^T over bytes (FP8 data's columnwise
/// copy; elementwise.cu): 128x64 (64x64 under 128 rows) swizzled tiles,
/// vector loads and stores where a tile is whole and aligned; with
/// `carryTo`, *carryFrom copied there by the same launch.
const char *transposeBytes(te_kernels_state *s, const uint8_t *src,
                           uint8_t *dst, int64_t rows, int64_t cols,
                           const float *carryFrom = nullptr,
                           float *carryTo = nullptr);

/// out[j] = sum over chunks of partial[chunk * cols + j], in chunk order,
/// rounded to E once: the second stage of the column sums (bias gradients).
template <typename E>
__global__ void colFinish(const float *partial, int64_t chunks, int64_t cols,
                          typename E::T *out) {
  gridWait();
  for (int64_t j = globalId(); j < cols; j += globalStride()) {
    float s = 0.0f;
    for (int64_t c = 0; c < chunks; ++c)
      s += partial[c * cols + j];
    out[j] = E::store(s);
  }
}

//===----------------------------------------------------------------------===//
// cuBLASLt (gemm.cu)
//===----------------------------------------------------------------------===//

/// Null on success, else the status's name (cublasGetStatusString is in
/// libcublas, which is not linked).
const char *ltError(cublasStatus_t st);

/// The state's cuBLASLt handle and workspace, created by the first GEMM of
/// any kind.
const char *ltReady(te_kernels_state *s);

/// The largest power of two (<= 256) that divides the address.
uint32_t alignmentOf(const void *p);

inline cudaDataType_t cudaTypeOf(int dtype) {
  return dtype == 0 ? CUDA_R_32F : dtype == 1 ? CUDA_R_16BF : CUDA_R_16F;
}

/// Destroys the cuBLASLt descriptors of one matmul.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  Descriptors() = default;
  Descriptors(const Descriptors &) = delete;
  Descriptors &operator=(const Descriptors &) = delete;
  ~Descriptors() {
    if (pref)
      cublasLtMatmulPreferenceDestroy(pref);
    if (d)
      cublasLtMatrixLayoutDestroy(d);
    if (c)
      cublasLtMatrixLayoutDestroy(c);
    if (b)
      cublasLtMatrixLayoutDestroy(b);
    if (a)
      cublasLtMatrixLayoutDestroy(a);
    if (op)
      cublasLtMatmulDescDestroy(op);
  }
};

/// Sets the workspace limit and the operands' alignments (A, B, C/D) on a
/// fresh preference; the heuristic then only offers algorithms that fit.
void setPreferences(te_kernels_state *s, cublasLtMatmulPreference_t pref,
                    const void *A, const void *B, const void *D);

/// The algorithm cache's key of one problem: the values that decide which
/// algorithms apply and how fast they are (types, transposes, sizes,
/// leading dims, epilogue, scale modes, accumulation, operand alignments,
/// beta != 0), in the order the caller adds them.
struct GemmKey {
  std::string bytes;
  GemmKey &add(int64_t v) {
    bytes.append(reinterpret_cast<const char *>(&v), sizeof(v));
    return *this;
  }
};

/// Runs the matmul `g` describes (g.c may be null: C is D) with alpha = 1
/// and `beta`, on the algorithm cached for `key`. A problem's first call
/// asks the heuristic (its first choice is kept); when tuning is on
/// (TE_RT_GEMM_TUNING=1), beta is 0 and the stream is not
/// capturing a graph, it times up to eight of the heuristic's candidates on
/// the stream and keeps the fastest, whose run is the last one, so the
/// first call's outputs are what every later call writes. While capturing,
/// the heuristic's first choice is cached untimed. *unsupported is set,
/// with nothing queued and no error, when cuBLASLt has no algorithm.
const char *runMatmul(te_kernels_state *s, const GemmKey &key, Descriptors &g,
                      const void *A, const void *B, void *D, float beta,
                      bool *unsupported);

//===----------------------------------------------------------------------===//
// Shared by the GEMMs (elementwise.cu, gemm_fp8.cu)
//===----------------------------------------------------------------------===//

/// dbias[cols] = column sums of dy (the bias-gradient kernel), for the
/// wgrad GEMM when cuBLASLt has no BGRADB epilogue for the case.
const char *biasGrad(te_kernels_state *s, int dtype, const void *dy,
                     void *dbias, int64_t rows, int64_t cols);

/// y[rows, cols] = bias broadcast over rows (or zero when bias is null):
/// fprop with k = 0.
const char *broadcastRows(te_kernels_state *s, int dtype, const void *bias,
                          void *y, int64_t rows, int64_t cols);

/// d[i, j] = d[i, j] + bias[j] over [rows, cols] in `dtype`, rounded once:
/// the FP8 GEMMs' bias for f32 output (cuBLASLt's FP8 kernels take a
/// 16-bit bias only).
const char *addBias(te_kernels_state *s, int dtype, const void *bias, void *d,
                    int64_t rows, int64_t cols);

/// An FP8 GEMM with k = 0: d = bias (+ d when accumulate), zero without a
/// bias.
const char *gemmWithoutK(te_kernels_state *s, int out_dtype, const void *bias,
                         void *d, int64_t m, int64_t n, int accumulate);

/// cuBLASLt's default scale mode: one fp32 scale for the whole operand.
constexpr int kPerTensorScale = -1;

/// One FP8 operand of a TN GEMM: row-major [rows, k] bytes of `type`, the
/// device pointer to its scale_inv (the factor cuBLASLt multiplies by) and
/// how the scales apply: kPerTensorScale or a cublasLtMatmulMatrixScale_t.
struct Fp8Operand {
  const void *data;
  cudaDataType_t type;
  const float *scaleInv;
  int scaleMode;
};

/// d[m, n] = deq(a)[m, k] . deq(b)[n, k]^T (+ bias[n]) (+ d when
/// accumulate) through cuBLASLt's FP8 TN matmul: fp32 compute, split
/// accumulation unless fastAccumulate (per-tensor scales only), bias by the BIAS epilogue for bf16/f16 output and by
/// addBias for f32. *unsupported is set, with nothing queued and no error,
/// when cuBLASLt has no algorithm for the case (or no such scale mode).
const char *fp8Matmul(te_kernels_state *s, int out_dtype, const Fp8Operand &a,
                      const Fp8Operand &b, const void *bias, void *d, int64_t m,
                      int64_t n, int64_t k, int accumulate, bool *unsupported,
                      bool fastAccumulate = false);

/// Queues the dequantization of the GEMM's operands into fp32 a [m, k] and
/// b [n, k] (buffers inside the scratch).
using DequantizeOperands = std::function<const char *(float *a, float *b)>;

/// The FP8 GEMMs' fallback for shapes cuBLASLt's FP8 kernels do not take:
/// d = A . B^T (+ bias) (+ d when accumulate) as the fp32 GEMM (no TF32) of
/// the operands `dequantizeOperands` writes, rounded once to out_dtype:
/// the value the CPU backend computes, up to the summation order.
const char *dequantizedGemm(te_kernels_state *s, int out_dtype,
                            const DequantizeOperands &dequantizeOperands,
                            const void *bias, void *d, int64_t m, int64_t n,
                            int64_t k, int accumulate);

} // namespace te::kernels

#endif // TE_KERNELS_SRC_INTERNAL_CUH
