//===- gemm.cu - The linear layer's GEMMs through cuBLASLt ----------------===//
//
// fprop (TN), dgrad (NN) and wgrad (NT) of row-major operands as
// column-major cuBLASLt matmuls: fp32 compute and scale (no TF32), f32/bf16/
// f16 buffers, the bias epilogue for fprop, BGRADB for wgrad's dbias (the
// bias-gradient kernel when cuBLASLt has no algorithm with it), beta = 1 for
// wgrad's accumulate; the wgrad of at most 64 tokens (bf16/f16) in a
// kernel of its own (below; TE_RT_GEMM_SKINNY=0 hands it back to cuBLASLt).
// GELU epilogues for te_rt_gemm_fprop_act / _dgrad_dact. Zero-sized
// problems never reach cuBLASLt. Also the
// cuBLASLt plumbing internal.cuh declares for every GEMM of the library
// (status names, the handle and workspace, the heuristic's preferences) and
// the algorithm cache every GEMM runs through (runMatmul): one heuristic
// query per problem; with TE_RT_GEMM_TUNING=1 its candidates are timed once
// and the fastest kept (measured on the H200: at most 0.7% on a whole
// training step, so the heuristic's first choice is the default).
//
//===----------------------------------------------------------------------===//

#include "internal.cuh"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdlib>
#include <type_traits>

using namespace te::kernels;

namespace te::kernels {

namespace {
constexpr size_t kWorkspaceBytes = kGemmWorkspaceBytes;
/// Candidates timed on a problem's first call, and timed runs of each
/// (after one untimed run).
constexpr int kTuneCandidates = 8;
constexpr int kTuneRuns = 2;
} // namespace

const char *ltError(cublasStatus_t st) {
  switch (st) {
  case CUBLAS_STATUS_SUCCESS:
    return nullptr;
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "cuBLASLt: CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "cuBLASLt: CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "cuBLASLt: CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "cuBLASLt: CUBLAS_STATUS_ARCH_MISMATCH (the GPU lacks a feature "
           "the GEMM needs; FP8 needs sm_89 or newer)";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "cuBLASLt: CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "cuBLASLt: CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "cuBLASLt: CUBLAS_STATUS_NOT_SUPPORTED";
  default:
    return "cuBLASLt: call failed";
  }
}

uint32_t alignmentOf(const void *p) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align)
    align /= 2;
  return align;
}

const char *ltReady(te_kernels_state *s) {
  if (s->lt && s->workspace)
    return nullptr;
  // A branch's state is set up inside the capture that began it: outside
  // the capture's rules (relaxed mode; neither call queues work).
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (s->parent)
    cudaThreadExchangeStreamCaptureMode(&mode);
  const char *err = nullptr;
  if (!s->lt) {
    err = ltError(cublasLtCreate(&s->lt));
    const char *env = std::getenv("TE_RT_GEMM_TUNING");
    s->tuneGemms = env && env[0] == '1';
  }
  if (!err && !s->workspace) {
    err = status(cudaMalloc(&s->ownWorkspace, kWorkspaceBytes));
    if (!err) {
      s->workspace = s->ownWorkspace;
      s->workspaceBytes = kWorkspaceBytes;
    }
  }
  if (s->parent)
    cudaThreadExchangeStreamCaptureMode(&mode);
  return err;
}

void setPreferences(te_kernels_state *s, cublasLtMatmulPreference_t pref,
                    const void *A, const void *B, const void *D) {
  size_t ws = s->workspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  const uint32_t al[4] = {alignmentOf(A), alignmentOf(B), alignmentOf(D),
                          alignmentOf(D)};
  const cublasLtMatmulPreferenceAttributes_t which[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    cublasLtMatmulPreferenceSetAttribute(pref, which[i], &al[i], sizeof(al[i]));
}

namespace {

/// Queues the matmul with `algo`; C is D.
cublasStatus_t launch(te_kernels_state *s, Descriptors &g,
                      const cublasLtMatmulAlgo_t &algo, const void *A,
                      const void *B, void *D, float beta) {
  const float alpha = 1.0f;
  cublasLtMatrixLayout_t c = g.c ? g.c : g.d;
  return cublasLtMatmul(s->lt, g.op, &alpha, A, g.a, B, g.b, &beta, D, c, D,
                        g.d, &algo, s->workspace, s->workspaceBytes,
                        s->stream);
}

/// Times `candidates` (each: one untimed run, then kTuneRuns timed ones)
/// and returns the index of the fastest; candidates that fail to run are
/// skipped (0 when none ran).
const char *fastest(te_kernels_state *s, Descriptors &g,
                    const cublasLtMatmulHeuristicResult_t *candidates,
                    int count, const void *A, const void *B, void *D,
                    int *best) {
  *best = 0;
  cudaEvent_t start = nullptr, stop = nullptr;
  if (const char *err = status(cudaEventCreate(&start)))
    return err;
  if (const char *err = status(cudaEventCreate(&stop))) {
    cudaEventDestroy(start);
    return err;
  }
  float bestMs = -1;
  const char *err = nullptr;
  for (int i = 0; i < count && !err; ++i) {
    if (launch(s, g, candidates[i].algo, A, B, D, 0.0f) !=
        CUBLAS_STATUS_SUCCESS)
      continue;
    bool ran = true;
    err = status(cudaEventRecord(start, s->stream));
    for (int r = 0; r < kTuneRuns && ran && !err; ++r)
      ran = launch(s, g, candidates[i].algo, A, B, D, 0.0f) ==
            CUBLAS_STATUS_SUCCESS;
    if (!err)
      err = status(cudaEventRecord(stop, s->stream));
    if (!err)
      err = status(cudaEventSynchronize(stop));
    float ms = 0;
    if (!err)
      err = status(cudaEventElapsedTime(&ms, start, stop));
    if (!err && ran && (bestMs < 0 || ms < bestMs)) {
      bestMs = ms;
      *best = i;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return err;
}

} // namespace

const char *runMatmul(te_kernels_state *s, const GemmKey &key, Descriptors &g,
                      const void *A, const void *B, void *D, float beta,
                      bool *unsupported) {
  *unsupported = false;
  // A branch's GEMMs run the algorithms its parent chose (same workspace
  // size, same problem key: the same bits as in order).
  te_kernels_state *owner = s->parent ? s->parent : s;
  auto it = owner->gemmChoices.find(key.bytes);
  if (it == owner->gemmChoices.end()) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (const char *err = status(cudaStreamIsCapturing(s->stream, &capture)))
      return err;
    const bool tune = s->tuneGemms && beta == 0.0f &&
                      capture == cudaStreamCaptureStatusNone;
    if (!g.pref) {
      if (const char *err = ltError(cublasLtMatmulPreferenceCreate(&g.pref)))
        return err;
      setPreferences(s, g.pref, A, B, D);
    }
    cublasLtMatmulHeuristicResult_t heur[kTuneCandidates] = {};
    int found = 0;
    ++owner->gemmHeuristicQueries;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
        s->lt, g.op, g.a, g.b, g.c ? g.c : g.d, g.d, g.pref,
        tune ? kTuneCandidates : 1, heur, &found);
    te_kernels_gemm_choice choice;
    if (st == CUBLAS_STATUS_NOT_SUPPORTED ||
        (st == CUBLAS_STATUS_SUCCESS && found == 0)) {
      choice.unsupported = true;
    } else {
      if (const char *err = ltError(st))
        return err;
      int best = 0;
      if (found > 1) {
        if (const char *err = fastest(s, g, heur, found, A, B, D, &best))
          return err;
        choice.tuned = true;
        ++owner->gemmTunedProblems;
      }
      choice.algo = heur[best].algo;
    }
    it = owner->gemmChoices.emplace(key.bytes, choice).first;
  }
  if (it->second.unsupported) {
    *unsupported = true;
    return nullptr;
  }
  cublasStatus_t st = launch(s, g, it->second.algo, A, B, D, beta);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED) { // nothing was queued
    *unsupported = true;
    return nullptr;
  }
  return ltError(st);
}

} // namespace te::kernels

namespace {

/// Column-major D[M, N] = op(A) . op(B) (+ beta * D) with epilogue `epi`
/// (bias: the epilogue's vector). *unsupported is set, with no error, when
/// cuBLASLt offers no algorithm.
const char *matmul(te_kernels_state *s, int dtype, cublasOperation_t ta,
                   cublasOperation_t tb, int64_t M, int64_t N, int64_t K,
                   const void *A, int64_t lda, const void *B, int64_t ldb,
                   void *D, int64_t ldd, float beta, cublasLtEpilogue_t epi,
                   const void *bias, bool *unsupported,
                   const void *aux = nullptr, int64_t ldaux = 0,
                   int outDtype = -1) {
  *unsupported = false;
  if (const char *err = ltReady(s))
    return err;
  cudaDataType_t t = cudaTypeOf(dtype);
  // D (and C, which is D) in outDtype: fp32 for a main_grad wgrad.
  if (outDtype < 0)
    outDtype = dtype;
  cudaDataType_t td = cudaTypeOf(outDtype);
  Descriptors g;
  if (const char *err = ltError(
          cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F)))
    return err;
  cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                 sizeof(ta));
  cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                 sizeof(tb));
  if (epi != CUBLASLT_EPILOGUE_DEFAULT) {
    cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                   sizeof(epi));
    cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                   &bias, sizeof(bias));
    cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                   &t, sizeof(t));
  }
  if (aux) { // GELU_AUX* writes it, DGELU reads it; same dtype as D
    cublasLtMatmulDescSetAttribute(
        g.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux));
    cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                   &ldaux, sizeof(ldaux));
  }
  bool aN = ta == CUBLAS_OP_N, bN = tb == CUBLAS_OP_N;
  if (const char *err = ltError(
          cublasLtMatrixLayoutCreate(&g.a, t, aN ? M : K, aN ? K : M, lda)))
    return err;
  if (const char *err = ltError(
          cublasLtMatrixLayoutCreate(&g.b, t, bN ? K : N, bN ? N : K, ldb)))
    return err;
  if (const char *err =
          ltError(cublasLtMatrixLayoutCreate(&g.d, td, M, N, ldd)))
    return err;
  GemmKey key;
  key.add(0 /* high precision */).add(dtype).add(outDtype).add(ta).add(tb);
  key.add(M).add(N);
  key.add(K).add(lda).add(ldb).add(ldd).add(epi).add(beta != 0.0f);
  key.add(alignmentOf(A)).add(alignmentOf(B)).add(alignmentOf(D));
  key.add(bias ? alignmentOf(bias) : 0);
  key.add(aux ? alignmentOf(aux) : 0).add(ldaux);
  return runMatmul(s, key, g, A, B, D, beta, unsupported);
}

/// matmul, where "no algorithm" is an error.
const char *matmulOrFail(te_kernels_state *s, int dtype, cublasOperation_t ta,
                         cublasOperation_t tb, int64_t M, int64_t N, int64_t K,
                         const void *A, int64_t lda, const void *B, int64_t ldb,
                         void *D, int64_t ldd, float beta,
                         cublasLtEpilogue_t epi, const void *bias) {
  bool unsupported = false;
  if (const char *err = matmul(s, dtype, ta, tb, M, N, K, A, lda, B, ldb, D,
                               ldd, beta, epi, bias, &unsupported))
    return err;
  return unsupported ? "cuBLASLt has no algorithm for this GEMM" : nullptr;
}

int64_t elemBytes(int dtype) { return dtype == 0 ? 4 : 2; }

//===----------------------------------------------------------------------===//
// wgrad of a few tokens (m <= 64): dw[n, k] = dy[m, n]^T . x[m, k]
//===----------------------------------------------------------------------===//
//
// With m this small the GEMM is an outer product whose cost is writing dw
// (n * k values, m multiply-adds each): cuBLASLt's choice for 16 tokens wrote
// the 16384x4096 bf16 weight gradient at 3.2 TB/s (H200). Here a block owns
// 128 rows of dw and walks every groups-th 128-column tile: dy's 128 columns
// are staged once in shared memory, row-major, zero-padded to whole
// 16-token chunks; per tile, x's columns are staged the same way (the next
// tile's loads in flight meanwhile). Tensor-core MMAs (m16n8k16) reduce
// over the tokens, their fragments taken with transposing ldmatrix; each
// warp makes 16 rows x 128 columns in fp32, 64 columns at a time, rounded
// once (cvt.rn) into a per-warp staging tile that the warp then writes as
// whole 256-byte rows. The blocks of the first column tile also sum dy's
// columns in fp32 for dbias (BGRADB's result). A wgrad with accumulate, in
// f32, or with misaligned operands stays with cuBLASLt.

} // namespace

// (A named namespace: nvcc's stubs for a template kernel cannot name it
// inside this file's anonymous namespace, which `using namespace
// te::kernels` makes ambiguous.)
namespace te::kernels::skinny {

constexpr int kMaxChunks = 4;        // 16-token chunks: m <= 64
constexpr int kTile = 128;           // dw rows per block, columns per tile
constexpr int kThreads = 256;        // 8 warps x 16 rows
constexpr int kStride = kTile + 8;   // smem row (b16): 68 words, ldmatrix-
                                     // and row-store conflict-free

/// Shared memory of a block for `chunks` token chunks (bytes): the dy and
/// x slabs (tokens x 128 columns, row-major) and 8 warps' 16-row staging.
inline size_t smemBytes(int chunks) {
  return (size_t(2) * chunks * 16 + size_t(8) * 16) * kStride * 2;
}

/// m16n8k16 MMA with fp32 accumulators for the 16-bit type E (BF16, F16),
/// and two fp32 values rounded (cvt.rn) into E's packed pair.
template <typename E> struct Mma {
  static __device__ uint32_t pack(float lo, float hi) {
    uint32_t r;
    if constexpr (std::is_same_v<E, BF16>) {
      __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
      r = *reinterpret_cast<uint32_t *>(&v);
    } else {
      __half2 v = __floats2half2_rn(lo, hi);
      r = *reinterpret_cast<uint32_t *>(&v);
    }
    return r;
  }
  static __device__ void run(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                             uint32_t b1) {
#define TE_SKINNY_MMA(T)                                                       \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." T "." T ".f32 "        \
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"         \
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))
    if constexpr (std::is_same_v<E, BF16>)
      TE_SKINNY_MMA("bf16");
    else
      TE_SKINNY_MMA("f16");
#undef TE_SKINNY_MMA
  }
};

/// Four 8x8 b16 matrices from shared memory, transposed (ldmatrix .trans):
/// lane L gives the address of row L % 8 of matrix L / 8.
__device__ inline void ldsmX4T(uint32_t (&r)[4], const uint16_t *p) {
  uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
               "{%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/// One thread's share of a [chunks * 16, 128] slab of src [m, cols] from
/// column c0, row-major: row threadIdx / 16 of each chunk, 8 columns from
/// (threadIdx % 16) * 8 (coalesced 256-byte rows); zeros past m or cols
/// (multiples of 8).
struct Slab {
  uint4 q[kMaxChunks];
  __device__ void load(const uint16_t *__restrict__ src, int64_t m,
                       int64_t cols, int64_t c0, int chunks) {
    int t = threadIdx.x / 16, v = threadIdx.x % 16;
    int64_t col = c0 + v * 8;
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c) {
      q[c] = make_uint4(0, 0, 0, 0);
      int64_t row = c * 16 + t;
      if (c < chunks && row < m && col < cols)
        q[c] = *reinterpret_cast<const uint4 *>(src + row * cols + col);
    }
  }
  __device__ void store(uint16_t *dst, int chunks) const {
    int t = threadIdx.x / 16, v = threadIdx.x % 16;
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c)
      if (c < chunks)
        *reinterpret_cast<uint4 *>(dst + (c * 16 + t) * kStride + v * 8) =
            q[c];
  }
};

template <typename E, int kPass, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    skinnyWgradKernel(const uint16_t *__restrict__ dy,
                      const uint16_t *__restrict__ x,
                      uint16_t *__restrict__ dw, uint16_t *__restrict__ dbias,
                      int64_t m, int64_t n, int64_t k, int chunks,
                      int groups) {
  gridWait();
  extern __shared__ __align__(16) uint16_t smem[];
  uint16_t *dyS = smem, *xS = smem + chunks * 16 * kStride;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, tig = lane % 4;
  uint16_t *out = xS + chunks * 16 * kStride + warp * 16 * kStride;
  const int64_t n0 = int64_t(blockIdx.y) * kTile;
  const int64_t kTiles = (k + kTile - 1) / kTile;
  // Block b makes column tiles b, b + groups, ...: the blocks resident
  // together write neighbouring columns.
  int64_t tile = blockIdx.x;
  if (tile >= kTiles)
    return;

  Slab slab;
  slab.load(dy, m, n, n0, chunks);
  slab.store(dyS, chunks);
  slab.load(x, m, k, tile * kTile, chunks);
  __syncthreads();
  if (dbias && blockIdx.x == 0 && threadIdx.x < kTile &&
      n0 + threadIdx.x < n) {
    float sum = 0.0f;
    for (int t = 0; t < m; ++t)
      sum += E::load(dyS[t * kStride + threadIdx.x]);
    dbias[n0 + threadIdx.x] = E::store(sum);
  }
  // The warp's A fragments (A[r][t] = dy[t][n0 + 16 warp + r]) for every
  // chunk stay in registers: matrices (tokens 0-7 | 8-15) x (rows 0-7 |
  // 8-15) in a0..a3 order.
  const int q = lane / 8, i = lane % 8;
  uint32_t a[kMaxChunks][4];
#pragma unroll
  for (int c = 0; c < kMaxChunks; ++c)
    if (c < chunks)
      ldsmX4T(a[c], dyS + (c * 16 + (q / 2) * 8 + i) * kStride + warp * 16 +
                        (q % 2) * 8);

  for (; tile < kTiles; tile += groups) {
    const int64_t k0 = tile * kTile;
    __syncthreads(); // the previous tile's MMAs are done with xS
    slab.store(xS, chunks);
    if (tile + groups < kTiles)
      slab.load(x, m, k, k0 + groups * kTile, chunks); // in flight meanwhile
    __syncthreads();
    // kPass columns at a time (fewer accumulators, more blocks resident).
#pragma unroll
    for (int pass = 0; pass < kTile / kPass; ++pass) {
      float acc[kPass / 8][4] = {};
#pragma unroll
      for (int c = 0; c < kMaxChunks; ++c) {
        if (c < chunks) {
#pragma unroll
          for (int j = 0; j < kPass / 8; j += 2) {
            // b0, b1 of column tiles j and j + 1: matrices (tokens 0-7 |
            // 8-15) x (columns 8j.. | 8j+8..).
            uint32_t b[4];
            ldsmX4T(b, xS + (c * 16 + (q % 2) * 8 + i) * kStride +
                           pass * kPass + (j + q / 2) * 8);
            Mma<E>::run(acc[j], a[c], b[0], b[1]);
            Mma<E>::run(acc[j + 1], a[c], b[2], b[3]);
          }
        }
      }
      // Round into the warp's staging tile (cvt.rn of two values at once;
      // NaN comes out canonical, as from cuBLASLt).
#pragma unroll
      for (int j = 0; j < kPass / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          *reinterpret_cast<uint32_t *>(out + (g + 8 * h) * kStride +
                                        pass * kPass + j * 8 + 2 * tig) =
              Mma<E>::pack(acc[j][2 * h], acc[j][2 * h + 1]);
    }
    __syncwarp();
    const int64_t col = k0 + (lane % 16) * 8;
#pragma unroll
    for (int r = 0; r < 16; r += 2) {
      int row = r + lane / 16;
      int64_t dwRow = n0 + warp * 16 + row;
      if (dwRow < n && col < k)
        *reinterpret_cast<uint4 *>(dw + dwRow * k + col) =
            *reinterpret_cast<const uint4 *>(out + row * kStride +
                                             (lane % 16) * 8);
    }
    __syncwarp(); // the staging tile is read before the next tile's writes
  }
}

} // namespace te::kernels::skinny

namespace {

using namespace te::kernels::skinny;

/// The skinny wgrad for bf16/f16 with m <= 64 (no accumulate), n and k
/// multiples of 8 and 16-byte aligned operands; false when those do not
/// hold (cuBLASLt runs).
bool skinnyWgrad(te_kernels_state *s, int dtype, const void *dy,
                 const void *x, void *dw, void *dbias, int64_t m, int64_t n,
                 int64_t k, int accumulate, const char **err) {
  *err = nullptr;
  // TE_RT_GEMM_SKINNY=0 leaves every wgrad to cuBLASLt (for measurements).
  static const bool enabled = [] {
    const char *env = std::getenv("TE_RT_GEMM_SKINNY");
    return !(env && env[0] == '0');
  }();
  if (!enabled || (dtype != 1 && dtype != 2) || accumulate || m <= 0 ||
      m > 16 * kMaxChunks || n % 8 || k % 8 || !aligned(dy, 16) ||
      !aligned(x, 16) || !aligned(dw, 16) || (dbias && !aligned(dbias, 2)))
    return false;
  const int64_t kTiles = (k + kTile - 1) / kTile;
  const int64_t nTiles = (n + kTile - 1) / kTile;
  if (nTiles > 65535)
    return false;
  // About 16 blocks per multiprocessor over the grid (3 resident: with
  // 64-column passes the kernel fits 80 registers, spilling 12 bytes); each
  // walks the column tiles b, b + groups, ... of its 128 rows (dy staged
  // once). Measured on
  // the H200 (16 tokens, 16384x4096): 36 us per weight gradient against
  // cuBLASLt's 42 us; 128-column passes at 2 blocks/SM and 4 or 8 blocks
  // per SM were 2-8% slower.
  int64_t groups =
      std::max<int64_t>(1, (16 * smCount() + nTiles - 1) / nTiles);
  groups = std::min(groups, kTiles);
  const int chunks = static_cast<int>((m + 15) / 16);
  const size_t smem = smemBytes(chunks);
  dim3 grid(static_cast<unsigned>(groups), static_cast<unsigned>(nTiles));
  auto launch = [&](auto kernel) -> const char * {
    if (const char *e2 = fitKernel(reinterpret_cast<const void *>(kernel),
                                   smemBytes(kMaxChunks), kThreads, false)
                             .err)
      return e2;
    launchKernel(s, kernel, grid, kThreads, smem,
                 static_cast<const uint16_t *>(dy),
                 static_cast<const uint16_t *>(x), static_cast<uint16_t *>(dw),
                 static_cast<uint16_t *>(dbias), m, n, k, chunks,
                 static_cast<int>(groups));
    return launched();
  };
  *err = dtype == 1 ? launch(skinnyWgradKernel<BF16, 64, 3>)
                    : launch(skinnyWgradKernel<F16, 64, 3>);
  return true;
}

} // namespace

extern "C" {

void te_kernels_gemm_cache_stats(te_kernels_state *s, int64_t *problems,
                                 int64_t *queries, int64_t *tuned) {
  *problems = static_cast<int64_t>(s->gemmChoices.size());
  *queries = s->gemmHeuristicQueries;
  *tuned = s->gemmTunedProblems;
}

// Row-major Y[m, n] is column-major Y^T[n, m]: every GEMM below computes the
// transposed product column-major.

const char *te_kernels_gemm_fprop(te_kernels_state *s, int dtype, const void *x,
                                  const void *w, const void *bias, void *y,
                                  int64_t m, int64_t n, int64_t k) {
  if (m == 0 || n == 0)
    return nullptr;
  if (k == 0)
    return broadcastRows(s, dtype, bias, y, m, n);
  // Y^T[n, m] = W[k, n]^T (col-major) . X^T[k, m] (+ bias[n] per row).
  return matmulOrFail(
      s, dtype, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, w, k, x, k, y, n, 0.0f,
      bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT, bias);
}

const char *te_kernels_gemm_dgrad(te_kernels_state *s, int dtype,
                                  const void *dy, const void *w, void *dx,
                                  int64_t m, int64_t n, int64_t k) {
  if (m == 0 || k == 0)
    return nullptr;
  if (n == 0)
    return status(cudaMemsetAsync(dx, 0, m * k * elemBytes(dtype), s->stream));
  // DX^T[k, m] = W^T[k, n] (col-major view of w) . DY^T[n, m].
  return matmulOrFail(s, dtype, CUBLAS_OP_N, CUBLAS_OP_N, k, m, n, w, k, dy, n,
                      dx, k, 0.0f, CUBLASLT_EPILOGUE_DEFAULT, nullptr);
}

const char *te_kernels_gemm_wgrad(te_kernels_state *s, int dtype,
                                  const void *dy, const void *x, void *dw,
                                  void *dbias, int64_t m, int64_t n, int64_t k,
                                  int accumulate) {
  if (n == 0)
    return nullptr;
  if (m == 0 || k == 0) {
    if (m == 0 && !accumulate && k > 0)
      if (const char *err = status(
              cudaMemsetAsync(dw, 0, n * k * elemBytes(dtype), s->stream)))
        return err;
    return dbias ? biasGrad(s, dtype, dy, dbias, m, n) : nullptr;
  }
  const char *skinnyErr = nullptr;
  if (skinnyWgrad(s, dtype, dy, x, dw, dbias, m, n, k, accumulate, &skinnyErr))
    return skinnyErr;
  // DW^T[k, n] = X^T[k, m] . DY[m, n] (op T of the col-major DY^T[n, m]);
  // BGRADB sums op(B) = DY over m: dbias[n].
  float beta = accumulate ? 1.0f : 0.0f;
  if (dbias) {
    bool unsupported = false;
    if (const char *err =
            matmul(s, dtype, CUBLAS_OP_N, CUBLAS_OP_T, k, n, m, x, k, dy, n, dw,
                   k, beta, CUBLASLT_EPILOGUE_BGRADB, dbias, &unsupported))
      return err;
    if (!unsupported)
      return nullptr;
  }
  if (const char *err =
          matmulOrFail(s, dtype, CUBLAS_OP_N, CUBLAS_OP_T, k, n, m, x, k, dy, n,
                       dw, k, beta, CUBLASLT_EPILOGUE_DEFAULT, nullptr))
    return err;
  return dbias ? biasGrad(s, dtype, dy, dbias, m, n) : nullptr;
}

const char *te_kernels_gemm_wgrad_fp32(te_kernels_state *s, int dtype,
                                       const void *dy, const void *x, float *dw,
                                       int64_t m, int64_t n, int64_t k,
                                       int accumulate) {
  if (n == 0 || k == 0)
    return nullptr;
  if (m == 0)
    return accumulate ? nullptr
                      : status(cudaMemsetAsync(dw, 0, n * k * sizeof(float),
                                               s->stream));
  // As te_kernels_gemm_wgrad, D (= C with accumulate, beta 1) in fp32.
  bool unsupported = false;
  if (const char *err =
          matmul(s, dtype, CUBLAS_OP_N, CUBLAS_OP_T, k, n, m, x, k, dy, n, dw,
                 k, accumulate ? 1.0f : 0.0f, CUBLASLT_EPILOGUE_DEFAULT,
                 nullptr, &unsupported, nullptr, 0, /*outDtype=*/0))
    return err;
  return unsupported ? "cuBLASLt has no algorithm for this GEMM (fp32 output)"
                     : nullptr;
}

// GELU in the epilogue (te_rt_gemm_fprop_act / te_rt_gemm_dgrad_dact).
// Where cuBLASLt has no algorithm with it, the plain GEMM and the activation
// kernel run instead (in place on the output: the kernels are elementwise),
// which rounds the product once more.

int64_t te_kernels_gemm_act_fallbacks(te_kernels_state *s) {
  return s->gemmActFallbacks;
}

const char *te_kernels_gemm_fprop_act(te_kernels_state *s, int act, int dtype,
                                      const void *x, const void *w,
                                      const void *bias, void *y, void *aux,
                                      int64_t m, int64_t n, int64_t k) {
  if (act != 0)
    return "the GEMM epilogue's activation must be GELU (TE_RT_ACT_GELU)";
  if (m == 0 || n == 0)
    return nullptr;
  // cuBLASLt wants the aux leading dim (n) a multiple of 8.
  if (k > 0 && (!aux || n % 8 == 0)) {
    cublasLtEpilogue_t epi =
        aux ? (bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX)
            : (bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU);
    bool unsupported = false;
    if (const char *err = matmul(s, dtype, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, w,
                                 k, x, k, y, n, 0.0f, epi, bias, &unsupported,
                                 aux, n))
      return err;
    if (!unsupported)
      return nullptr;
  }
  ++s->gemmActFallbacks;
  void *pre = aux ? aux : y;
  if (const char *err = te_kernels_gemm_fprop(s, dtype, x, w, bias, pre, m, n, k))
    return err;
  return te_kernels_act_fwd(s, act, dtype, pre, y, m, n, 0.0f, 0.0f, 0.0f,
                            nullptr);
}

const char *te_kernels_gemm_dgrad_dact(te_kernels_state *s, int act,
                                       int dtype, const void *dy,
                                       const void *w, const void *aux,
                                       void *dx, int64_t m, int64_t n,
                                       int64_t k) {
  if (act != 0)
    return "the GEMM epilogue's activation must be GELU (TE_RT_ACT_GELU)";
  if (m == 0 || k == 0)
    return nullptr;
  if (n > 0 && k % 8 == 0) { // aux leading dim k: a multiple of 8
    bool unsupported = false;
    if (const char *err = matmul(s, dtype, CUBLAS_OP_N, CUBLAS_OP_N, k, m, n, w,
                                 k, dy, n, dx, k, 0.0f, CUBLASLT_EPILOGUE_DGELU,
                                 nullptr, &unsupported, aux, k))
      return err;
    if (!unsupported)
      return nullptr;
  }
  ++s->gemmActFallbacks;
  if (const char *err = te_kernels_gemm_dgrad(s, dtype, dy, w, dx, m, n, k))
    return err;
  return te_kernels_act_bwd(s, act, dtype, dx, aux, dx, m, k, 0.0f, 0.0f, 0.0f,
                            nullptr);
}

} // extern "C"
