//===- CudaAbiGemmTest.cpp - cuda vs cpu: GEMMs -----------------*- C++ -*-===//
//
// The cuda backend against the cpu backend (split from CudaAbiTest.cpp by
// family; the fixture is CudaAbiFixture.h): the GEMMs and their GELU epilogues.
//
//===----------------------------------------------------------------------===//

#include "CudaAbiFixture.h"

using namespace te::test;

namespace {

TEST_P(CudaAbi, Gemms) {
  int32_t t = GetParam();
  struct Case {
    int64_t m, n, k;
  } cases[] = {
      {70, 96, 130}, {256, 512, 1024}, {1, 3, 5}, {0, 8, 8}, {8, 8, 0},
      // bf16/f16 wgrad of <= 64 tokens without accumulate: the skinny
      // kernel (whole and partial 128x128 tiles and 16-token chunks; 24 x 8
      // x 300000: 2344 column tiles over ~16 blocks per SM, so blocks walk
      // two tiles, the last one partial; 65 tokens: cuBLASLt again)
      {16, 512, 1024}, {5, 136, 264}, {64, 256, 128}, {40, 8, 8},
      {24, 16384, 1000}, {24, 8, 300000}, {65, 64, 64}};
  for (Case cs : cases) {
    int64_t m = cs.m, n = cs.n, k = cs.k;
    double tol = ulpTol(t, 1e-5 * std::sqrt(double(std::max<int64_t>(k, m))));
    std::string tag =
        std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    Pair &x = random(t, m * k), &w = random(t, n * k), &bias = random(t, n);
    Pair &dy = random(t, m * n);
    for (bool withBias : {false, true}) {
      Pair &y = output(m * n * sizeOf(t));
      BOTH(te_rt_gemm_fprop(cpu, t, x.host.data(), w.host.data(),
                            withBias ? bias.host.data() : nullptr,
                            y.host.data(), m, n, k),
           te_rt_gemm_fprop(gpu, t, x.dev, w.dev, withBias ? bias.dev : nullptr,
                            y.dev, m, n, k));
      expectClose(("fprop " + tag + (withBias ? " +bias" : "")).c_str(), t, y,
                  tol);
    }
    Pair &dx = output(m * k * sizeOf(t));
    BOTH(te_rt_gemm_dgrad(cpu, t, dy.host.data(), w.host.data(), dx.host.data(),
                          m, n, k),
         te_rt_gemm_dgrad(gpu, t, dy.dev, w.dev, dx.dev, m, n, k));
    expectClose(("dgrad " + tag).c_str(), t, dx, tol);
    for (int32_t acc : {0, 1})
      for (bool withDbias : {false, true}) {
        Pair &dw = random(t, n * k);
        Pair &db = output(n * sizeOf(t));
        BOTH(te_rt_gemm_wgrad(
                 cpu, t, dy.host.data(), x.host.data(), dw.host.data(),
                 withDbias ? db.host.data() : nullptr, m, n, k, acc),
             te_rt_gemm_wgrad(gpu, t, dy.dev, x.dev, dw.dev,
                              withDbias ? db.dev : nullptr, m, n, k, acc));
        std::string wt = "wgrad " + tag + (acc ? " acc" : "");
        expectClose(wt.c_str(), t, dw, tol);
        if (withDbias)
          expectClose((wt + " dbias").c_str(), t, db, tol);
      }
    // Into an fp32 main_grad (te.main_grad): D and C fp32, beta 1.
    for (int32_t acc : {0, 1}) {
      Pair &main = random(TE_RT_DTYPE_F32, n * k);
      BOTH(te_rt_gemm_wgrad_fp32(cpu, t, dy.host.data(), x.host.data(),
                                 reinterpret_cast<float *>(main.host.data()), m,
                                 n, k, acc),
           te_rt_gemm_wgrad_fp32(gpu, t, dy.dev, x.dev,
                                 static_cast<float *>(main.dev), m, n, k, acc));
      expectClose(("wgrad fp32 " + tag + (acc ? " acc" : "")).c_str(),
                  TE_RT_DTYPE_F32, main,
                  ulpTol(TE_RT_DTYPE_F32,
                         1e-5 * std::sqrt(double(std::max<int64_t>(k, m)))));
    }
  }
}

TEST_P(CudaAbi, GemmActEpilogues) {
  // GELU_AUX_BIAS / DGELU against the cpu backend's fp32 GEMM + GELU. The
  // odd shapes have no aligned epilogue algorithm and take the unfused
  // fallback; the rest run cuBLASLt's epilogue.
  int32_t t = GetParam();
  struct Case {
    int64_t m, n, k;
  } cases[] = {{70, 96, 130}, {256, 512, 1024}, {1, 3, 5}, {0, 8, 8},
               {8, 8, 0}};
  for (Case cs : cases) {
    int64_t m = cs.m, n = cs.n, k = cs.k;
    double tol = ulpTol(t, 1e-5 * std::sqrt(double(std::max<int64_t>(k, m))));
    // cuBLASLt's GELU may use a faster tanh than the cpu's tanhf.
    double actTol = std::max(tol, 2e-3);
    std::string tag =
        std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    Pair &x = random(t, m * k, -0.5f, 0.5f), &w = random(t, n * k, -0.5f, 0.5f);
    Pair &bias = random(t, n), &dy = random(t, m * n);
    Pair &pre = random(t, m * k, -3.0f, 3.0f);
    for (bool withBias : {false, true})
      for (bool withAux : {false, true}) {
        Pair &y = output(m * n * sizeOf(t)), &aux = output(m * n * sizeOf(t));
        BOTH(te_rt_gemm_fprop_act(cpu, TE_RT_ACT_GELU, t, x.host.data(),
                                  w.host.data(),
                                  withBias ? bias.host.data() : nullptr,
                                  y.host.data(),
                                  withAux ? aux.host.data() : nullptr, m, n, k),
             te_rt_gemm_fprop_act(gpu, TE_RT_ACT_GELU, t, x.dev, w.dev,
                                  withBias ? bias.dev : nullptr, y.dev,
                                  withAux ? aux.dev : nullptr, m, n, k));
        std::string ft = "fprop_act " + tag + (withBias ? " +bias" : "") +
                         (withAux ? " +aux" : "");
        expectClose(ft.c_str(), t, y, actTol);
        if (withAux)
          expectClose((ft + " aux").c_str(), t, aux, tol);
      }
    Pair &dx = output(m * k * sizeOf(t));
    BOTH(te_rt_gemm_dgrad_dact(cpu, TE_RT_ACT_GELU, t, dy.host.data(),
                               w.host.data(), pre.host.data(), dx.host.data(),
                               m, n, k),
         te_rt_gemm_dgrad_dact(gpu, TE_RT_ACT_GELU, t, dy.dev, w.dev, pre.dev,
                               dx.dev, m, n, k));
    expectClose(("dgrad_dact " + tag).c_str(), t, dx, actTol);
  }
}

} // namespace
