//===- CudaCommTest.cpp - cuda: bias add and NCCL collectives --*- C++ -*-===//
//
// The tensor-parallel calls on a cuda context (the fixtures are
// CudaAbiFixture.h; skipped without a CUDA device): te_rt_bias_add against
// the cpu backend (bit for bit: one fp32 add, one rounding), and a 1-rank
// NCCL communicator (te_rt_nccl_unique_id + te_rt_comm_create_nccl) running
// the real te_rt_all_gather, te_rt_reduce_scatter and te_rt_all_reduce on
// the context's stream, in place and not. Skipped, with the reason, when
// libnccl cannot be loaded.
//
//===----------------------------------------------------------------------===//

#include "CudaAbiFixture.h"

using namespace te::test;

namespace {

TEST_P(CudaAbi, BiasAdd) {
  int32_t t = GetParam();
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{0, 8},
                            {1, 1},
                            {3, 7},
                            {64, 8},
                            {1000, 77},
                            {512, 1024}}) {
    Pair &x = random(t, rows * cols), &b = random(t, cols),
         &out = output(rows * cols * sizeOf(t));
    BOTH(te_rt_bias_add(cpu, t, x.host.data(), b.host.data(), out.host.data(),
                        rows, cols),
         te_rt_bias_add(gpu, t, x.dev, b.dev, out.dev, rows, cols));
    std::string what = "bias_add " + std::to_string(rows) + "x" +
                       std::to_string(cols);
    expectClose(what.c_str(), t, out, -1);
    // In place (out == x).
    BOTH(te_rt_bias_add(cpu, t, x.host.data(), b.host.data(), x.host.data(),
                        rows, cols),
         te_rt_bias_add(gpu, t, x.dev, b.dev, x.dev, rows, cols));
    expectClose((what + " in place").c_str(), t, x, -1);
  }
}

/// A cuda context with a 1-rank NCCL communicator set for group tp;
/// skipped when NCCL cannot be loaded.
class CudaNccl : public CudaContextTest {
protected:
  CudaNccl() : CudaContextTest("the NCCL collectives") {}
  void SetUp() override {
    CudaContextTest::SetUp();
    if (IsSkipped() || HasFatalFailure())
      return;
    if (!te_rt_comm_available(TE_RT_COMM_NCCL))
      GTEST_SKIP() << "NCCL is not usable, the NCCL collectives are not "
                      "exercised here: "
                   << lastError();
    char id[128] = {};
    ASSERT_EQ(te_rt_nccl_unique_id(id), 0) << lastError();
    comm = te_rt_comm_create_nccl(gpu, id, 1, 0);
    ASSERT_NE(comm, nullptr) << lastError();
    ASSERT_EQ(te_rt_comm_size(comm), 1);
    ASSERT_EQ(te_rt_comm_rank(comm), 0);
    ASSERT_EQ(te_rt_context_set_comm(gpu, TE_RT_GROUP_TP, comm), 0)
        << lastError();
  }
  void TearDown() override {
    if (gpu)
      te_rt_synchronize(gpu);
    CudaContextTest::TearDown();
    te_rt_comm_destroy(comm);
  }
  te_rt_comm *comm = nullptr;
};

template <typename T> std::vector<T> as(const std::vector<uint8_t> &b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

TEST_F(CudaNccl, OneRankCollectivesRun) {
  // All-gather of bytes: one rank's block is the whole result.
  const int64_t bytes = 4099;
  std::vector<uint8_t> src(bytes);
  for (int64_t i = 0; i < bytes; ++i)
    src[i] = static_cast<uint8_t>(i * 7 + 3);
  void *send = alloc(bytes), *recv = alloc(bytes);
  put(send, src);
  ASSERT_EQ(te_rt_zero(gpu, recv, bytes), 0) << lastError();
  ASSERT_EQ(te_rt_all_gather(gpu, TE_RT_GROUP_TP, 1, send, recv, bytes), 0)
      << lastError();
  EXPECT_EQ(get(recv, bytes), src);
  // In place (send == recv + rank * bytes).
  ASSERT_EQ(te_rt_all_gather(gpu, TE_RT_GROUP_TP, 1, recv, recv, bytes), 0)
      << lastError();
  EXPECT_EQ(get(recv, bytes), src);

  // Reductions of one rank are copies, rounding nothing: f32, bf16, f16.
  const int64_t n = 1000;
  std::vector<float> f(n);
  for (int64_t i = 0; i < n; ++i)
    f[i] = float(i % 17) * 0.25f - 2.0f;
  for (int32_t t : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16}) {
    std::vector<uint8_t> in(n * sizeOf(t));
    for (int64_t i = 0; i < n; ++i) {
      if (t == TE_RT_DTYPE_F32)
        std::memcpy(in.data() + 4 * i, &f[i], 4);
      else {
        uint16_t h = t == TE_RT_DTYPE_BF16 ? te::cpu::floatToBF16(f[i])
                                           : te::cpu::floatToF16(f[i]);
        std::memcpy(in.data() + 2 * i, &h, 2);
      }
    }
    void *a = alloc(n * sizeOf(t)), *b = alloc(n * sizeOf(t));
    put(a, in);
    ASSERT_EQ(te_rt_zero(gpu, b, n * sizeOf(t)), 0) << lastError();
    ASSERT_EQ(
        te_rt_reduce_scatter(gpu, TE_RT_GROUP_TP, 1, t, a, b, n), 0)
        << lastError();
    EXPECT_EQ(get(b, n * sizeOf(t)), in) << dtypeName(t) << " reduce_scatter";
    for (int32_t op : {TE_RT_REDUCE_SUM, TE_RT_REDUCE_MAX}) {
      ASSERT_EQ(te_rt_zero(gpu, b, n * sizeOf(t)), 0) << lastError();
      ASSERT_EQ(te_rt_all_reduce(gpu, TE_RT_GROUP_TP, 1, t, op, a, b, n), 0)
          << lastError();
      EXPECT_EQ(get(b, n * sizeOf(t)), in) << dtypeName(t) << " op " << op;
      ASSERT_EQ(te_rt_all_reduce(gpu, TE_RT_GROUP_TP, 1, t, op, a, a, n), 0)
          << lastError();
      EXPECT_EQ(get(a, n * sizeOf(t)), in) << dtypeName(t) << " in place";
    }
  }
  // The communicator's size is checked against the compiled one.
  EXPECT_NE(te_rt_all_gather(gpu, TE_RT_GROUP_TP, 2, send, recv, 1), 0);
  EXPECT_EQ(lastError(), "te_rt_all_gather: group tp was compiled for 2 "
                         "ranks, the communicator has 1 rank");
}

TEST_F(CudaNccl, CommunicatorKindsAndLifetimes) {
  // An NCCL communicator on a cpu context is an error.
  te_rt_context *cpu = te_rt_context_create(TE_RT_BACKEND_CPU);
  ASSERT_NE(cpu, nullptr) << lastError();
  EXPECT_NE(te_rt_context_set_comm(cpu, TE_RT_GROUP_TP, comm), 0);
  EXPECT_EQ(lastError(), "te_rt_context_set_comm: an NCCL communicator needs "
                         "a cuda context (this context runs on cpu)");
  te_rt_context_destroy(cpu);
  // An MPI communicator needs a cpu context.
  EXPECT_EQ(te_rt_comm_wrap_mpi(gpu, nullptr), nullptr);
  EXPECT_EQ(lastError(), "te_rt_comm_wrap_mpi: an MPI communicator needs a "
                         "cpu context (this context runs on cuda)");
  // rank out of range, NULL id.
  char id[128] = {};
  EXPECT_EQ(te_rt_comm_create_nccl(gpu, id, 2, 2), nullptr);
  EXPECT_EQ(lastError(), "te_rt_comm_create_nccl: rank must be in [0, nranks "
                         "= 2), got 2");
  EXPECT_EQ(te_rt_comm_create_nccl(gpu, nullptr, 1, 0), nullptr);
  EXPECT_EQ(lastError(), "te_rt_comm_create_nccl: id128 is NULL");
  EXPECT_EQ(te_rt_comm_wrap_nccl(gpu, nullptr), nullptr);
  EXPECT_EQ(lastError(), "te_rt_comm_wrap_nccl: nccl_comm is NULL");
  // A second context borrowing the same communicator; destroying the
  // communicator unsets it on both.
  te_rt_context *other = te_rt_context_create(TE_RT_BACKEND_CUDA);
  ASSERT_NE(other, nullptr) << lastError();
  EXPECT_EQ(te_rt_context_set_comm(other, TE_RT_GROUP_TP, comm), 0);
  te_rt_synchronize(gpu);
  te_rt_comm_destroy(comm);
  comm = nullptr;
  void *buf = alloc(16);
  EXPECT_NE(te_rt_all_reduce(gpu, TE_RT_GROUP_TP, 1, TE_RT_DTYPE_F32,
                             TE_RT_REDUCE_SUM, buf, buf, 4),
            0);
  EXPECT_EQ(lastError(),
            "te_rt_all_reduce: no communicator for group tp on this context "
            "(te_rt_context_set_comm); the entry was compiled for 1 rank");
  EXPECT_NE(te_rt_all_reduce(other, TE_RT_GROUP_TP, 1, TE_RT_DTYPE_F32,
                             TE_RT_REDUCE_SUM, buf, buf, 4),
            0);
  te_rt_context_destroy(other);
}

} // namespace
