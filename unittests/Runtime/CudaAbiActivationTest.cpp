//===- CudaAbiActivationTest.cpp - cuda vs cpu: activations -----*- C++ -*-===//
//
// The cuda backend against the cpu backend (split from CudaAbiTest.cpp by
// family; the fixture is CudaAbiFixture.h): activations, producer amaxes and the fused casts.
//
//===----------------------------------------------------------------------===//

#include "CudaAbiFixture.h"

using namespace te::test;

namespace {

const char *const kActs[] = {
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams) #name,
#include "te/Runtime/TEActivations.def"
};

TEST_P(CudaAbi, Activations) {
  int32_t t = GetParam();
  const int64_t rows = 33, cols = 258, n = rows * cols;
  const float limit = 1.5f, alpha = 1.702f, offset = 1.0f;
  for (int32_t act = TE_RT_ACT_GELU; act < TE_RT_ACT_COUNT; ++act) {
    bool gated = te::cpu::isGated(static_cast<te::cpu::Activation>(act));
    bool exact = act == TE_RT_ACT_RELU;
    int64_t yn = gated ? n / 2 : n;
    Pair &x = random(t, n, -4, 4), &dy = random(t, yn);
    Pair &y = output(yn * sizeOf(t)), &dx = output(n * sizeOf(t));
    BOTH(te_rt_act_fwd(cpu, act, t, x.host.data(), y.host.data(), rows, cols,
                       limit, alpha, offset, nullptr),
         te_rt_act_fwd(gpu, act, t, x.dev, y.dev, rows, cols, limit, alpha,
                       offset, nullptr));
    BOTH(te_rt_act_bwd(cpu, act, t, dy.host.data(), x.host.data(),
                       dx.host.data(), rows, cols, limit, alpha, offset,
                       nullptr),
         te_rt_act_bwd(gpu, act, t, dy.dev, x.dev, dx.dev, rows, cols, limit,
                       alpha, offset, nullptr));
    std::string name = kActs[act];
    expectClose((name + " fwd").c_str(), t, y, exact ? -1 : ulpTol(t, 1e-5));
    expectClose((name + " bwd").c_str(), t, dx, exact ? -1 : ulpTol(t, 1e-5));
    if (gated)
      continue;
    Pair &dx2 = output(n * sizeOf(t)), &db = output(cols * sizeOf(t));
    BOTH(te_rt_dbias_dact(cpu, act, t, dy.host.data(), x.host.data(),
                          dx2.host.data(), db.host.data(), rows, cols, limit,
                          alpha, offset, nullptr),
         te_rt_dbias_dact(gpu, act, t, dy.dev, x.dev, dx2.dev, db.dev, rows,
                          cols, limit, alpha, offset, nullptr));
    expectClose((name + " dbias_dact dx").c_str(), t, dx2,
                exact ? -1 : ulpTol(t, 1e-5));
    expectClose((name + " dbias_dact dbias").c_str(), t, db, ulpTol(t, 1e-4));
  }
}

// In place (the memory plan writes te.dact / te.dbias_dact over an operand
// that dies there: MemoryPlan.h): te_rt_act_bwd and te_rt_dbias_dact with
// dx the buffer of x, or of dy for a non-gated activation, give on cuda the
// bytes they give out of place, dbias too. Whole 16-byte vectors (192x1024:
// the vectorized kernels) and ragged misaligned rows (33x258: the
// element-wise ones, dbias_dact's column sums before its element-wise pass).
TEST_P(CudaAbi, ActivationBackwardInPlace) {
  int32_t t = GetParam();
  const float limit = 1.5f, alpha = 1.702f, offset = 1.0f;
  auto copyOf = [&](const Pair &p) -> Pair & {
    Pair &c = make(p.bytes());
    c.host = p.host;
    upload(c);
    return c;
  };
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{192, 1024}, {33, 258}}) {
    const int64_t n = rows * cols;
    for (int32_t act = TE_RT_ACT_GELU; act < TE_RT_ACT_COUNT; ++act) {
      const bool gated =
          te::cpu::isGated(static_cast<te::cpu::Activation>(act));
      Pair &x = random(t, n, -4, 4), &dy = random(t, gated ? n / 2 : n);
      for (int fused = 0; fused < (gated ? 1 : 2); ++fused) {
        auto run = [&](const void *g, const void *in, void *out, void *db) {
          return fused ? te_rt_dbias_dact(gpu, act, t, g, in, out, db, rows,
                                          cols, limit, alpha, offset, nullptr)
                       : te_rt_act_bwd(gpu, act, t, g, in, out, rows, cols,
                                       limit, alpha, offset, nullptr);
        };
        Pair &dx = output(n * sizeOf(t)), &db = output(cols * sizeOf(t));
        ASSERT_EQ(run(dy.dev, x.dev, dx.dev, db.dev), 0) << te_rt_last_error();
        std::vector<uint8_t> wantDx = download(dx), wantDb = download(db);
        for (int over = 0; over < (gated ? 1 : 2); ++over) { // x, then dy
          Pair &xx = copyOf(x), &gg = copyOf(dy);
          Pair &db2 = output(cols * sizeOf(t));
          void *out = over ? gg.dev : xx.dev;
          ASSERT_EQ(run(gg.dev, xx.dev, out, db2.dev), 0)
              << te_rt_last_error();
          std::string what = std::string(kActs[act]) + " " +
                             std::to_string(rows) + "x" +
                             std::to_string(cols) +
                             (fused ? " dbias_dact" : " act_bwd") +
                             (over ? " over dy" : " over x");
          EXPECT_TRUE(download(over ? gg : xx) == wantDx) << what << ": dx";
          if (fused) {
            EXPECT_TRUE(download(db2) == wantDb) << what << ": dbias";
          }
        }
      }
    }
  }
}

// te_rt_dbias_dact's vectorized kernel in both widths against the cpu
// backend: a column a thread where few rows of few columns would leave a
// block or two of 16-byte threads (16 x 1024, 16 x 16384, 192 x 1024: three
// chunks of rows), 16 bytes a thread above that (512 x 8192, 8192 threads
// of 16 bytes; 1024 x 2048, 16 chunks). With and without the amax; dx, dbias
// and the amax within the tolerances of the other activation tests.
TEST_P(CudaAbi, DbiasDactBothWidths) {
  int32_t t = GetParam();
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{16, 1024},
                            {16, 16384},
                            {192, 1024},
                            {512, 8192},
                            {1024, 2048}}) {
    const int64_t n = rows * cols;
    std::string name =
        "gelu dbias_dact " + std::to_string(rows) + "x" + std::to_string(cols);
    Pair &x = random(t, n, -4, 4), &dy = random(t, n);
    for (int withAmax = 0; withAmax < 2; ++withAmax) {
      Pair &dx = output(n * sizeOf(t)), &db = output(cols * sizeOf(t));
      Pair &am = output(4);
      BOTH(te_rt_dbias_dact(cpu, TE_RT_ACT_GELU, t, dy.host.data(),
                            x.host.data(), dx.host.data(), db.host.data(),
                            rows, cols, 0, 0, 0,
                            withAmax ? am.h<float>() : nullptr),
           te_rt_dbias_dact(gpu, TE_RT_ACT_GELU, t, dy.dev, x.dev, dx.dev,
                            db.dev, rows, cols, 0, 0, 0,
                            withAmax ? static_cast<float *>(am.dev) : nullptr));
      expectClose((name + " dx").c_str(), t, dx, ulpTol(t, 1e-5));
      expectClose((name + " dbias").c_str(), t, db, ulpTol(t, 1e-4));
      if (withAmax) {
        float gpuAmax = toFloat(TE_RT_DTYPE_F32, download(am).data(), 0);
        float cpuAmax = am.h<float>()[0];
        EXPECT_NEAR(gpuAmax, cpuAmax, 2 * ulpTol(t, 1e-5) * cpuAmax)
            << name << " amax";
      }
    }
  }
}

/// max |value| over a buffer of `dtype` values, NaN skipped.
float storedMax(int32_t dtype, const std::vector<uint8_t> &bytes, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    float v = toFloat(dtype, bytes.data(), i);
    if (!std::isnan(v))
      m = std::max(m, std::fabs(v));
  }
  return m;
}

// The producers' amax (te_rt_act_fwd / te_rt_act_bwd / te_rt_dbias_dact),
// on the vectorized kernels (aligned rows of whole 16-byte vectors; the
// fused dbias + dact kernel with threads past the last column) and the
// element-wise ones (ragged rows): the outputs are the bytes of the same
// call without an amax, the amax is max |output| as stored, and the cpu's
// where the outputs are exact (relu: the same bits), within the outputs'
// tolerance elsewhere. Then the current-scaling fusion: the cuda
// quantization of the cuda output with its amax as amax_in gives the bytes
// and scale_inv of the unfused cuda quantization and of the cpu one (on
// the same input and amax_in).
TEST_P(CudaAbi, ProducerAmaxAndFusedQuantize) {
  int32_t t = GetParam();
  const float limit = 1.5f, alpha = 1.702f, offset = 1.0f;
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{33, 258}, {192, 1024}}) {
    const int64_t n = rows * cols;
    for (int32_t act = TE_RT_ACT_GELU; act < TE_RT_ACT_COUNT; ++act) {
      bool gated = te::cpu::isGated(static_cast<te::cpu::Activation>(act));
      bool exact = act == TE_RT_ACT_RELU;
      int64_t yn = gated ? n / 2 : n;
      std::string name = std::string(kActs[act]) + " " + std::to_string(rows) +
                         "x" + std::to_string(cols);
      Pair &x = random(t, n, -4, 4), &dy = random(t, yn);
      // One producer: with an amax on both backends, without on cuda; the
      // cuda output and amax are kept in *keep, *keepAmax when given.
      auto check = [&](const std::string &what, int64_t outN, auto call,
                       std::vector<uint8_t> *keep = nullptr,
                       float *keepAmax = nullptr) {
        Pair &o = output(outN * sizeOf(t)), &o0 = output(outN * sizeOf(t));
        Pair &am = output(4);
        BOTH(call(cpu, o.host.data(), am.h<float>()),
             call(gpu, o.dev, static_cast<float *>(am.dev)));
        ASSERT_EQ(call(gpu, o0.dev, nullptr), 0) << te_rt_last_error();
        std::vector<uint8_t> got = download(o), got0 = download(o0),
                             gotAm = download(am);
        float gpuAmax;
        std::memcpy(&gpuAmax, gotAm.data(), 4);
        EXPECT_EQ(got, got0) << what << ": the amax changed the output";
        EXPECT_EQ(gpuAmax, storedMax(t, got, outN))
            << what << ": cuda amax is not max |output|";
        if (exact) {
          expectBytes(what + " output", o);
          expectBytes(what + " amax", am);
        } else {
          float cpuAmax = am.h<float>()[0];
          EXPECT_NEAR(gpuAmax, cpuAmax, 2 * ulpTol(t, 1e-5) * cpuAmax)
              << what << " amax";
        }
        std::printf("  %-52s %-4s amax=%g (cpu %g)\n", what.c_str(),
                    dtypeName(t), gpuAmax, am.h<float>()[0]);
        if (keep)
          *keep = got, *keepAmax = gpuAmax;
      };
      std::vector<uint8_t> y;
      float yAmax = 0;
      check(
          name + " fwd", yn,
          [&](te_rt_context *c, void *out, float *amax) {
            bool g = c == gpu;
            return te_rt_act_fwd(c, act, t, g ? x.dev : x.host.data(), out,
                                 rows, cols, limit, alpha, offset, amax);
          },
          &y, &yAmax);
      check(name + " bwd", n, [&](te_rt_context *c, void *out, float *amax) {
        bool g = c == gpu;
        return te_rt_act_bwd(c, act, t, g ? dy.dev : dy.host.data(),
                             g ? x.dev : x.host.data(), out, rows, cols, limit,
                             alpha, offset, amax);
      });
      if (!gated) {
        Pair &db = output(cols * sizeOf(t));
        check(name + " dbias_dact", n,
              [&](te_rt_context *c, void *out, float *amax) {
                bool g = c == gpu;
                return te_rt_dbias_dact(c, act, t, g ? dy.dev : dy.host.data(),
                                        g ? x.dev : x.host.data(), out,
                                        g ? db.dev : db.host.data(), rows, cols,
                                        limit, alpha, offset, amax);
              });
      }
      // The fusion, on the cuda output y and its amax.
      if (HasFatalFailure())
        return;
      Pair &in = make(yn * sizeOf(t)), &given = scalar(yAmax);
      std::copy(y.begin(), y.end(), in.host.begin());
      upload(in);
      const int64_t qRows = rows, qCols = gated ? cols / 2 : cols;
      Pair &q1 = output(yn), &t1 = output(yn), &si1 = output(4);
      Pair &q2 = output(yn), &t2 = output(yn), &si2 = output(4);
      ASSERT_EQ(te_rt_quantize_fp8(gpu, t, in.dev, qRows, qCols, TE_RT_FP8_E4M3,
                                   nullptr, 0, q1.dev, t1.dev,
                                   static_cast<float *>(si1.dev), nullptr,
                                   nullptr),
                0)
          << te_rt_last_error();
      BOTH(te_rt_quantize_fp8(cpu, t, in.host.data(), qRows, qCols,
                              TE_RT_FP8_E4M3, nullptr, 0, q2.host.data(),
                              t2.host.data(), si2.h<float>(), nullptr,
                              given.h<float>()),
           te_rt_quantize_fp8(gpu, t, in.dev, qRows, qCols, TE_RT_FP8_E4M3,
                              nullptr, 0, q2.dev, t2.dev,
                              static_cast<float *>(si2.dev), nullptr,
                              static_cast<float *>(given.dev)));
      EXPECT_EQ(download(q2), download(q1)) << name << ": fused data";
      EXPECT_EQ(download(t2), download(t1)) << name << ": fused transpose";
      EXPECT_EQ(download(si2), download(si1)) << name << ": fused scale_inv";
      expectBytes(name + " fused quantize data", q2);
      expectBytes(name + " fused quantize transpose", t2);
      expectBytes(name + " fused quantize scale_inv", si2);
    }
  }
}

// Delayed scaling's fused activation-cast (te_rt_act_quantize_fp8 /
// te_rt_dact_quantize_fp8): on cuda, the data, transpose, scale_inv and
// amax bytes of the producer's stored output quantized by
// te_rt_quantize_fp8 with the same scale, for every activation, forward,
// backward and dbias + backward; dbias within the bias gradient's
// tolerance of te_rt_dbias_dact's (another summation order). Shapes: whole
// 16-byte vectors with 128-row tiles (192x1024), 64-row tiles with a
// ragged column tile (40x96), fewer rows than a tile by vectors (16x256,
// 48x128: the transposed pieces past the last row left out), ragged and
// misaligned rows (33x258).
TEST_P(CudaAbi, FusedActivationCastMatchesUnfused) {
  int32_t t = GetParam();
  const float limit = 1.5f, alpha = 1.702f, offset = 1.0f;
  Pair &scale = scalar(6.0f);
  const float *sc = static_cast<const float *>(scale.dev);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{192, 1024},
                            {40, 96},
                            {16, 256},
                            {48, 128},
                            {33, 258}}) {
    const int64_t n = rows * cols;
    for (int32_t act = TE_RT_ACT_GELU; act < TE_RT_ACT_COUNT; ++act) {
      const bool gated =
          te::cpu::isGated(static_cast<te::cpu::Activation>(act));
      Pair &x = random(t, n, -4, 4), &dy = random(t, gated ? n / 2 : n);
      for (int kind = 0; kind < 3; ++kind) { // fwd, bwd, dbias + bwd
        if (kind == 2 && gated)
          continue;
        const int32_t fmt = kind == 0 ? TE_RT_FP8_E4M3 : TE_RT_FP8_E5M2;
        const int64_t yCols = kind == 0 && gated ? cols / 2 : cols;
        const int64_t yn = rows * yCols;
        std::string what = std::string(kActs[act]) + " " +
                           std::to_string(rows) + "x" + std::to_string(cols) +
                           (kind == 0   ? " fwd"
                            : kind == 1 ? " bwd"
                                        : " dbias+bwd");
        Pair &y = output(yn * sizeOf(t)), &db0 = output(cols * sizeOf(t));
        int32_t rc =
            kind == 0
                ? te_rt_act_fwd(gpu, act, t, x.dev, y.dev, rows, cols, limit,
                                alpha, offset, nullptr)
            : kind == 1 ? te_rt_act_bwd(gpu, act, t, dy.dev, x.dev, y.dev,
                                        rows, cols, limit, alpha, offset,
                                        nullptr)
                        : te_rt_dbias_dact(gpu, act, t, dy.dev, x.dev, y.dev,
                                           db0.dev, rows, cols, limit, alpha,
                                           offset, nullptr);
        ASSERT_EQ(rc, 0) << what << ": " << te_rt_last_error();
        Pair &q0 = output(yn), &t0 = output(yn), &si0 = output(4),
             &am0 = output(4);
        ASSERT_EQ(te_rt_quantize_fp8(gpu, t, y.dev, rows, yCols, fmt, sc, 0,
                                     q0.dev, t0.dev,
                                     static_cast<float *>(si0.dev),
                                     static_cast<float *>(am0.dev), nullptr),
                  0)
            << te_rt_last_error();
        Pair &q = output(yn), &tr = output(yn), &si = output(4),
             &am = output(4), &db = output(cols * sizeOf(t));
        rc = kind == 0
                 ? te_rt_act_quantize_fp8(gpu, act, t, x.dev, rows, cols,
                                          limit, alpha, offset, fmt, sc, q.dev,
                                          tr.dev, static_cast<float *>(si.dev),
                                          static_cast<float *>(am.dev))
                 : te_rt_dact_quantize_fp8(
                       gpu, act, t, dy.dev, x.dev,
                       kind == 2 ? db.dev : nullptr, rows, cols, limit, alpha,
                       offset, fmt, sc, q.dev, tr.dev,
                       static_cast<float *>(si.dev),
                       static_cast<float *>(am.dev));
        ASSERT_EQ(rc, 0) << what << ": " << te_rt_last_error();
        EXPECT_EQ(download(q), download(q0)) << what << ": data";
        EXPECT_EQ(download(tr), download(t0)) << what << ": transpose";
        EXPECT_EQ(download(si), download(si0)) << what << ": scale_inv";
        EXPECT_EQ(download(am), download(am0)) << what << ": amax";
        if (kind == 2) {
          std::vector<uint8_t> got = download(db), want = download(db0);
          double maxRef = 0, maxErr = 0;
          for (int64_t j = 0; j < cols; ++j)
            maxRef = std::max<double>(maxRef,
                                      std::fabs(toFloat(t, want.data(), j)));
          for (int64_t j = 0; j < cols; ++j)
            maxErr = std::max<double>(maxErr,
                                      std::fabs(toFloat(t, got.data(), j) -
                                                toFloat(t, want.data(), j)));
          EXPECT_LE(maxErr, ulpTol(t, 1e-4) * maxRef) << what << ": dbias";
        }
        // Without data (transpose only) and without transpose: the same
        // bytes for the copy written.
        Pair &q2 = output(yn), &tr2 = output(yn);
        rc = kind == 0
                 ? te_rt_act_quantize_fp8(gpu, act, t, x.dev, rows, cols,
                                          limit, alpha, offset, fmt, sc,
                                          nullptr, tr2.dev,
                                          static_cast<float *>(si.dev),
                                          nullptr)
                 : te_rt_dact_quantize_fp8(
                       gpu, act, t, dy.dev, x.dev, nullptr, rows, cols, limit,
                       alpha, offset, fmt, sc, q2.dev, nullptr,
                       static_cast<float *>(si.dev), nullptr);
        ASSERT_EQ(rc, 0) << what << ": " << te_rt_last_error();
        if (kind == 0) {
          EXPECT_EQ(download(tr2), download(t0)) << what << ": transpose only";
        } else {
          EXPECT_EQ(download(q2), download(q0)) << what << ": data only";
        }
      }
    }
  }
}

// te_rt_norm_quantize_fp8 on cuda: the bytes (data, transpose, scale_inv,
// amax) and statistics of te_rt_norm_fwd then te_rt_quantize_fp8 on cuda,
// delayed scaling (FP8 rows from the norm kernel, byte transpose) and
// current scaling (amax from the norm kernel), LayerNorm and RMSNorm, on
// the fast kernel (192x1024, 40x96: a ragged transposed tile; up to 64 rows
// the norm kernel writes the transpose itself, a CTA's rows staged and
// stored per column: 40x96, 16x256, 64x512; 13x256 and 6x4096 with the last
// CTA's rows fewer than its row groups, 6x4096 with groups of four warps)
// and the row kernel (33x258), with the data left out (scratch rows) too.
// Current scaling of at most 32 KiB of z and 64 rows runs in one CTA that
// stages z and casts it itself (16x256, 40x96, 13x256, 16x1024 and 64x256
// in bf16/f16; 17x96 and 1x64 with transposed rows that are not whole 16-byte
// stores), with and without the power-of-two scale.
TEST_P(CudaAbi, FusedNormCastMatchesUnfused) {
  int32_t t = GetParam();
  Pair &scale = scalar(3.0f);
  const float *sc = static_cast<const float *>(scale.dev);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{192, 1024},
                            {40, 96},
                            {16, 256},
                            {64, 512},
                            {13, 256},
                            {6, 4096},
                            {33, 258},
                            {16, 1024},
                            {64, 256},
                            {17, 96},
                            {1, 64}}) {
    const int64_t n = rows * cols;
    Pair &x = random(t, n, -3, 3), &g = random(t, cols, 0.5f, 1.5f),
         &b = random(t, cols);
    for (int32_t kind : {TE_RT_NORM_LAYERNORM, TE_RT_NORM_RMSNORM})
      for (int mode = 0; mode < 3; ++mode) { // delayed, current, pow2
        const bool ln = kind == TE_RT_NORM_LAYERNORM;
        const float *s = mode == 0 ? sc : nullptr;
        const int pow2 = mode == 2 ? 1 : 0;
        std::string what = std::string(ln ? "layernorm " : "rmsnorm ") +
                           std::to_string(rows) + "x" + std::to_string(cols) +
                           (mode == 0   ? " delayed"
                            : mode == 1 ? " current"
                                        : " current pow2");
        Pair &z = output(n * sizeOf(t)), &mu0 = output(rows * 4),
             &rs0 = output(rows * 4);
        ASSERT_EQ(te_rt_norm_fwd(gpu, kind, t, x.dev, g.dev,
                                 ln ? b.dev : nullptr, 1e-5, 0, rows, cols,
                                 z.dev, ln ? static_cast<float *>(mu0.dev)
                                           : nullptr,
                                 static_cast<float *>(rs0.dev)),
                  0)
            << te_rt_last_error();
        Pair &q0 = output(n), &t0 = output(n), &si0 = output(4),
             &am0 = output(4);
        ASSERT_EQ(te_rt_quantize_fp8(gpu, t, z.dev, rows, cols, TE_RT_FP8_E4M3,
                                     s, pow2, q0.dev, t0.dev,
                                     static_cast<float *>(si0.dev),
                                     static_cast<float *>(am0.dev), nullptr),
                  0)
            << te_rt_last_error();
        for (bool withData : {true, false}) {
          Pair &q = output(n), &tr = output(n), &si = output(4),
               &am = output(4), &mu = output(rows * 4), &rs = output(rows * 4);
          ASSERT_EQ(te_rt_norm_quantize_fp8(
                        gpu, kind, t, x.dev, g.dev, ln ? b.dev : nullptr, 1e-5,
                        0, rows, cols,
                        ln ? static_cast<float *>(mu.dev) : nullptr,
                        static_cast<float *>(rs.dev), TE_RT_FP8_E4M3, s, pow2,
                        withData ? q.dev : nullptr, tr.dev,
                        static_cast<float *>(si.dev),
                        static_cast<float *>(am.dev)),
                    0)
              << what << ": " << te_rt_last_error();
          if (withData) {
            EXPECT_EQ(download(q), download(q0)) << what << ": data";
          }
          EXPECT_EQ(download(tr), download(t0)) << what << ": transpose";
          EXPECT_EQ(download(si), download(si0)) << what << ": scale_inv";
          EXPECT_EQ(download(am), download(am0)) << what << ": amax";
          EXPECT_EQ(download(rs), download(rs0)) << what << ": rsigma";
          if (ln) {
            EXPECT_EQ(download(mu), download(mu0)) << what << ": mu";
          }
        }
      }
  }
}

} // namespace
