//===- quantize_act.cu - Fused activation-casts to FP8 --------------------===//
//
// The CUDA side of te_rt_act_quantize_fp8 and te_rt_dact_quantize_fp8
// (delayed scaling): the activation (act.cuh), its derivative or a gated
// one computed from the inputs, each value rounded once to the input type
// (what te_kernels_act_fwd / _act_bwd would store), then cast to FP8 into
// data and transpose in one pass through quantize.cu's tiles; optionally
// the bias gradient (dbias + dact) and the amax of the rounded values.
// Whole tiles can stream their loads through a cp.async ring in shared
// memory.
//
//===----------------------------------------------------------------------===//

#include "act.cuh"
#include "launch.cuh"
#include "quantize.cuh"

#include <algorithm>
#include <cstdlib>
#include <type_traits>

using namespace te::kernels;

namespace {

/// The values a fused activation-cast quantizes: element (r, c) of its
/// [rows, cols] result is act(x) (kBwd false; gated: act(a) * b from the
/// halves of x's row [a | b]) or dy * act'(x) (kBwd; gated: [da | db]), in
/// fp32, as te_kernels_act_fwd / _act_bwd compute it before rounding.
template <typename E, bool kBwd, bool kGated> struct ActSource {
  using T = typename E::T;
  static constexpr int kVec = perVec<E>();
  static constexpr bool gated = kGated;
  /// Gated backward: a tile of the da half (columns c < half) also makes
  /// the db half's tile (columns half + c) from the same loads.
  static constexpr bool kPaired = kBwd && kGated;
  static constexpr int kHalves = kPaired ? 2 : 1;
  ActParams p;
  int fn;       // te_rt_act_fn(p.act), for byActFn
  const T *x;   // kBwd false: [rows, gated ? 2 * cols : cols]; else [rows, cols]
  const T *dy;  // kBwd: [rows, gated ? cols / 2 : cols]
  int64_t cols; // of the result
  int64_t half; // gated: the width of a half of x's row

  static constexpr bool kBackward = kBwd;
  /// The 16-byte vectors behind kVec results: x (or its two halves), dy.
  static constexpr int kLoads = (kBwd ? 1 : 0) + (kGated ? 2 : 1);
  struct Raw {
    uint4 v[kLoads];
  };
  /// The address of load j (< kLoads) behind result elements
  /// (r, c .. c + kVec): x or its halves, dy first in the backward.
  __device__ const T *ptr(int64_t r, int64_t c, int j) const {
    if constexpr (!kBwd && !kGated) {
      return x + r * cols + c;
    } else if constexpr (!kBwd) {
      return x + r * 2 * half + (j ? half : 0) + c;
    } else if constexpr (!kGated) {
      return j == 0 ? dy + r * cols + c : x + r * cols + c;
    } else { // paired: c < half
      return j == 0 ? dy + r * half + c : x + r * cols + (j == 2 ? half : 0) + c;
    }
  }
  /// The 16-byte loads behind result elements (r, c .. c + kVec).
  __device__ void load(int64_t r, int64_t c, Raw &raw) const {
#pragma unroll
    for (int j = 0; j < kLoads; ++j)
      raw.v[j] = __ldg(reinterpret_cast<const uint4 *>(ptr(r, c, j)));
  }
  /// The fp32 values of those elements (not paired); one branch on the
  /// activation per vector (byActFn).
  __device__ void values(int64_t c, const Raw &raw, float (&f)[kVec]) const {
    unpack<E>(raw.v[0], f);
    float o[kVec];
    if constexpr (kGated || kBwd)
      unpack<E>(raw.v[1], o);
    byActFn(fn, [&](auto act) {
      const ActParams q = withAct<decltype(act)::value>(p);
      if constexpr (!kBwd && !kGated) {
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          f[e] = actF(q.act, f[e]);
      } else if constexpr (!kBwd) {
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          f[e] = gatedF(q, f[e], o[e]);
      } else if constexpr (!kGated) {
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          f[e] = f[e] * actDf(q.act, o[e]);
      }
    });
  }
  /// Paired: the values of both halves, da (f[0]) and db (f[1]).
  __device__ void values(int64_t, const Raw &raw, float (&f)[2][kVec]) const {
    float g[kVec], a[kVec], b[kVec];
    unpack<E>(raw.v[0], g);
    unpack<E>(raw.v[1], a);
    unpack<E>(raw.v[2], b);
    byActFn(fn, [&](auto act) {
      const ActParams q = withAct<decltype(act)::value>(p);
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        gatedDf(q, a[e], b[e], g[e], f[0][e], f[1][e]);
    });
  }
  /// One element, for ragged or misaligned tiles.
  __device__ float at(int64_t r, int64_t c) const {
    if constexpr (!kBwd && !kGated) {
      return actF(p.act, E::load(x[r * cols + c]));
    } else if constexpr (!kBwd) {
      const T *row = x + r * 2 * half;
      return gatedF(p, E::load(row[c]), E::load(row[half + c]));
    } else if constexpr (!kGated) {
      return E::load(dy[r * cols + c]) * actDf(p.act, E::load(x[r * cols + c]));
    } else {
      return 0.0f; // paired: at(r, c, f)
    }
  }
  /// Paired: both halves' values at (r, c < half).
  __device__ void at(int64_t r, int64_t c, float (&f)[2]) const {
    const T *row = x + r * cols;
    gatedDf(p, E::load(row[c]), E::load(row[half + c]),
            E::load(dy[r * half + c]), f[0], f[1]);
  }
};

/// actCastTransposeKernel's tile shape and the steps of one tile, each
/// force-inlined into the kernel (the kernel's code, moved: the same
/// operations in the same order).
template <typename E, int Fmt, int kRows, int kCols, typename Src, int kStages>
struct ActCastTile {
  static constexpr int kVec = perVec<E>();
  static constexpr int kRowVecs = kCols / kVec;
  static constexpr int kPer = kRows * kRowVecs / kThreads;
  static constexpr int kGroups = kThreads / kRowVecs; // threads sharing columns
  static constexpr int kHalves = Src::kHalves;
  static constexpr int kLoads = Src::kLoads;
  // Only a non-gated backward sums dbias.
  static constexpr bool kDBias = Src::kBackward && !Src::kPaired;
  static_assert(kPer * kThreads == kRows * kRowVecs &&
                    kThreads % kRowVecs == 0 && kThreads % kCols == 0,
                "tile shape");
  using Tiles = uint8_t[kHalves][kRows * kCols];

  /// The calling thread's staging slot of load j of its vector p in ring
  /// slot k.
  static __device__ __forceinline__ uint4 *slot(uint4 *stage, int k, int p,
                                                int j) {
    return stage + ((k * kPer + p) * kLoads + j) * kThreads + threadIdx.x;
  }

  /// Casts the tile at (r0, c0) into the shared tiles and data: its values
  /// rounded to E, times s, the amax of the rounded values into m; with
  /// kDBias and dbiasPartial (or dbiasOut) also its column sums. Tiles
  /// whose columns are all there (fullCols) go by vectors of aligned rows
  /// (from ring slot `ring` with kStages, else loaded here), skipping rows
  /// past the end (16 tokens in a 64-row tile); the others by elements
  /// (castRagged).
  static __device__ __forceinline__ void
  castTile(const Src &src, const QuantArgs &a, float s, uint4 *stage, int ring,
           bool fullCols, int64_t r0, int64_t c0, int64_t rows, int64_t cols,
           int64_t tileCols, Tiles &tile, float *colSums, float *dbiasPartial,
           typename E::T *dbiasOut, float &m) {
    // Vector path: every thread keeps the columns cv * kVec .. + kVec of
    // its rows (idx % kRowVecs is threadIdx.x % kRowVecs); element path:
    // column threadIdx.x % kCols.
    float sum[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      sum[e] = 0.0f;
    const bool vec = fullCols && a.vecLoad;
    if (vec) {
      typename Src::Raw raw[kPer];
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        int idx = threadIdx.x + p * kThreads;
        int r = idx / kRowVecs, cv = idx % kRowVecs;
        if (r0 + r >= rows)
          continue; // past the last row: nothing loaded
        if constexpr (kStages > 0) {
#pragma unroll
          for (int j = 0; j < kLoads; ++j)
            raw[p].v[j] = *slot(stage, ring, p, j);
        } else {
          src.load(r0 + r, c0 + cv * kVec, raw[p]);
        }
      }
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        int idx = threadIdx.x + p * kThreads;
        int r = idx / kRowVecs, cv = idx % kRowVecs;
        if (r0 + r >= rows)
          continue;
        float f[kHalves][kVec];
        if constexpr (Src::kPaired)
          src.values(c0 + cv * kVec, raw[p], f);
        else
          src.values(c0 + cv * kVec, raw[p], f[0]);
#pragma unroll
        for (int h = 0; h < kHalves; ++h) {
#pragma unroll
          for (int e = 0; e < kVec; ++e)
            sum[e] += f[h][e];
          roundAll<E>(f[h]);
#pragma unroll
          for (int e = 0; e < kVec; ++e)
            m = fmaxf(m, fabsf(f[h][e]));
          Packed<Fmt, kVec> q(f[h], s);
          q.store(tile[h] + swizzled<kCols>(r, cv * kVec));
          if (a.data)
            storeTo(q, a.data + (r0 + r) * cols + h * src.half + c0 + cv * kVec,
                    a.vecData);
        }
      }
    } else {
      castRagged(src, a, s, r0, c0, rows, cols, tileCols, tile, sum, m);
    }
    if constexpr (kDBias) {
      if (dbiasPartial || dbiasOut)
        sumColumns(colSums, sum, vec, r0, c0, cols, dbiasPartial, dbiasOut);
    }
  }

  /// castTile's element path: one element at a time, the sums of column
  /// threadIdx.x % kCols into sum[0].
  static __device__ __forceinline__ void
  castRagged(const Src &src, const QuantArgs &a, float s, int64_t r0,
             int64_t c0, int64_t rows, int64_t cols, int64_t tileCols,
             Tiles &tile, float (&sum)[kVec], float &m) {
    for (int idx = threadIdx.x; idx < kRows * kCols; idx += kThreads) {
      int r = idx / kCols, c = idx % kCols;
      if (r0 + r < rows && c0 + c < tileCols) {
        float v[kHalves];
        if constexpr (Src::kPaired)
          src.at(r0 + r, c0 + c, v);
        else
          v[0] = src.at(r0 + r, c0 + c);
#pragma unroll
        for (int h = 0; h < kHalves; ++h) {
          sum[0] += v[h];
          float f = E::load(E::store(v[h]));
          m = fmaxf(m, fabsf(f));
          uint8_t q = toFP8<Fmt>(f * s);
          tile[h][swizzled<kCols>(r, c)] = q;
          if (a.data)
            a.data[(r0 + r) * cols + h * src.half + c0 + c] = q;
        }
      }
    }
  }

  /// The tile's column sums (the threads' sums in thread order, through
  /// colSums) into dbiasPartial[(r0 / kRows) * cols + c], or rounded to E
  /// into dbiasOut[c] when the result has one band of tile rows (the bits
  /// colFinish would write: 0.0f plus a partial that is never -0.0f); vec
  /// says which path made sum.
  static __device__ __forceinline__ void
  sumColumns(float *colSums, const float (&sum)[kVec], bool vec, int64_t r0,
             int64_t c0, int64_t cols, float *dbiasPartial,
             typename E::T *dbiasOut) {
    const int groups = vec ? kGroups : kThreads / kCols;
    if (vec) {
      const int g = threadIdx.x / kRowVecs, cv = threadIdx.x % kRowVecs;
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        colSums[g * kCols + cv * kVec + e] = sum[e];
    } else {
      colSums[(threadIdx.x / kCols) * kCols + threadIdx.x % kCols] = sum[0];
    }
    __syncthreads();
    if (threadIdx.x < kCols && c0 + threadIdx.x < cols) {
      float total = 0.0f;
      for (int g = 0; g < groups; ++g)
        total += colSums[g * kCols + threadIdx.x];
      if (dbiasOut)
        dbiasOut[c0 + threadIdx.x] = E::store(total);
      else
        dbiasPartial[(r0 / kRows) * cols + c0 + threadIdx.x] = total;
    }
  }
};

/// castTransposeKernel with the values computed from the activation's
/// inputs (ActSource) instead of read: each value rounded to E once (the
/// value te_kernels_act_fwd / _act_bwd would store), then cast with the
/// given scale into data (optional) and the transpose (optional), the amax
/// of the rounded values into a.amaxOut (optional). With dbiasPartial, the
/// column sums of the unrounded values of each tile row go to
/// dbiasPartial[tileRow * cols + c] (each thread sums its rows of the
/// column, then the threads' sums are added in thread order; the grouping
/// differs between whole aligned tiles and the element path, so the last
/// bits of dbias depend on the path), reduced by colFinish; with dbiasOut
/// (one band of tile rows) the sums go there rounded to E. Paired sources
/// (gated backward) run their tiles over the da half and write the db
/// half's tile from the same loads (a second shared-memory tile). The
/// explicit minimum of one block a multiprocessor lets ptxas take the
/// registers it wants (77-118); left out, ptxas picks others (56-115), not
/// measured faster; compiled for 3 or 4 blocks the gated sources were
/// 6-33% slower (H100, docs/bench.md section (y)).
template <typename E, int Fmt, int kRows, int kCols, typename Src,
          int kStages>
__global__ void __launch_bounds__(kThreads, 1)
    actCastTransposeKernel(Src src, QuantArgs a, float *dbiasPartial,
                           typename E::T *dbiasOut) {
  gridWait();
  using Tile = ActCastTile<E, Fmt, kRows, kCols, Src, kStages>;
  constexpr int kVec = Tile::kVec, kRowVecs = Tile::kRowVecs;
  constexpr int kPer = Tile::kPer, kLoads = Tile::kLoads;
  __shared__ __align__(16) typename Tile::Tiles tile;
  __shared__ float colSums[Tile::kDBias ? Tile::kGroups * kCols : 1];
  // kStages > 0: the whole tiles' loads go through a ring of kStages
  // thread-private staging slots in dynamic shared memory (cp.async,
  // actStageBytes), issued kStages - 1 tiles ahead of the one being cast,
  // so that a block keeps that many tiles of loads in flight without
  // holding them in registers.
  extern __shared__ uint4 stage[];
  const float s = *a.scale;
  if (blockIdx.x == 0 && threadIdx.x == 0)
    *a.scaleInv = 1.0f / s;
  // Tiles run over the result's columns, or the da half's when paired.
  const int64_t rows = a.rows, cols = a.cols;
  const int64_t tileCols = Src::kPaired ? src.half : cols;
  const int64_t tilesC = (tileCols + kCols - 1) / kCols;
  const int64_t tiles = (rows + kRows - 1) / kRows * tilesC;
  auto colsFull = [&](int64_t t) {
    return t % tilesC * kCols + kCols <= tileCols;
  };
  // Issues tile t's loads into ring slot k (none for a ragged tile or past
  // the end), then commits the group (always, so that the count of groups
  // in flight is the same for every thread and iteration).
  auto issue = [&](int64_t t, int k) {
    if (t < tiles && a.vecLoad && colsFull(t)) {
      const int64_t r0 = t / tilesC * kRows, c0 = t % tilesC * kCols;
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        int idx = threadIdx.x + p * kThreads;
        int r = idx / kRowVecs, cv = idx % kRowVecs;
        if (r0 + r >= rows)
          continue;
#pragma unroll
        for (int j = 0; j < kLoads; ++j)
          cpAsync16(Tile::slot(stage, k, p, j),
                    src.ptr(r0 + r, c0 + cv * kVec, j));
      }
    }
    cpAsyncCommit();
  };
  if constexpr (kStages > 0) {
#pragma unroll
    for (int k = 0; k + 1 < kStages; ++k)
      issue(blockIdx.x + int64_t(k) * gridDim.x, k);
  }
  float m = 0.0f;
  int ring = 0; // the ring slot of tile t
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t r0 = t / tilesC * kRows, c0 = t % tilesC * kCols;
    const bool fullCols = c0 + kCols <= tileCols;
    if constexpr (kStages > 0) {
      // The slot tile t + kStages - 1 goes into was read by tile t - 1,
      // before that iteration's last __syncthreads.
      issue(t + int64_t(kStages - 1) * gridDim.x,
            (ring + kStages - 1) % kStages);
      cpAsyncWait<kStages - 1>(); // tile t's group has landed
    }
    Tile::castTile(src, a, s, stage, ring, fullCols, r0, c0, rows, cols,
                   tileCols, tile, colSums, dbiasPartial, dbiasOut, m);
    __syncthreads();
    if (a.transpose) {
      // Half h's tile goes to transpose rows h * half + c0 .. by 16-row
      // pieces (storeTilePieces). (With storeTileTransposed's quads, three
      // of the four act-casts measured 1-3% slower on the H100 at
      // 8192x16384: in a 64x64 tile half the threads have no quad and the
      // loads meet two to a bank; docs/bench.md section (z).)
#pragma unroll
      for (int h = 0; h < Tile::kHalves; ++h)
        storeTilePieces<kRows, kCols>(
            tile[h], a.transpose + (h * src.half + c0) * rows + r0, rows,
            rows - r0, tileCols - c0, fullCols && a.vecTrans);
    }
    __syncthreads(); // the tiles and colSums are refilled next
    ring = (ring + 1) % (kStages > 0 ? kStages : 1);
  }
  if constexpr (kStages > 0)
    cpAsyncWait<0>(); // no copy outlives the block
  if (a.amaxOut)
    blockAmax(m, a.amaxOut);
}

/// The deepest cp.async ring a fused activation-cast may run with (0:
/// plain loads into registers): 16-bit types (the ring is dynamic shared
/// memory, actStageBytes, 24 to 72 KB at depth 3).
template <typename E, typename Src> constexpr int maxActStages() {
  return sizeof(typename E::T) == 2 ? 3 : 0;
}

/// The dynamic shared memory of a ring of kStages slots for a 64x64 tile:
/// each of the 256 threads stages kLoads 16-byte loads per vector, of its
/// kPer vectors per tile.
template <typename Src, int kVec> constexpr size_t actStageBytes(int stages) {
  return size_t(stages) * (64 * 64 / kVec / kThreads) * Src::kLoads *
         kThreads * sizeof(uint4);
}

/// The ring depth: TE_KERNELS_ACT_STAGES (0..3, for measurements; read
/// once) when set, else 2, both capped by maxActStages. Measured on the
/// H100 (8192x16384 bf16, te-kernels-selftest --bench-act-cast, docs/bench.md
/// section (y)): depth 2 was the fastest or as fast for every source; 3
/// left the paired source two blocks a multiprocessor (80 KB of shared
/// memory each) and slowed the GELU forward.
inline int actStagesWanted() {
  static const int wanted = [] {
    const char *env = std::getenv("TE_KERNELS_ACT_STAGES");
    if (env && *env >= '0' && *env <= '9' && env[1] == 0)
      return *env - '0';
    return 2;
  }();
  return wanted;
}

template <typename E, int Fmt, typename Src>
const char *actCast(te_kernels_state *s, Src src, QuantArgs a, void *dbias) {
  constexpr int kVec = perVec<E>();
  const int sms = smCount();
  // 16-byte loads of every operand, whole vectors per row and per half.
  bool vecLoad = aligned(src.x, 16) && a.cols % kVec == 0 &&
                 (!src.gated || src.half % kVec == 0);
  if (src.dy)
    vecLoad = vecLoad && aligned(src.dy, 16);
  a.vecLoad = vecLoad;
  a.vecData = aligned(a.data, kVec) && a.cols % kVec == 0;
  a.vecTrans = aligned(a.transpose, 16) && a.rows % 16 == 0;
  // 64x64 tiles: measured on the H200 at 8192x16384 bf16, 128-row tiles
  // (what the plain cast uses) are 10-20% slower here, the activation's
  // math and loads holding more registers per tile.
  const int64_t rowTiles = (a.rows + 63) / 64;
  const int64_t tiles =
      rowTiles * (((Src::kPaired ? src.half : a.cols) + 63) / 64);
  // One band of tile rows: its column sums are dbias (no partials, no
  // colFinish launch).
  using T = typename E::T;
  T *direct = dbias && rowTiles == 1 ? static_cast<T *>(dbias) : nullptr;
  float *partial = nullptr;
  if (dbias && a.rows > 0 && !direct)
    if (const char *err = scratch(s, rowTiles * a.cols, &partial))
      return err;
  // (At least one block: scale_inv is written even when there is nothing
  // to cast.)
  constexpr int kMax = maxActStages<E, Src>();
  const int stages = std::min(actStagesWanted(), kMax);
  // The ring's kernels: the whole shared memory for the carveout (the
  // driver's default left room for 3 blocks of the 37 KB SwiGLU kernel),
  // and above 48 KB of dynamic shared memory the opt-in.
  // A persistent grid then: as many blocks as are resident at once on
  // every multiprocessor, at most one per tile.
  auto launch = [&](auto kernel, int depth) -> const char * {
    const size_t smem = actStageBytes<Src, kVec>(depth);
    unsigned blocks = blocksFor(tiles, sms);
    if (depth > 0) {
      const KernelFit fit = fitKernel(reinterpret_cast<const void *>(kernel),
                                      smem, kThreads, true);
      if (fit.err)
        return fit.err;
      blocks = static_cast<unsigned>(std::max<int64_t>(
          1, std::min<int64_t>(tiles, int64_t(fit.perSm) * sms)));
    }
    launchKernel(s, kernel, blocks, kThreads, smem, src, a, partial, direct);
    return launched();
  };
  const char *err = nullptr;
  if (kMax >= 3 && stages >= 3)
    err = launch(
        actCastTransposeKernel<E, Fmt, 64, 64, Src, kMax >= 3 ? 3 : 0>, 3);
  else if (kMax >= 2 && stages == 2)
    err = launch(
        actCastTransposeKernel<E, Fmt, 64, 64, Src, kMax >= 2 ? 2 : 0>, 2);
  else
    err = launch(actCastTransposeKernel<E, Fmt, 64, 64, Src, 0>, 0);
  if (err)
    return err;
  if (!dbias || direct)
    return nullptr;
  if (a.cols == 0)
    return nullptr;
  launchKernel(s, colFinish<E>,
               blocksFor((a.cols + kThreads - 1) / kThreads, sms), kThreads, 0,
               partial, a.rows > 0 ? rowTiles : 0, a.cols,
               static_cast<typename E::T *>(dbias));
  return launched();
}

} // namespace

extern "C" {

/// The quantization half of a fused activation-cast (delayed scaling).
static QuantArgs fusedCastArgs(te_kernels_state *s, int format, int64_t rows,
                               int64_t cols, const float *scale, void *data,
                               void *transpose, float *scale_inv,
                               float *amax) {
  QuantArgs a{};
  a.rows = rows;
  a.cols = cols;
  a.scale = scale;
  a.fp8Max = fp8MaxOf(format);
  a.data = static_cast<uint8_t *>(data);
  a.transpose = static_cast<uint8_t *>(transpose);
  a.scaleInv = scale_inv;
  a.amaxOut = amaxOut(s, amax);
  return a;
}

const char *te_kernels_act_quantize_fp8(te_kernels_state *s, int act,
                                        int dtype, const void *x, int64_t rows,
                                        int64_t cols, float limit, float alpha,
                                        float offset, int format,
                                        const float *scale, void *data,
                                        void *transpose, float *scale_inv,
                                        float *amax) {
  if (format != kE4M3 && format != kE5M2)
    return "FP8 quantize: unknown format";
  const bool gated = isGated(act);
  if (!scale)
    return "fused activation-cast: scale is NULL (delayed scaling only)";
  if (gated && cols % 2)
    return "fused activation-cast: a gated activation needs an even cols";
  const int64_t yCols = gated ? cols / 2 : cols;
  QuantArgs a = fusedCastArgs(s, format, rows, yCols, scale, data, transpose,
                              scale_inv, amax);
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    auto run = [&](auto gatedTag) {
      ActSource<E, false, decltype(gatedTag)::value> src{
          ActParams{act, limit, alpha, offset}, te_rt_act_fn(act),
          static_cast<const typename E::T *>(x), nullptr, yCols, yCols};
      return format == kE4M3 ? actCast<E, kE4M3>(s, src, a, nullptr)
                             : actCast<E, kE5M2>(s, src, a, nullptr);
    };
    return gated ? run(std::true_type{}) : run(std::false_type{});
  });
}

const char *te_kernels_dact_quantize_fp8(
    te_kernels_state *s, int act, int dtype, const void *dy, const void *x,
    void *dbias, int64_t rows, int64_t cols, float limit, float alpha,
    float offset, int format, const float *scale, void *data, void *transpose,
    float *scale_inv, float *amax) {
  if (format != kE4M3 && format != kE5M2)
    return "FP8 quantize: unknown format";
  const bool gated = isGated(act);
  if (gated && dbias)
    return "fused dbias + dact: gated activations have none";
  if (!scale)
    return "fused activation-cast: scale is NULL (delayed scaling only)";
  if (gated && cols % 2)
    return "fused activation-cast: a gated activation needs an even cols";
  QuantArgs a = fusedCastArgs(s, format, rows, cols, scale, data, transpose,
                              scale_inv, amax);
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::T;
    auto run = [&](auto gatedTag) {
      ActSource<E, true, decltype(gatedTag)::value> src{
          ActParams{act, limit, alpha, offset}, te_rt_act_fn(act),
          static_cast<const T *>(x), static_cast<const T *>(dy), cols,
          gated ? cols / 2 : cols};
      return format == kE4M3 ? actCast<E, kE4M3>(s, src, a, dbias)
                             : actCast<E, kE5M2>(s, src, a, dbias);
    };
    return gated ? run(std::true_type{}) : run(std::false_type{});
  });
}

} // extern "C"
