//===- CudaAbiQuantizeTest.cpp - cuda vs cpu: quantization ------*- C++ -*-===//
//
// The cuda backend against the cpu backend (split from CudaAbiTest.cpp by
// family; the fixture is CudaAbiFixture.h): per-tensor FP8, FP8 block scaling and the Blackwell recipes.
//
//===----------------------------------------------------------------------===//

#include "CudaAbiFixture.h"

using namespace te::test;

namespace {

//===----------------------------------------------------------------------===//
// Per-tensor FP8
//===----------------------------------------------------------------------===//

// Current scaling (with and without pow2 scales; with a precomputed amax,
// amax_in, instead of the amax pass) and delayed scaling with a scale that
// saturates the largest inputs, both formats, data and/or transpose, odd
// and aligned shapes (16x256, 40x128: fewer rows than a tile, whole
// columns), NaN/inf inputs: the cuda bytes, scale_inv and amax
// equal the cpu ones bit for bit.
TEST_P(CudaAbi, QuantizeFp8) {
  int32_t t = GetParam();
  struct Shape {
    int64_t rows, cols;
  } shapes[] = {{33, 47},  {1, 1},     {128, 4096}, {64, 96},
                {130, 80}, {256, 200}, {16, 256},   {40, 128}};
  enum { Current, CurrentPow2, Delayed, GivenAmax };
  enum { Both, DataOnly, TransposeOnly };
  for (Shape sh : shapes)
    for (int32_t fmt : {TE_RT_FP8_E4M3, TE_RT_FP8_E5M2})
      for (int mode : {Current, CurrentPow2, Delayed, GivenAmax})
        for (int outs : {Both, DataOnly, TransposeOnly})
          for (bool specials : {false, true}) {
            if (specials && (outs != Both || mode == CurrentPow2))
              continue;
            const int64_t n = sh.rows * sh.cols;
            Pair &x = random(t, n, -4, 4);
            if (specials && n >= 4) {
              // NaN, +inf, -inf and the largest finite value of the dtype.
              const float v[4] = {NAN, INFINITY, -INFINITY,
                                  t == TE_RT_DTYPE_F16 ? 65504.0f : 3e38f};
              for (int i = 0; i < 4; ++i) {
                int64_t at = (i + 1) * n / 5;
                if (t == TE_RT_DTYPE_F32)
                  x.h<float>()[at] = v[i];
                else if (t == TE_RT_DTYPE_BF16)
                  x.h<uint16_t>()[at] = te::cpu::floatToBF16(v[i]);
                else
                  x.h<uint16_t>()[at] = te::cpu::floatToF16(v[i]);
              }
              upload(x);
            }
            // Delayed: |x * scale| reaches ~2.7x the format's maximum.
            Pair &scale = scalar(fmt == TE_RT_FP8_E4M3 ? 300.0f : 38000.0f);
            bool delayed = mode == Delayed;
            bool wantData = outs != TransposeOnly, wantT = outs != DataOnly;
            // GivenAmax: an amax_in below max |x| (~4): saturating values.
            Pair &given = scalar(2.5f);
            bool hasIn = mode == GivenAmax;
            bool wantAmax = ((mode + outs) % 2 == 0 || specials) && !hasIn;
            Pair &data = output(n), &tr = output(n), &si = output(4),
                 &am = output(4);
            BOTH(te_rt_quantize_fp8(
                     cpu, t, x.host.data(), sh.rows, sh.cols, fmt,
                     delayed ? scale.h<float>() : nullptr, mode == CurrentPow2,
                     wantData ? data.host.data() : nullptr,
                     wantT ? tr.host.data() : nullptr, si.h<float>(),
                     wantAmax ? am.h<float>() : nullptr,
                     hasIn ? given.h<float>() : nullptr),
                 te_rt_quantize_fp8(
                     gpu, t, x.dev, sh.rows, sh.cols, fmt,
                     delayed ? static_cast<float *>(scale.dev) : nullptr,
                     mode == CurrentPow2, wantData ? data.dev : nullptr,
                     wantT ? tr.dev : nullptr, static_cast<float *>(si.dev),
                     wantAmax ? static_cast<float *>(am.dev) : nullptr,
                     hasIn ? static_cast<float *>(given.dev) : nullptr));
            std::string tag = std::string("quantize ") +
                              (fmt == TE_RT_FP8_E4M3 ? "e4m3 " : "e5m2 ") +
                              (mode == Current       ? "current "
                               : mode == CurrentPow2 ? "current-pow2 "
                               : mode == GivenAmax   ? "current-amax_in "
                                                     : "delayed ") +
                              std::to_string(sh.rows) + "x" +
                              std::to_string(sh.cols) +
                              (specials ? " nan/inf" : "");
            expectBytes(tag + " data", data);
            expectBytes(tag + " transpose", tr);
            expectBytes(tag + " scale_inv", si);
            expectBytes(tag + " amax", am);
          }
}

// The fused bias gradient + cast (te_rt_dbias_quantize_fp8): delayed
// (saturating scale) and current scaling (with and without pow2 scales),
// both formats, data and/or transpose, aligned shapes (the 16-byte tiles;
// 128-row tiles for 16-bit inputs of 128 rows or more) and ragged ones
// (odd cols, rows not a multiple of the tile: the element path; zero rows
// are the selftest's and RobustnessTest's): the quantized bytes, scale_inv and
// amax equal the cpu ones bit for bit, dbias is the cpu's within its tolerance
// (the fp32 sums are grouped per tile and thread on the GPU, in row order on
// the cpu).
TEST_P(CudaAbi, DBiasQuantizeFp8) {
  int32_t t = GetParam();
  struct Shape {
    int64_t rows, cols;
  } shapes[] = {{33, 47},  {1, 1},      {256, 512}, {64, 96}, {130, 80},
                {200, 72}, {1000, 333}, {16, 256},  {48, 128}};
  enum { Current, CurrentPow2, Delayed };
  enum { Both, DataOnly, TransposeOnly };
  for (Shape sh : shapes)
    for (int32_t fmt : {TE_RT_FP8_E4M3, TE_RT_FP8_E5M2})
      for (int mode : {Current, CurrentPow2, Delayed})
        for (int outs : {Both, DataOnly, TransposeOnly}) {
          const int64_t n = sh.rows * sh.cols;
          Pair &x = random(t, n, -4, 4);
          Pair &scale = scalar(fmt == TE_RT_FP8_E4M3 ? 300.0f : 38000.0f);
          bool delayed = mode == Delayed;
          bool wantData = outs != TransposeOnly, wantT = outs != DataOnly;
          bool wantAmax = (mode + outs) % 2 == 0;
          Pair &data = output(n), &tr = output(n), &si = output(4),
               &am = output(4), &db = output(sh.cols * sizeOf(t));
          BOTH(te_rt_dbias_quantize_fp8(
                   cpu, t, x.host.data(), sh.rows, sh.cols, fmt,
                   delayed ? scale.h<float>() : nullptr, mode == CurrentPow2,
                   wantData ? data.host.data() : nullptr,
                   wantT ? tr.host.data() : nullptr, si.h<float>(),
                   wantAmax ? am.h<float>() : nullptr, db.host.data()),
               te_rt_dbias_quantize_fp8(
                   gpu, t, x.dev, sh.rows, sh.cols, fmt,
                   delayed ? static_cast<float *>(scale.dev) : nullptr,
                   mode == CurrentPow2, wantData ? data.dev : nullptr,
                   wantT ? tr.dev : nullptr, static_cast<float *>(si.dev),
                   wantAmax ? static_cast<float *>(am.dev) : nullptr, db.dev));
          std::string tag = std::string("dbias_quantize ") +
                            (fmt == TE_RT_FP8_E4M3 ? "e4m3 " : "e5m2 ") +
                            (mode == Current       ? "current "
                             : mode == CurrentPow2 ? "current-pow2 "
                                                   : "delayed ") +
                            std::to_string(sh.rows) + "x" +
                            std::to_string(sh.cols);
          expectBytes(tag + " data", data);
          expectBytes(tag + " transpose", tr);
          expectBytes(tag + " scale_inv", si);
          expectBytes(tag + " amax", am);
          expectClose((tag + " dbias").c_str(), t, db, ulpTol(t, 1e-4));
        }
}

// FP8 TN GEMMs for the three supported format pairs with output `dtype`,
// with and without bias and accumulation, against the cpu backend's fp32
// GEMM of the dequantized operands.
TEST_P(CudaAbi, GemmFp8) {
  int32_t t = GetParam();
  struct Case {
    int64_t m, n, k;
  } cases[] = {{16, 32, 48}, {256, 512, 1024}, {8, 32, 64}, {64, 32, 8}};
  const int32_t pairs[][2] = {{TE_RT_FP8_E4M3, TE_RT_FP8_E4M3},
                              {TE_RT_FP8_E4M3, TE_RT_FP8_E5M2},
                              {TE_RT_FP8_E5M2, TE_RT_FP8_E4M3}};
  for (Case cs : cases)
    for (auto &pr : pairs) {
      Pair &a = randomFp8(pr[0], cs.m * cs.k),
           &b = randomFp8(pr[1], cs.n * cs.k);
      Pair &sa = scalar(0.0625f * 1.3f), &sb = scalar(0.37f);
      Pair &bias = random(t, cs.n);
      for (bool withBias : {false, true})
        for (int32_t acc : {0, 1}) {
          Pair &d = random(t, cs.m * cs.n);
          BOTH(te_rt_gemm_fp8(cpu, t, pr[0], a.host.data(), sa.h<float>(),
                              pr[1], b.host.data(), sb.h<float>(),
                              withBias ? bias.host.data() : nullptr,
                              d.host.data(), cs.m, cs.n, cs.k, acc, 0),
               te_rt_gemm_fp8(gpu, t, pr[0], a.dev,
                              static_cast<float *>(sa.dev), pr[1], b.dev,
                              static_cast<float *>(sb.dev),
                              withBias ? bias.dev : nullptr, d.dev, cs.m, cs.n,
                              cs.k, acc, /*fast_accumulate=*/withBias));
          std::string tag = std::string("gemm_fp8 ") +
                            (pr[0] == TE_RT_FP8_E4M3 ? "e4m3" : "e5m2") + "x" +
                            (pr[1] == TE_RT_FP8_E4M3 ? "e4m3 " : "e5m2 ") +
                            std::to_string(cs.m) + "x" + std::to_string(cs.n) +
                            "x" + std::to_string(cs.k) +
                            (withBias ? " +bias" : "") + (acc ? " acc" : "");
          expectGemmClose(tag, t, d);
        }
    }
  // E5M2 x E5M2 is refused on both backends.
  Pair &e5 = randomFp8(TE_RT_FP8_E5M2, 16 * 16), &s1 = scalar(1.0f);
  Pair &d = output(16 * 16 * sizeOf(t));
  EXPECT_NE(te_rt_gemm_fp8(cpu, t, TE_RT_FP8_E5M2, e5.host.data(),
                           s1.h<float>(), TE_RT_FP8_E5M2, e5.host.data(),
                           s1.h<float>(), nullptr, d.host.data(), 16, 16, 16,
                           0, 0),
            0);
  EXPECT_NE(te_rt_gemm_fp8(gpu, t, TE_RT_FP8_E5M2, e5.dev,
                           static_cast<float *>(s1.dev), TE_RT_FP8_E5M2, e5.dev,
                           static_cast<float *>(s1.dev), nullptr, d.dev, 16, 16,
                           16, 0, 0),
            0);
}

//===----------------------------------------------------------------------===//
// Float8 block scaling
//===----------------------------------------------------------------------===//

/// Bytes of the scale_inv of a rowwise [rows, cols] block-scaled copy.
int64_t blockScaleBytes(int64_t rows, int64_t cols, int32_t block2d) {
  const int64_t rowBlocks = (rows + 127) / 128, colBlocks = (cols + 127) / 128;
  return 4 * (block2d ? rowBlocks * ((colBlocks + 3) / 4 * 4)
                      : colBlocks * ((rows + 3) / 4 * 4));
}

/// Sets element i of a host buffer of `dtype` (rounded to the dtype).
void setValue(int32_t dtype, Pair &p, int64_t i, float v) {
  if (dtype == TE_RT_DTYPE_F32)
    p.h<float>()[i] = v;
  else if (dtype == TE_RT_DTYPE_BF16)
    p.h<uint16_t>()[i] = te::cpu::floatToBF16(v);
  else
    p.h<uint16_t>()[i] = te::cpu::floatToF16(v);
}

// 1x128 and 128x128 blocks, pow2 and fp32 scales, both copies and each
// alone, partial tiles, rows of odd length; for the larger shapes an
// all-zero tile, a row block of the dtype's smallest subnormal (f32/bf16:
// the scale overflows to FLT_MAX), +inf, NaN and the largest finite value:
// the cuda data, scale_inv (padding included) and columnwise copy equal the
// cpu ones bit for bit.
TEST_P(CudaAbi, QuantizeFp8Block) {
  int32_t t = GetParam();
  struct Shape {
    int64_t rows, cols;
  } shapes[] = {{200, 300}, {256, 384}, {1, 1}, {130, 7}, {16, 200}};
  enum { Both, RowwiseOnly, ColumnwiseOnly };
  const float big = t == TE_RT_DTYPE_F16 ? 65504.0f : 3e38f;
  for (Shape sh : shapes)
    for (int32_t block2d : {0, 1})
      for (int32_t pow2 : {0, 1})
        for (int copies : {Both, RowwiseOnly, ColumnwiseOnly}) {
          const int64_t rows = sh.rows, cols = sh.cols, n = rows * cols;
          Pair &x = random(t, n, -4, 4);
          const bool specials = rows > 128 && cols > 256;
          if (specials) {
            for (int64_t i = 0; i < 128; ++i)
              for (int64_t j = 0; j < 128; ++j)
                setValue(t, x, i * cols + j, 0.0f); // tile (0, 0)
            for (int64_t j = 256; j < cols; ++j) {  // row 140, block 2
              if (t == TE_RT_DTYPE_F32)
                x.h<uint32_t>()[140 * cols + j] = 1;
              else
                x.h<uint16_t>()[140 * cols + j] = 1;
            }
            setValue(t, x, 129 * cols + 129, INFINITY);
            setValue(t, x, 130 * cols + 131, NAN);
            setValue(t, x, (rows - 1) * cols + 255, big);
            upload(x);
          }
          const bool wantRow = copies != ColumnwiseOnly,
                     wantCol = copies != RowwiseOnly;
          Pair &q = output(n),
               &si = output(blockScaleBytes(rows, cols, block2d));
          Pair &qt = output(n),
               &sit = output(blockScaleBytes(cols, rows, block2d));
          BOTH(te_rt_quantize_fp8_block(cpu, t, x.host.data(), rows, cols,
                                        block2d, pow2,
                                        wantRow ? q.host.data() : nullptr,
                                        wantRow ? si.h<float>() : nullptr,
                                        wantCol ? qt.host.data() : nullptr,
                                        wantCol ? sit.h<float>() : nullptr),
               te_rt_quantize_fp8_block(
                   gpu, t, x.dev, rows, cols, block2d, pow2,
                   wantRow ? q.dev : nullptr,
                   wantRow ? static_cast<float *>(si.dev) : nullptr,
                   wantCol ? qt.dev : nullptr,
                   wantCol ? static_cast<float *>(sit.dev) : nullptr));
          std::string tag = std::string("quantize_fp8_block ") +
                            (block2d ? "128x128 " : "1x128 ") +
                            (pow2 ? "pow2 " : "") + std::to_string(rows) + "x" +
                            std::to_string(cols) +
                            (copies == RowwiseOnly      ? " rowwise"
                             : copies == ColumnwiseOnly ? " columnwise"
                                                        : "") +
                            (specials ? " specials" : "");
          expectBytes(tag + " data", q);
          expectBytes(tag + " scale_inv", si);
          expectBytes(tag + " columnwise data", qt);
          expectBytes(tag + " columnwise scale_inv", sit);
        }
}

// Block-scaled FP8 GEMMs, 1-D x 1-D, 1-D x 2-D and 2-D x 1-D, with output
// `dtype`, with and without bias and accumulation. The operands are
// quantized by the cpu backend from data whose magnitude changes by row and
// by 128-column block (so every block has its own scale), the same bytes
// on both backends; shapes: cuBLASLt's block-scaled path on Hopper
// (multiples of 16, one with a partial last 128-block of k) and the
// dequantized fallback (40x72x136). Against the cpu backend's fp32 GEMM of
// the dequantized operands: relative Frobenius error <= 1e-3 + the
// dtype's unit roundoff (see expectNormClose), no NaN.
TEST_P(CudaAbi, GemmFp8Block) {
  int32_t t = GetParam();
  struct Case {
    int64_t m, n, k;
  } cases[] = {{256, 384, 512}, {40, 72, 136}, {128, 256, 208}};
  const int32_t kinds[][2] = {{0, 0}, {0, 1}, {1, 0}};
  for (Case cs : cases)
    for (auto &kd : kinds) {
      // x [rows, k] in f32, quantized on the cpu context (pow2 scales for a,
      // fp32 scales for b), uploaded as is.
      auto operand = [&](int64_t rows, int32_t block2d, int32_t pow2, Pair *&q,
                         Pair *&si) {
        Pair &x = random(TE_RT_DTYPE_F32, rows * cs.k, -4, 4);
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cs.k; ++j)
            x.h<float>()[i * cs.k + j] *=
                std::ldexp(1.0f, int((i * 7 + j / 128 * 3) % 9) - 7);
        q = &make(rows * cs.k);
        si = &make(blockScaleBytes(rows, cs.k, block2d));
        EXPECT_EQ(te_rt_quantize_fp8_block(
                      cpu, TE_RT_DTYPE_F32, x.host.data(), rows, cs.k, block2d,
                      pow2, q->host.data(), si->h<float>(), nullptr, nullptr),
                  0)
            << te_rt_last_error();
        upload(*q);
        upload(*si);
      };
      Pair *a = nullptr, *sa = nullptr, *b = nullptr, *sb = nullptr;
      operand(cs.m, kd[0], 1, a, sa);
      operand(cs.n, kd[1], 0, b, sb);
      Pair &bias = random(t, cs.n);
      for (bool withBias : {false, true})
        for (int32_t acc : {0, 1}) {
          Pair &d = random(t, cs.m * cs.n);
          BOTH(
              te_rt_gemm_fp8_block(cpu, t, a->host.data(), sa->h<float>(),
                                   kd[0], b->host.data(), sb->h<float>(), kd[1],
                                   withBias ? bias.host.data() : nullptr,
                                   d.host.data(), cs.m, cs.n, cs.k, acc),
              te_rt_gemm_fp8_block(
                  gpu, t, a->dev, static_cast<float *>(sa->dev), kd[0], b->dev,
                  static_cast<float *>(sb->dev), kd[1],
                  withBias ? bias.dev : nullptr, d.dev, cs.m, cs.n, cs.k, acc));
          std::string tag =
              std::string("gemm_fp8_block ") + (kd[0] ? "2d" : "1d") + "x" +
              (kd[1] ? "2d " : "1d ") + std::to_string(cs.m) + "x" +
              std::to_string(cs.n) + "x" + std::to_string(cs.k) +
              (withBias ? " +bias" : "") + (acc ? " acc" : "");
          expectNormClose(tag, t, d, 1e-3);
        }
    }
  // 128x128 blocks on both operands are refused on both backends.
  Pair &q = output(16 * 16), &si = output(4 * 4), &d = output(16 * 16 * 4);
  EXPECT_NE(te_rt_gemm_fp8_block(cpu, t, q.host.data(), si.h<float>(), 1,
                                 q.host.data(), si.h<float>(), 1, nullptr,
                                 d.host.data(), 16, 16, 16, 0),
            0);
  EXPECT_NE(te_rt_gemm_fp8_block(gpu, t, q.dev, static_cast<float *>(si.dev), 1,
                                 q.dev, static_cast<float *>(si.dev), 1,
                                 nullptr, d.dev, 16, 16, 16, 0),
            0);
}

// MXFP8 is a Blackwell recipe: on the (Hopper) cuda backend both calls
// fail with a message naming the recipe and the architecture, before any
// device work; the cpu backend runs them.
TEST_P(CudaAbi, MXFP8NeedsBlackwell) {
  if (GetParam() != TE_RT_DTYPE_F32)
    return;
  Pair &x = random(TE_RT_DTYPE_F32, 32 * 32, -1, 1);
  Pair &q = output(32 * 32), &s = output(128 * 4);
  EXPECT_NE(te_rt_quantize_mxfp8(gpu, TE_RT_DTYPE_F32, x.dev, 32, 32,
                                 TE_RT_FP8_E4M3, 1, q.dev,
                                 static_cast<uint8_t *>(s.dev), nullptr,
                                 nullptr),
            0);
  EXPECT_NE(std::string(te_rt_last_error()).find("MXFP8 is a Blackwell (sm_100+) recipe"),
            std::string::npos)
      << te_rt_last_error();
  Pair &d = output(32 * 32 * 4);
  EXPECT_NE(te_rt_gemm_mxfp8(gpu, TE_RT_DTYPE_F32, TE_RT_FP8_E4M3, q.dev,
                             static_cast<uint8_t *>(s.dev), 0, TE_RT_FP8_E4M3,
                             q.dev, static_cast<uint8_t *>(s.dev), 0, 1,
                             nullptr, d.dev, 32, 32, 32, 0),
            0);
  EXPECT_NE(std::string(te_rt_last_error()).find("Hopper (sm_90"),
            std::string::npos)
      << te_rt_last_error();
  EXPECT_EQ(te_rt_quantize_mxfp8(cpu, TE_RT_DTYPE_F32, x.host.data(), 32, 32,
                                 TE_RT_FP8_E4M3, 1, q.host.data(),
                                 reinterpret_cast<uint8_t *>(s.host.data()),
                                 nullptr, nullptr),
            0)
      << te_rt_last_error();
}

// NVFP4 is a Blackwell recipe too: on the (Hopper) cuda backend both calls
// fail with a message naming the recipe and the architecture, before any
// device work; the seed calls work; the cpu backend runs them.
TEST_P(CudaAbi, NVFP4NeedsBlackwell) {
  if (GetParam() != TE_RT_DTYPE_F32)
    return;
  Pair &x = random(TE_RT_DTYPE_F32, 32 * 32, -1, 1);
  Pair &q = output(32 * 16), &s = output(128 * 4), &am = output(4);
  EXPECT_EQ(te_rt_context_set_seed(gpu, 7), 0) << te_rt_last_error();
  EXPECT_NE(te_rt_quantize_nvfp4(gpu, TE_RT_DTYPE_F32, x.dev, 32, 32, 0, 0, 1,
                                 3, 1, q.dev, static_cast<uint8_t *>(s.dev),
                                 static_cast<float *>(am.dev), nullptr, nullptr,
                                 nullptr),
            0);
  EXPECT_NE(std::string(te_rt_last_error())
                .find("NVFP4 is a Blackwell (sm_100+) recipe"),
            std::string::npos)
      << te_rt_last_error();
  // TE's 4-over-6 block scales too.
  EXPECT_NE(te_rt_quantize_nvfp4_4over6(
                gpu, TE_RT_DTYPE_F32, x.dev, 32, 32, 0, 0, 256, 1, q.dev,
                static_cast<uint8_t *>(s.dev), static_cast<float *>(am.dev),
                nullptr, nullptr, nullptr),
            0);
  EXPECT_NE(std::string(te_rt_last_error())
                .find("te_rt_quantize_nvfp4_4over6: NVFP4 is a Blackwell"),
            std::string::npos)
      << te_rt_last_error();
  Pair &d = output(32 * 32 * 4);
  EXPECT_NE(te_rt_gemm_nvfp4(
                gpu, TE_RT_DTYPE_F32, q.dev, static_cast<uint8_t *>(s.dev),
                static_cast<float *>(am.dev), q.dev,
                static_cast<uint8_t *>(s.dev), static_cast<float *>(am.dev), 1,
                nullptr, d.dev, 32, 32, 32, 0),
            0);
  EXPECT_NE(std::string(te_rt_last_error()).find("Hopper (sm_90"),
            std::string::npos)
      << te_rt_last_error();
  EXPECT_EQ(te_rt_quantize_nvfp4(cpu, TE_RT_DTYPE_F32, x.host.data(), 32, 32, 0,
                                 0, 1, 3, 1, q.host.data(),
                                 reinterpret_cast<uint8_t *>(s.host.data()),
                                 am.h<float>(), nullptr, nullptr, nullptr),
            0)
      << te_rt_last_error();
}

} // namespace
