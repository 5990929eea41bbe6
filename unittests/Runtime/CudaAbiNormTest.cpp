//===- CudaAbiNormTest.cpp - cuda vs cpu: norms -----------------*- C++ -*-===//
//
// The cuda backend against the cpu backend (split from CudaAbiTest.cpp by
// family; the fixture is CudaAbiFixture.h): normalization, forward and backward.
//
//===----------------------------------------------------------------------===//

#include "CudaAbiFixture.h"

using namespace te::test;

namespace {

TEST_P(CudaAbi, Norms) {
  int32_t t = GetParam();
  // The kernels' fast path (cols a multiple of 16 bytes, up to 16384
  // bf16/f16 or 8192 f32; rows held in registers, dgamma/dbeta partials
  // per CTA; a one-CTA grid writes them itself: 16x256, 64x32) and its
  // generic fallback (other widths): 1 to 2048 rows.
  struct Case {
    int64_t rows, cols;
  } cases[] = {{37, 1000}, {300, 4096}, {5, 7},     {1, 4096},
               {3, 1024},  {8, 768},    {3, 4104},  {4, 33},
               {2, 8192},  {2, 16384},  {2, 20000}, {2048, 1024},
               {16, 256},  {64, 32}};
  for (Case cs : cases)
    for (int32_t kind : {TE_RT_NORM_LAYERNORM, TE_RT_NORM_RMSNORM})
      for (int32_t zc : {0, 1}) {
        bool ln = kind == TE_RT_NORM_LAYERNORM;
        int64_t n = cs.rows * cs.cols;
        Pair &x = random(t, n, -3, 5), &g = random(t, cs.cols, -1, 1);
        Pair *b = ln ? &random(t, cs.cols) : nullptr;
        Pair &z = output(n * sizeOf(t));
        Pair *mu = ln ? &output(cs.rows * 4) : nullptr;
        Pair &rs = output(cs.rows * 4);
        BOTH(te_rt_norm_fwd(cpu, kind, t, x.host.data(), g.host.data(),
                            b ? b->host.data() : nullptr, 1e-5, zc, cs.rows,
                            cs.cols, z.host.data(),
                            mu ? mu->h<float>() : nullptr, rs.h<float>()),
             te_rt_norm_fwd(gpu, kind, t, x.dev, g.dev, b ? b->dev : nullptr,
                            1e-5, zc, cs.rows, cs.cols, z.dev,
                            mu ? static_cast<float *>(mu->dev) : nullptr,
                            static_cast<float *>(rs.dev)));
        std::string tag = std::string(ln ? "layernorm" : "rmsnorm") +
                          (zc ? "+1" : "") + " " + std::to_string(cs.rows) +
                          "x" + std::to_string(cs.cols);
        expectClose((tag + " z").c_str(), t, z, ulpTol(t, 2e-5));
        if (mu)
          expectClose((tag + " mu").c_str(), TE_RT_DTYPE_F32, *mu, 1e-5);
        expectClose((tag + " rsigma").c_str(), TE_RT_DTYPE_F32, rs, 1e-5);
        // Backward from the cpu statistics (the same on both sides).
        Pair &dz = random(t, n);
        if (mu)
          upload(*mu);
        upload(rs);
        Pair &dx = output(n * sizeOf(t)), &dg = output(cs.cols * sizeOf(t));
        Pair *db = ln ? &output(cs.cols * sizeOf(t)) : nullptr;
        BOTH(te_rt_norm_bwd(cpu, kind, t, dz.host.data(), x.host.data(),
                            mu ? mu->h<float>() : nullptr, rs.h<float>(),
                            g.host.data(), zc, cs.rows, cs.cols, dx.host.data(),
                            dg.host.data(), db ? db->host.data() : nullptr),
             te_rt_norm_bwd(gpu, kind, t, dz.dev, x.dev,
                            mu ? static_cast<float *>(mu->dev) : nullptr,
                            static_cast<float *>(rs.dev), g.dev, zc, cs.rows,
                            cs.cols, dx.dev, dg.dev, db ? db->dev : nullptr));
        expectClose((tag + " dx").c_str(), t, dx, ulpTol(t, 1e-4));
        expectClose((tag + " dgamma").c_str(), t, dg, ulpTol(t, 1e-4));
        if (db)
          expectClose((tag + " dbeta").c_str(), t, *db, ulpTol(t, 1e-4));
      }
}

// Every TEST_P(CudaAbi, ...) of the CudaAbi*Test.cpp files, for each dtype.

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaAbi,
                         ::testing::Values(TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16,
                                           TE_RT_DTYPE_F16),
                         [](const auto &info) {
                           return std::string(dtypeName(info.param));
                         });

} // namespace
