//===- norm_bench.cu - Bandwidth and checks of te_kernels_norm_fwd/bwd ----===//
//
// te-norm-bench [--check-only | --bench-only | --bench-main | --quick |
//                --profile]
//
// Checks: te_kernels_norm_fwd/bwd (LayerNorm and RMSNorm, zero-centered
// gamma or not, f32/bf16/f16) against a host fp32 implementation of the
// reference formulas (lib/Runtime/cpu/Reference.cpp) on shapes that take
// the fast path and shapes that take the generic one (cols not a multiple
// of 16 bytes, misaligned pointers, very wide rows), with the CudaAbiTest
// tolerances; at the large bench shapes the fast path against the generic
// one (the same inputs at a misaligned address); bit-identical re-runs.
//
// Bench: CUDA events around back-to-back calls (buffers rotated so that
// the working set is well past the L2), model bytes (each input read once,
// each output written once), against a cudaMemcpyAsync device-to-device
// copy of the same byte count timed the same way. Non-zero exit on any
// failed check. --bench-main: docs/bench.md's shapes only; --quick: the
// small checks only (for compute-sanitizer);
// --profile: one call of each at 8192x4096 bf16 (for ncu).
//
//===----------------------------------------------------------------------===//

#include "te_kernels/ops.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                  \
                   cudaGetErrorString(e_));                                    \
      std::exit(2);                                                            \
    }                                                                          \
  } while (0)
#define KK(call)                                                               \
  do {                                                                         \
    const char *m_ = (call);                                                   \
    if (m_) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, m_);             \
      std::exit(2);                                                            \
    }                                                                          \
  } while (0)

int failures = 0;
cudaStream_t stream;
te_kernels_state *st;

int sizeOf(int dt) { return dt == 0 ? 4 : 2; }
const char *dtName(int dt) { return dt == 0 ? "f32" : dt == 1 ? "bf16" : "f16"; }

float bf16ToF(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t fToBf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
float toF(int dt, const std::vector<uint8_t> &b, int64_t i) {
  if (dt == 0) {
    float f;
    std::memcpy(&f, b.data() + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, b.data() + 2 * i, 2);
  return dt == 1 ? bf16ToF(h) : __half2float(__ushort_as_half(h));
}
void fromF(int dt, std::vector<uint8_t> &b, int64_t i, float v) {
  if (dt == 0) {
    std::memcpy(b.data() + 4 * i, &v, 4);
    return;
  }
  uint16_t h = dt == 1 ? fToBf16(v) : __half_as_ushort(__float2half_rn(v));
  std::memcpy(b.data() + 2 * i, &h, 2);
}

/// Host tensor of n elements of dt, uniform in [lo, hi] (rounded to dt).
std::vector<uint8_t> randomT(std::mt19937 &rng, int dt, int64_t n, float lo,
                             float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<uint8_t> b(size_t(n) * sizeOf(dt));
  for (int64_t i = 0; i < n; ++i)
    fromF(dt, b, i, d(rng));
  return b;
}

/// The checks' device memory: one allocation, carved by a bump pointer
/// and reset per case (no cudaMalloc/cudaFree per buffer).
struct Pool {
  char *base = nullptr;
  size_t size = 0, used = 0;
  void *take(size_t n) {
    if (!base) {
      size = size_t(3) << 30;
      CK(cudaMalloc(&base, size));
    }
    n = (n + 64 + 255) / 256 * 256;
    if (used + n > size) {
      std::fprintf(stderr, "check pool exhausted\n");
      std::exit(2);
    }
    void *p = base + used;
    used += n;
    return p;
  }
} pool;
bool usePool = false;

/// Device allocation with `shift` bytes of offset (misalignment), from the
/// pool while usePool.
struct Dev {
  void *base = nullptr;
  size_t bytes = 0, shift = 0;
  bool pooled = false;
  Dev() = default;
  Dev(size_t n, size_t sh = 0) : bytes(n), shift(sh), pooled(usePool) {
    if (pooled)
      base = pool.take(n);
    else
      CK(cudaMalloc(&base, n + 64));
    CK(cudaMemsetAsync(base, 0x5a, n + 64, stream));
  }
  void *p() const { return static_cast<char *>(base) + shift; }
  void up(const std::vector<uint8_t> &h) {
    CK(cudaMemcpyAsync(p(), h.data(), h.size(), cudaMemcpyHostToDevice,
                       stream));
    CK(cudaStreamSynchronize(stream));
  }
  std::vector<uint8_t> down(size_t n) const {
    std::vector<uint8_t> h(n);
    CK(cudaStreamSynchronize(stream));
    CK(cudaMemcpy(h.data(), p(), n, cudaMemcpyDeviceToHost));
    return h;
  }
  void release() {
    if (base && !pooled)
      CK(cudaFree(base));
    base = nullptr;
  }
};

/// p[i] = lo + (hi - lo) * u(i), u a hash of (seed, i) in [0, 1), rounded
/// to the element type (bench inputs, made on the device).
template <typename T>
__global__ void fillKernel(T *p, int64_t n, uint32_t seed, float lo,
                           float hi) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 0x9e3779b9u ^ uint32_t(i >> 32) ^ seed;
    h ^= h >> 16, h *= 0x85ebca6bu, h ^= h >> 13, h *= 0xc2b2ae35u,
        h ^= h >> 16;
    float v = lo + (hi - lo) * float(h >> 8) * (1.0f / 16777216.0f);
    if constexpr (sizeof(T) == 4)
      p[i] = v;
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
      p[i] = __float2bfloat16_rn(v);
    else
      p[i] = __float2half_rn(v);
  }
}
void fill(int dt, void *p, int64_t n, uint32_t seed, float lo, float hi) {
  if (dt == 0)
    fillKernel<<<1024, 256, 0, stream>>>((float *)p, n, seed, lo, hi);
  else if (dt == 1)
    fillKernel<<<1024, 256, 0, stream>>>((__nv_bfloat16 *)p, n, seed, lo, hi);
  else
    fillKernel<<<1024, 256, 0, stream>>>((__half *)p, n, seed, lo, hi);
  CK(cudaGetLastError());
}

// Host reference: lib/Runtime/cpu/Reference.cpp's formulas in fp32.
void refFwd(bool ln, const float *x, const float *g, const float *b, float eps,
            bool zc, int64_t rows, int64_t cols, float *z, float *mu,
            float *rs) {
  const float rn = 1.0f / float(cols);
  for (int64_t i = 0; i < rows; ++i) {
    const float *xr = x + i * cols;
    float mean = 0.0f;
    if (ln) {
      for (int64_t j = 0; j < cols; ++j)
        mean += xr[j];
      mean *= rn;
    }
    float m2 = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      float c = xr[j] - mean;
      m2 += c * c;
    }
    float r = 1.0f / std::sqrt(m2 * rn + eps);
    for (int64_t j = 0; j < cols; ++j) {
      float y = (xr[j] - mean) * r;
      float v = (zc ? g[j] + 1.0f : g[j]) * y;
      if (ln && b)
        v += b[j];
      z[i * cols + j] = v;
    }
    if (ln)
      mu[i] = mean;
    rs[i] = r;
  }
}
void refBwd(bool ln, const float *dz, const float *x, const float *mu,
            const float *rsg, const float *g, bool zc, int64_t rows,
            int64_t cols, float *dx, float *dg, float *db) {
  const float rn = 1.0f / float(cols);
  std::vector<double> sg(cols, 0.0), sb(cols, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    const float *xr = x + i * cols, *dzr = dz + i * cols;
    float mean = ln ? mu[i] : 0.0f, r = rsg[i];
    float m1 = 0.0f, m2 = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      float y = (xr[j] - mean) * r;
      float gg = (zc ? g[j] + 1.0f : g[j]) * dzr[j];
      m1 += gg;
      m2 += gg * y;
      sg[j] += double(dzr[j]) * y;
      sb[j] += dzr[j];
    }
    m1 *= rn;
    m2 *= rn;
    if (!ln)
      m1 = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      float y = (xr[j] - mean) * r;
      float gg = (zc ? g[j] + 1.0f : g[j]) * dzr[j];
      dx[i * cols + j] = r * (gg - (m2 * y + m1));
    }
  }
  for (int64_t j = 0; j < cols; ++j) {
    dg[j] = float(sg[j]);
    if (db)
      db[j] = float(sb[j]);
  }
}

/// |got - ref| <= tol * (|ref| + max|ref|) elementwise (CudaAbiTest's rule).
void compare(const std::string &what, int dt, const std::vector<uint8_t> &got,
             const std::vector<float> &ref, double tol) {
  int64_t n = int64_t(ref.size());
  double maxRef = 0, maxErr = 0;
  for (int64_t i = 0; i < n; ++i)
    maxRef = std::max(maxRef, std::fabs(double(ref[i])));
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < n; ++i) {
    double g = toF(dt, got, i), c = ref[i], err = std::fabs(g - c);
    if (!(err <= tol * (std::fabs(c) + maxRef)) && !bad++)
      first = i;
    if (err > maxErr || err != err)
      maxErr = err;
  }
  if (bad) {
    ++failures;
    std::printf("FAIL %-44s %s: %lld of %lld off (first %lld: got %g ref %g), "
                "max err %.3g, max|ref| %.3g\n",
                what.c_str(), dtName(dt), (long long)bad, (long long)n,
                (long long)first, toF(dt, got, first), ref[first], maxErr,
                maxRef);
  }
}

double ulpTol(int dt, double f32) {
  return dt == 0 ? f32 : dt == 1 ? 1.0 / 128 : 1.0 / 1024;
}

/// One fwd + bwd on the device against the host reference.
/// shift: byte offset of x/z/dz/dx (a multiple of the element size).
void checkCase(std::mt19937 &rng, int dt, bool ln, bool zc, bool beta,
               int64_t rows, int64_t cols, size_t shift) {
  int64_t n = rows * cols;
  size_t es = sizeOf(dt);
  CK(cudaStreamSynchronize(stream));
  pool.used = 0;
  auto hx = randomT(rng, dt, n, -3, 5), hg = randomT(rng, dt, cols, -1, 1),
       hb = randomT(rng, dt, cols, -2, 2), hdz = randomT(rng, dt, n, -2, 2);
  std::vector<float> fx(n), fg(cols), fb(cols), fdz(n);
  for (int64_t i = 0; i < n; ++i)
    fx[i] = toF(dt, hx, i), fdz[i] = toF(dt, hdz, i);
  for (int64_t j = 0; j < cols; ++j)
    fg[j] = toF(dt, hg, j), fb[j] = toF(dt, hb, j);
  std::vector<float> rz(n), rmu(rows), rrs(rows), rdx(n), rdg(cols), rdb(cols);
  refFwd(ln, fx.data(), fg.data(), ln && beta ? fb.data() : nullptr, 1e-5f, zc,
         rows, cols, rz.data(), rmu.data(), rrs.data());
  refBwd(ln, fdz.data(), fx.data(), rmu.data(), rrs.data(), fg.data(), zc, rows,
         cols, rdx.data(), rdg.data(), ln ? rdb.data() : nullptr);

  Dev x(n * es, shift), g(cols * es), b(cols * es), z(n * es, shift),
      mu(rows * 4), rs(rows * 4), dz(n * es, shift), dx(n * es, shift),
      dg(cols * es), db(cols * es);
  x.up(hx), g.up(hg), b.up(hb), dz.up(hdz);
  KK(te_kernels_norm_fwd(st, !ln, dt, x.p(), g.p(), ln && beta ? b.p() : nullptr,
                         1e-5f, zc, rows, cols, z.p(),
                         ln ? (float *)mu.p() : nullptr, (float *)rs.p()));
  CK(cudaStreamSynchronize(stream));
  char tag[160];
  std::snprintf(tag, sizeof tag, "%s%s%s %lldx%lld shift%zu",
                ln ? "layernorm" : "rmsnorm", zc ? "+1" : "",
                ln && !beta ? "(no beta)" : "", (long long)rows,
                (long long)cols, shift);
  std::string t = tag;
  compare(t + " z", dt, z.down(n * es), rz, ulpTol(dt, 2e-5));
  if (ln)
    compare(t + " mu", 0, mu.down(rows * 4), rmu, 1e-5);
  compare(t + " rsigma", 0, rs.down(rows * 4), rrs, 1e-5);
  // Backward from the host statistics (the same on both sides).
  std::vector<uint8_t> hmu(rows * 4), hrs(rows * 4);
  std::memcpy(hmu.data(), rmu.data(), rows * 4);
  std::memcpy(hrs.data(), rrs.data(), rows * 4);
  mu.up(hmu), rs.up(hrs);
  KK(te_kernels_norm_bwd(st, !ln, dt, dz.p(), x.p(),
                         ln ? (const float *)mu.p() : nullptr,
                         (const float *)rs.p(), g.p(), zc, rows, cols, dx.p(),
                         dg.p(), ln && beta ? db.p() : nullptr));
  CK(cudaStreamSynchronize(stream));
  compare(t + " dx", dt, dx.down(n * es), rdx, ulpTol(dt, 1e-4));
  compare(t + " dgamma", dt, dg.down(cols * es), rdg, ulpTol(dt, 1e-4));
  if (ln && beta)
    compare(t + " dbeta", dt, db.down(cols * es), rdb, ulpTol(dt, 1e-4));
  for (Dev *d : {&x, &g, &b, &z, &mu, &rs, &dz, &dx, &dg, &db})
    d->release();
}

/// Fast path (aligned) against the generic path (the same data at an
/// address off by one element) at a large shape, and bitwise re-runs.
void checkFastVsGeneric(std::mt19937 &rng, int dt, bool ln, int64_t rows,
                        int64_t cols) {
  int64_t n = rows * cols;
  size_t es = sizeOf(dt), bytes = n * es;
  CK(cudaStreamSynchronize(stream));
  pool.used = 0;
  uint32_t seed = uint32_t(rng());
  Dev g(cols * es), b(cols * es);
  fill(dt, g.p(), cols, seed + 1, -1, 1), fill(dt, b.p(), cols, seed + 2, -2, 2);
  std::vector<uint8_t> out[2][6]; // z mu rs dx dg db
  for (int path = 0; path < 2; ++path) {
    size_t sh = path ? es : 0;
    Dev x(bytes, sh), z(bytes, sh), dz(bytes, sh), dx(bytes, sh),
        mu(rows * 4), rs(rows * 4), dg(cols * es), db(cols * es);
    fill(dt, x.p(), n, seed + 3, -3, 5), fill(dt, dz.p(), n, seed + 4, -2, 2);
    for (int rep = 0; rep < 2; ++rep) {
      KK(te_kernels_norm_fwd(st, !ln, dt, x.p(), g.p(), ln ? b.p() : nullptr,
                             1e-5f, 0, rows, cols, z.p(),
                             ln ? (float *)mu.p() : nullptr, (float *)rs.p()));
      KK(te_kernels_norm_bwd(st, !ln, dt, dz.p(), x.p(),
                             ln ? (const float *)mu.p() : nullptr,
                             (const float *)rs.p(), g.p(), 0, rows, cols,
                             dx.p(), dg.p(), ln ? db.p() : nullptr));
      CK(cudaStreamSynchronize(stream));
      std::vector<uint8_t> o[6] = {z.down(bytes),      mu.down(rows * 4),
                                   rs.down(rows * 4),  dx.down(bytes),
                                   dg.down(cols * es), db.down(cols * es)};
      if (rep == 0) {
        for (int k = 0; k < 6; ++k)
          out[path][k] = std::move(o[k]);
      } else {
        for (int k = 0; k < 6; ++k)
          if (o[k] != out[path][k]) {
            ++failures;
            std::printf("FAIL %s %s %lldx%lld path %d output %d: re-run not "
                        "bit-identical\n",
                        ln ? "layernorm" : "rmsnorm", dtName(dt),
                        (long long)rows, (long long)cols, path, k);
          }
      }
    }
    for (Dev *d : {&x, &z, &dz, &dx, &mu, &rs, &dg, &db})
      d->release();
  }
  g.release(), b.release();
  // Fast vs generic: outputs as floats within the tolerances.
  const char *names[6] = {"z", "mu", "rsigma", "dx", "dgamma", "dbeta"};
  int dts[6] = {dt, 0, 0, dt, dt, dt};
  double tols[6] = {ulpTol(dt, 2e-5), 1e-5, 1e-5,
                    ulpTol(dt, 1e-4), ulpTol(dt, 1e-4), ulpTol(dt, 1e-4)};
  int64_t bitsSame[6] = {}, counts[6] = {};
  for (int k = 0; k < 6; ++k) {
    if ((k == 1 || k == 5) && !ln)
      continue;
    int64_t cnt = int64_t(out[1][k].size()) / sizeOf(dts[k]);
    std::vector<float> ref(cnt);
    for (int64_t i = 0; i < cnt; ++i) {
      ref[i] = toF(dts[k], out[1][k], i);
      bitsSame[k] += toF(dts[k], out[0][k], i) == ref[i];
    }
    counts[k] = cnt;
    char tag[128];
    std::snprintf(tag, sizeof tag, "fast-vs-generic %s %lldx%lld %s",
                  ln ? "layernorm" : "rmsnorm", (long long)rows,
                  (long long)cols, names[k]);
    compare(tag, dts[k], out[0][k], ref, tols[k]);
  }
  std::printf("  fast vs generic %s %s %lldx%lld: equal values z %.4f dx "
              "%.4f dgamma %.4f rsigma %.4f\n",
              ln ? "layernorm" : "rmsnorm", dtName(dt), (long long)rows,
              (long long)cols, double(bitsSame[0]) / counts[0],
              double(bitsSame[3]) / counts[3], double(bitsSame[4]) / counts[4],
              double(bitsSame[2]) / counts[2]);
}

void runChecks(bool quick) {
  std::mt19937 rng(1234);
  usePool = true;
  if (quick) { // under compute-sanitizer: fewer cases
    for (int dt : {0, 1})
      for (int64_t cols : {4096, 1024, 768, 4104, 33, 16384, 20000})
        for (bool ln : {true, false})
          checkCase(rng, dt, ln, dt == 1, true, cols > 8192 ? 2 : 19, cols, 0);
    checkCase(rng, 1, true, false, false, 300, 1024, 0);
    checkCase(rng, 1, true, false, true, 19, 4096, 2);
    usePool = false;
    std::printf("checks done: %d failure(s)\n", failures);
    return;
  }
  struct S {
    int64_t rows, cols;
  } shapes[] = {{1, 4096}, {3, 4096},  {37, 1024}, {5, 768},   {7, 4104},
                {9, 33},   {5, 7},     {300, 4096}, {2, 8192}, {3, 16384},
                {2, 20000}, {64, 2048}, {1, 8},     {33, 64},  {17, 512},
                {2, 12288}, {3, 8200}};
  for (int dt : {0, 1, 2})
    for (S s : shapes)
      for (bool ln : {true, false})
        for (bool zc : {false, true}) {
          checkCase(rng, dt, ln, zc, true, s.rows, s.cols, 0);
          if (ln && !zc && s.cols % 8 == 0)
            checkCase(rng, dt, ln, zc, false, s.rows, s.cols, 0);
        }
  // Misaligned row tensors: the generic path at fast-path widths.
  for (int dt : {0, 1, 2})
    for (bool ln : {true, false})
      checkCase(rng, dt, ln, false, true, 19, 4096, sizeOf(dt));
  // Many rows (several rows per CTA, partial sums over many CTAs).
  for (int dt : {0, 1})
    for (bool ln : {true, false})
      checkCase(rng, dt, ln, true, true, 8192, 1024, 0);
  checkCase(rng, 1, true, false, true, 2048, 4096, 0);
  std::printf("host-reference checks done: %d failure(s)\n", failures);
  for (bool ln : {true, false}) {
    checkFastVsGeneric(rng, 1, ln, 8192, 4096);
    checkFastVsGeneric(rng, 1, ln, 4096, 1024);
  }
  checkFastVsGeneric(rng, 0, true, 4096, 4096);
  checkFastVsGeneric(rng, 2, true, 4096, 4096);
  checkFastVsGeneric(rng, 1, true, 1024, 12288); // 16-bit rows of 32 columns
  usePool = false;
  std::printf("checks done: %d failure(s)\n", failures);
}

//===----------------------------------------------------------------------===//
// Bench
//===----------------------------------------------------------------------===//

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Median over 5 repetitions of the mean time (us) of iters calls of
/// fn(i), i rotating over the buffer sets.
template <typename Fn> double timeIt(int sets, int iters, Fn fn) {
  for (int i = 0; i < std::max(sets, 3); ++i)
    fn(i % sets);
  CK(cudaStreamSynchronize(stream));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<double> reps;
  for (int r = 0; r < 5; ++r) {
    CK(cudaEventRecord(a, stream));
    for (int i = 0; i < iters; ++i)
      fn(i % sets);
    CK(cudaEventRecord(b, stream));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    reps.push_back(1e3 * ms / iters);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return median(reps);
}

/// Copy time (us) of bytes/2 bytes (bytes moved: read + write), rotated
/// like the kernel's buffers.
double copyTime(size_t bytes, int sets, int iters) {
  size_t half = bytes / 2;
  std::vector<Dev> src, dst;
  for (int i = 0; i < sets; ++i)
    src.emplace_back(half), dst.emplace_back(half);
  double t = timeIt(sets, iters, [&](int i) {
    CK(cudaMemcpyAsync(dst[i].p(), src[i].p(), half, cudaMemcpyDeviceToDevice,
                       stream));
  });
  for (auto &d : src)
    d.release();
  for (auto &d : dst)
    d.release();
  return t;
}

void benchCase(int dt, bool ln, int64_t rows, int64_t cols) {
  size_t es = sizeOf(dt), tb = size_t(rows * cols) * es;
  // Rotate buffer sets so that one pass over them is >= 512 MiB.
  size_t perSet = 4 * tb;
  int sets = int(std::min<size_t>(64, std::max<size_t>(
                                          1, ((512u << 20) + perSet - 1) /
                                                 perSet)));
  Dev g(cols * es), b(cols * es), dg(cols * es), db(cols * es);
  fill(dt, g.p(), cols, 1, -1, 1), fill(dt, b.p(), cols, 2, -2, 2);
  std::vector<Dev> x, z, dz, dx, mu, rs;
  for (int i = 0; i < sets; ++i) {
    x.emplace_back(tb), z.emplace_back(tb), dz.emplace_back(tb),
        dx.emplace_back(tb), mu.emplace_back(rows * 4),
        rs.emplace_back(rows * 4);
    fill(dt, x.back().p(), rows * cols, 3 + 2 * i, -3, 5);
    fill(dt, dz.back().p(), rows * cols, 4 + 2 * i, -2, 2);
  }
  double est = double(tb) * 3 / 3.0e12 * 1e6; // us at ~3 TB/s
  int iters = int(std::clamp(20000.0 / std::max(est, 1.0), 20.0, 2000.0));
  auto fwd = [&](int i) {
    KK(te_kernels_norm_fwd(st, !ln, dt, x[i].p(), g.p(), ln ? b.p() : nullptr,
                           1e-5f, 0, rows, cols, z[i].p(),
                           ln ? (float *)mu[i].p() : nullptr,
                           (float *)rs[i].p()));
  };
  auto bwd = [&](int i) {
    KK(te_kernels_norm_bwd(st, !ln, dt, dz[i].p(), x[i].p(),
                           ln ? (const float *)mu[i].p() : nullptr,
                           (const float *)rs[i].p(), g.p(), 0, rows, cols,
                           dx[i].p(), dg.p(), ln ? db.p() : nullptr));
  };
  for (int i = 0; i < sets; ++i)
    fwd(i); // statistics for bwd
  double tf = timeIt(sets, iters, fwd), tbw = timeIt(sets, iters, bwd);
  int nstat = ln ? 2 : 1, nparam = ln ? 2 : 1;
  size_t bf = 2 * tb + nparam * cols * es + nstat * rows * 4;
  size_t bb = 3 * tb + nstat * rows * 4 + cols * es + nparam * cols * es;
  double cf = copyTime(bf, sets, iters), cb = copyTime(bb, sets, iters);
  for (int dir = 0; dir < 2; ++dir) {
    double t = dir ? tbw : tf, c = dir ? cb : cf;
    size_t by = dir ? bb : bf;
    std::printf("BENCH %-9s %-3s %-4s %6lldx%-6lld %8.2f us %6.3f TB/s | copy "
                "%8.2f us %6.3f TB/s | %5.1f%% of copy (sets %d, iters %d)\n",
                ln ? "layernorm" : "rmsnorm", dir ? "bwd" : "fwd", dtName(dt),
                (long long)rows, (long long)cols, t, by / t * 1e-6, c,
                by / c * 1e-6, 100.0 * c / t, sets, iters);
  }
  std::fflush(stdout);
  for (auto *v : {&x, &z, &dz, &dx, &mu, &rs})
    for (auto &d : *v)
      d.release();
  for (Dev *d : {&g, &b, &dg, &db})
    d->release();
}

void runBench(bool mainOnly) {
  if (mainOnly) { // docs/bench.md's shapes
    for (int64_t r : {8192, 4096, 16})
      for (bool ln : {true, false})
        benchCase(1, ln, r, r == 4096 ? 1024 : 4096);
    benchCase(0, true, 8192, 4096);
    return;
  }
  {
    size_t big = size_t(1) << 30;
    double t = copyTime(2 * big, 1, 50);
    std::printf("BENCH copy 1 GiB D2D: %.2f us, %.3f TB/s (read + write)\n", t,
                2.0 * big / t * 1e-6);
  }
  struct S {
    int64_t rows, cols;
  } shapes[] = {{8192, 4096}, {32768, 4096}, {4096, 1024}, {16, 4096},
                {8192, 8192}, {8192, 2048},  {8192, 768},  {8192, 4104}};
  for (S s : shapes)
    for (bool ln : {true, false})
      benchCase(1, ln, s.rows, s.cols);
  benchCase(0, true, 8192, 4096);
  benchCase(2, true, 8192, 4096);
}

} // namespace

/// One fwd and one bwd of LayerNorm and RMSNorm at 8192x4096 bf16 (for a
/// profiler).
void runProfile() {
  int64_t rows = 8192, cols = 4096, n = rows * cols;
  std::mt19937 rng(7);
  Dev x(n * 2), z(n * 2), dz(n * 2), dx(n * 2), g(cols * 2), b(cols * 2),
      mu(rows * 4), rs(rows * 4), dg(cols * 2), db(cols * 2);
  x.up(randomT(rng, 1, n, -3, 5)), dz.up(randomT(rng, 1, n, -2, 2));
  g.up(randomT(rng, 1, cols, -1, 1)), b.up(randomT(rng, 1, cols, -2, 2));
  for (bool ln : {true, false}) {
    KK(te_kernels_norm_fwd(st, !ln, 1, x.p(), g.p(), ln ? b.p() : nullptr,
                           1e-5f, 0, rows, cols, z.p(),
                           ln ? (float *)mu.p() : nullptr, (float *)rs.p()));
    KK(te_kernels_norm_bwd(st, !ln, 1, dz.p(), x.p(),
                           ln ? (const float *)mu.p() : nullptr,
                           (const float *)rs.p(), g.p(), 0, rows, cols, dx.p(),
                           dg.p(), ln ? db.p() : nullptr));
  }
  CK(cudaStreamSynchronize(stream));
}

int main(int argc, char **argv) {
  bool check = true, bench = true, quick = false, profile = false,
       mainOnly = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--check-only"))
      bench = false;
    else if (!std::strcmp(argv[i], "--bench-only"))
      check = false;
    else if (!std::strcmp(argv[i], "--bench-main"))
      check = false, mainOnly = true;
    else if (!std::strcmp(argv[i], "--quick"))
      quick = true, bench = false;
    else if (!std::strcmp(argv[i], "--profile"))
      profile = true, check = bench = false;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MiB\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20);
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  KK(te_kernels_state_create(stream, &st));
  if (check)
    runChecks(quick);
  if (bench)
    runBench(mainOnly);
  if (profile)
    runProfile();
  te_kernels_state_destroy(st);
  CK(cudaStreamDestroy(stream));
  std::printf("norm-bench: %s\n", failures ? "FAILED" : "PASSED");
  return failures ? 1 : 0;
}
