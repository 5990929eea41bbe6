//===- CudaAbiElementwiseTest.cpp - cuda vs cpu: elementwise ----*- C++ -*-===//
//
// The cuda backend against the cpu backend (split from CudaAbiTest.cpp by
// family; the fixture is CudaAbiFixture.h): bias gradients, elementwise calls,
// te_rt_zero_ranges, the recipe-state update and the buffer cache.
//
//===----------------------------------------------------------------------===//

#include "CudaAbiFixture.h"

using namespace te::test;

namespace {

TEST_P(CudaAbi, BiasGradAndElementwise) {
  int32_t t = GetParam();
  for (int64_t rows : {0, 1, 1000}) {
    const int64_t cols = 77;
    Pair &dy = random(t, rows * cols), &db = output(cols * sizeOf(t));
    BOTH(te_rt_bias_grad(cpu, t, dy.host.data(), db.host.data(), rows, cols),
         te_rt_bias_grad(gpu, t, dy.dev, db.dev, rows, cols));
    expectClose(("bias_grad rows=" + std::to_string(rows)).c_str(), t, db,
                ulpTol(t, 1e-4));
  }
  for (int64_t n : {1, 4099, 1 << 20}) {
    Pair &a = random(t, n), &b = random(t, n), &c = output(n * sizeOf(t));
    BOTH(te_rt_add(cpu, t, a.host.data(), b.host.data(), c.host.data(), n),
         te_rt_add(gpu, t, a.dev, b.dev, c.dev, n));
    expectClose(("add n=" + std::to_string(n)).c_str(), t, c, -1);
    for (int32_t to : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16}) {
      Pair &o = output(n * sizeOf(to));
      BOTH(te_rt_cast(cpu, t, to, a.host.data(), o.host.data(), n),
           te_rt_cast(gpu, t, to, a.dev, o.dev, n));
      expectClose((std::string("cast to ") + dtypeName(to)).c_str(), to, o, -1);
    }
  }
  // f32 -> bf16/f16 with values that round (ties, overflow, subnormals).
  if (t == TE_RT_DTYPE_F32) {
    const int64_t n = 1 << 16;
    Pair &a = make(n * 4);
    for (int64_t i = 0; i < n; ++i) {
      uint32_t bits = static_cast<uint32_t>(rng());
      float f;
      std::memcpy(&f, &bits, 4);
      a.h<float>()[i] = f;
    }
    upload(a);
    for (int32_t to : {TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16}) {
      Pair &o = output(n * 2);
      BOTH(te_rt_cast(cpu, t, to, a.host.data(), o.host.data(), n),
           te_rt_cast(gpu, t, to, a.dev, o.dev, n));
      expectClose("cast of random bit patterns", to, o, -1);
    }
  }
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{33, 65}, {1024, 512}, {1, 9}}) {
    Pair &s = random(t, rows * cols), &d = output(rows * cols * sizeOf(t));
    BOTH(te_rt_transpose(cpu, t, s.host.data(), d.host.data(), rows, cols),
         te_rt_transpose(gpu, t, s.dev, d.dev, rows, cols));
    expectClose("transpose", t, d, -1);
  }
  Pair &s = random(t, 999), &d = output(999 * sizeOf(t));
  BOTH(te_rt_copy(cpu, d.host.data(), s.host.data(), d.bytes()),
       te_rt_copy(gpu, d.dev, s.dev, d.bytes()));
  expectClose("copy", t, d, -1);
  BOTH(te_rt_zero(cpu, d.host.data(), 501), te_rt_zero(gpu, d.dev, 501));
  expectClose("zero", t, d, -1);
}

// te_rt_transpose_bytes: the cpu backend's bytes, ragged and multi-tile
// shapes (vector loads without vector stores: 1000 x 520; more tiles than
// the grid has blocks: the last); and on cuda the
// transpose of an FP8 tensor's rowwise data is the `transpose` that
// te_rt_quantize_fp8 writes with both usages. Runs once.
TEST_P(CudaAbi, TransposeBytes) {
  if (GetParam() != TE_RT_DTYPE_F32)
    return;
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{33, 65},
                            {1024, 512},
                            {1000, 520},
                            {1, 9},
                            {0, 5},
                            {(int64_t(65535) * 32) + 7, 3}}) {
    Pair &s = make(std::max<int64_t>(rows * cols, 1));
    for (uint8_t &b : s.host)
      b = static_cast<uint8_t>(rng());
    upload(s);
    Pair &d = output(std::max<int64_t>(rows * cols, 1));
    BOTH(te_rt_transpose_bytes(cpu, s.host.data(), d.host.data(), rows, cols),
         te_rt_transpose_bytes(gpu, s.dev, d.dev, rows, cols));
    expectBytes("transpose_bytes " + std::to_string(rows) + "x" +
                    std::to_string(cols),
                d);
    // te.add_columnwise's one launch: the same bytes, the scale carried.
    Pair &col = output(std::max<int64_t>(rows * cols, 1));
    Pair &sIn = random(TE_RT_DTYPE_F32, 1), &sOut = output(4);
    BOTH(te_rt_add_columnwise_fp8(
             cpu, s.host.data(),
             reinterpret_cast<const float *>(sIn.host.data()), rows, cols,
             col.host.data(), reinterpret_cast<float *>(sOut.host.data())),
         te_rt_add_columnwise_fp8(
             gpu, s.dev, static_cast<const float *>(sIn.dev), rows, cols,
             col.dev, static_cast<float *>(sOut.dev)));
    expectBytes("add_columnwise_fp8 " + std::to_string(rows) + "x" +
                    std::to_string(cols),
                col);
    expectBytes("add_columnwise_fp8 scale_inv", sOut);
  }
  const int64_t rows = 8192, cols = 1024;
  Pair &x = random(TE_RT_DTYPE_BF16, rows * cols);
  Pair &data = output(rows * cols), &t = output(rows * cols),
       &made = output(rows * cols), &scaleInv = output(4), &amax = output(4);
  ASSERT_EQ(te_rt_quantize_fp8(gpu, TE_RT_DTYPE_BF16, x.dev, rows, cols,
                               TE_RT_FP8_E4M3, nullptr, 0, data.dev, t.dev,
                               static_cast<float *>(scaleInv.dev),
                               static_cast<float *>(amax.dev), nullptr),
            0)
      << te_rt_last_error();
  ASSERT_EQ(te_rt_transpose_bytes(gpu, data.dev, made.dev, rows, cols), 0)
      << te_rt_last_error();
  EXPECT_EQ(download(made), download(t))
      << "the byte transpose of the FP8 data is not quantize_fp8's transpose";
}

// te_rt_zero_ranges: 300 ranges (three launches) at every alignment, empty
// ones, overlapping ones and large ones (several blocks of 16-byte stores):
// the bytes of the cpu backend's memsets. Independent of the dtype: runs
// once.
TEST_P(CudaAbi, ZeroRanges) {
  if (GetParam() != TE_RT_DTYPE_F32)
    return;
  const int64_t size = (int64_t(1) << 21) + 77;
  Pair &p = output(size);
  std::vector<void *> hostPtrs, devPtrs;
  std::vector<int64_t> bytes;
  for (int i = 0; i < 300; ++i) {
    int64_t n = i % 9 == 0    ? 0
                : i % 10 == 0 ? (1 << 20) + rng() % 31
                              : rng() % 300;
    int64_t at = rng() % (size - n);
    hostPtrs.push_back(p.host.data() + at);
    devPtrs.push_back(static_cast<uint8_t *>(p.dev) + at);
    bytes.push_back(n);
  }
  BOTH(te_rt_zero_ranges(cpu, hostPtrs.data(), bytes.data(), 300),
       te_rt_zero_ranges(gpu, devPtrs.data(), bytes.data(), 300));
  expectBytes("zero_ranges (300 ranges)", p);
  // Checked as on cpu: nothing is launched for a bad list.
  bytes[3] = -1;
  EXPECT_NE(te_rt_zero_ranges(gpu, devPtrs.data(), bytes.data(), 300), 0);
  EXPECT_EQ(std::string(te_rt_last_error()),
            "te_rt_zero_ranges: bytes[3] must be >= 0, got -1");
  expectBytes("zero_ranges (refused)", p);
}

//===----------------------------------------------------------------------===//
// Recipe state and buffers
//===----------------------------------------------------------------------===//

// Delayed scaling's update, both algorithms, margins 0 and 1, separate
// outputs and in place, with a zero slot, an infinite amax, a NaN amax, a
// NaN in the history and a tiny amax whose scale overflows to FLT_MAX:
// bit-identical histories and scales. Histories up to 8192 rows take the
// block-per-slot kernel (the column in shared memory), longer ones the
// thread-per-slot one: 9000 rows covers the second. With an unused mask
// (te_rt_amax_update_unused; up to 64 slots) the marked slots, the second
// and the last, hold NaN amaxes that neither backend may read. Independent
// of the dtype: runs once.
TEST_P(CudaAbi, AmaxUpdate) {
  if (GetParam() != TE_RT_DTYPE_F32)
    return;
  struct Case {
    int64_t len, n;
  } cases[] = {{1, 1}, {16, 7}, {1024, 300}, {3, 5}, {1024, 6}, {9000, 5}};
  for (Case cs : cases)
    for (int32_t recent : {0, 1})
      for (int32_t margin : {0, 1})
        for (bool inPlace : {false, true})
          for (bool masked : {false, true}) {
            const int64_t len = cs.len, n = cs.n;
            if (masked && n > 64)
              continue;
            const uint64_t unused =
                masked ? (uint64_t(1) << (n - 1)) | (n > 1 ? 2u : 0u) : 0;
            Pair &h = random(TE_RT_DTYPE_F32, len * n, 0, 500);
            Pair &sc = random(TE_RT_DTYPE_F32, n, 0.5f, 4);
            Pair &am = random(TE_RT_DTYPE_F32, n, 0, 500);
            float *H = h.h<float>(), *A = am.h<float>();
            A[0] = 0.0f;
            for (int64_t r = 1; r < len; ++r)
              H[r * n] = 0.0f; // slot 0: all zero, the scale is kept
            if (n > 1)
              A[1] = INFINITY;
            if (n > 2)
              A[2] = NAN;
            if (n > 3 && len > 2)
              H[2 * n + 3] = NAN;
            if (n > 4) {
              A[4] = 1e-39f; // 448 / 1e-39 overflows: FLT_MAX
              for (int64_t r = 1; r < len; ++r)
                H[r * n + 4] = 0.0f;
            }
            for (int64_t s = 0; s < n && s < 64; ++s)
              if ((unused >> s) & 1)
                A[s] = NAN;
            upload(h);
            upload(am);
            Pair &nh = inPlace ? h : output(len * n * 4);
            Pair &ns = inPlace ? sc : output(n * 4);
            // (Unmasked: the plain call, which passes a zero mask on.)
            auto update = [&](te_rt_context *c, void *hist, void *scale,
                              void *amax, void *newHist, void *newScale) {
              auto f = [](void *p) { return static_cast<float *>(p); };
              return masked ? te_rt_amax_update_unused(
                                  c, f(hist), f(scale), f(amax), len, n, 448.0f,
                                  margin, recent, int64_t(unused), f(newHist),
                                  f(newScale))
                            : te_rt_amax_update(c, f(hist), f(scale), f(amax),
                                                len, n, 448.0f, margin, recent,
                                                f(newHist), f(newScale));
            };
            BOTH(update(cpu, h.h<float>(), sc.h<float>(), am.h<float>(),
                        nh.h<float>(), ns.h<float>()),
                 update(gpu, h.dev, sc.dev, am.dev, nh.dev, ns.dev));
            std::string tag = "amax_update len=" + std::to_string(len) +
                              " n=" + std::to_string(n) +
                              (recent ? " most_recent" : " max") +
                              " margin=" + std::to_string(margin) +
                              (inPlace ? " in place" : "") +
                              " unused=" + std::to_string(unused);
            expectBytes(tag + " history", nh);
            expectBytes(tag + " scale", ns);
          }
}

// te_rt_free parks CUDA buffers and te_rt_alloc reuses one of the same
// rounded size (no cudaMalloc/cudaFree per call); a different size gets a
// different buffer, and both stay usable.
TEST(CudaBuffers, FreedBuffersAreReused) {
  if (!te_rt_backend_available(TE_RT_BACKEND_CUDA))
    GTEST_SKIP() << "no CUDA device visible: the cuda buffer cache is not "
                    "exercised here";
  te_rt_context *gpu = te_rt_context_create(TE_RT_BACKEND_CUDA);
  ASSERT_NE(gpu, nullptr) << te_rt_last_error();
  void *a = te_rt_alloc(gpu, 3 << 20);
  ASSERT_NE(a, nullptr);
  te_rt_free(gpu, a);
  void *b = te_rt_alloc(gpu, (3 << 20) - 100); // same 1 MiB granule
  EXPECT_EQ(a, b);
  void *c = te_rt_alloc(gpu, 1000);
  EXPECT_NE(c, b);
  std::vector<uint8_t> in(1000, 7), out(1000, 0);
  ASSERT_EQ(te_rt_copy_to_backend(gpu, c, in.data(), 1000), 0);
  ASSERT_EQ(te_rt_copy_to_host(gpu, out.data(), c, 1000), 0);
  EXPECT_EQ(in, out);
  te_rt_free(gpu, b);
  te_rt_free(gpu, c);
  te_rt_context_destroy(gpu); // releases the cache
}

} // namespace
