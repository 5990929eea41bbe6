//===- AbiCommTest.cpp - runtime ABI: bias add, communicators ---*- C++ -*-===//
//
// The tensor-parallel calls of the ABI on a cpu context, in one process
// (the fixture is AbiFixture.h): te_rt_bias_add against hand-computed sums
// (f32, bf16, f16, in place), and the argument checks of the communicator
// calls and collectives that need no second rank (no communicator set, bad
// groups, sizes and ops, a destroyed communicator unset from its context).
// The collectives themselves run under mpiexec in CommTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "AbiFixture.h"

using namespace te::test;

namespace {

//===----------------------------------------------------------------------===//
// te_rt_bias_add
//===----------------------------------------------------------------------===//

TEST_F(Abi, BiasAddAddsTheBiasToEveryRow) {
  // x [3, 4], bias [4]: exactly representable in bf16 and f16, and sums
  // that are too.
  const std::vector<float> x = {1,  2,  3,  4,  -1, -2, -3, -4,
                                0.5f, 0.25f, 8, 16};
  const std::vector<float> bias = {10, 20, -0.5f, 0.125f};
  const std::vector<float> want = {11,    22,     2.5f,  4.125f,
                                   9,     18,     -3.5f, -3.875f,
                                   10.5f, 20.25f, 7.5f,  16.125f};
  for (int32_t t : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16}) {
    std::vector<uint8_t> bx = bytesOf(t, x), bb = bytesOf(t, bias),
                         out(bx.size(), 0x5a);
    ASSERT_EQ(te_rt_bias_add(ctx, t, bx.data(), bb.data(), out.data(), 3, 4),
              0)
        << lastError();
    EXPECT_EQ(out, bytesOf(t, want)) << "dtype " << t;
    // In place: out == x.
    ASSERT_EQ(te_rt_bias_add(ctx, t, bx.data(), bb.data(), bx.data(), 3, 4), 0)
        << lastError();
    EXPECT_EQ(bx, bytesOf(t, want)) << "dtype " << t << " in place";
  }
}

TEST_F(Abi, BiasAddRoundsTheFp32SumOnce) {
  // bf16: x = 1 and bias = 2^-8 + 2^-9 (both exact) sum in fp32 to
  // 1 + 2^-8 + 2^-9, rounded once to nearest: 1 + 2^-7.
  std::vector<float> x = {1.0f}, bias = {0x1.8p-8f};
  std::vector<uint8_t> bx = bytesOf(TE_RT_DTYPE_BF16, x);
  std::vector<uint16_t> bb = {floatToBF16(0x1.8p-8f)};
  ASSERT_EQ(bf16ToFloat(bb[0]), 0x1.8p-8f);
  uint16_t out = 0;
  ASSERT_EQ(
      te_rt_bias_add(ctx, TE_RT_DTYPE_BF16, bx.data(), bb.data(), &out, 1, 1),
      0)
      << lastError();
  EXPECT_EQ(out, floatToBF16(1.0f + 0x1.8p-8f));
  EXPECT_EQ(bf16ToFloat(out), 1.0f + 0x1p-7f);
  // Zero rows or columns write nothing.
  float sentinel = 7.0f;
  EXPECT_EQ(te_rt_bias_add(ctx, TE_RT_DTYPE_F32, &sentinel, &sentinel,
                           &sentinel, 0, 1),
            0);
  EXPECT_EQ(te_rt_bias_add(ctx, TE_RT_DTYPE_F32, &sentinel, &sentinel,
                           &sentinel, 3, 0),
            0);
  EXPECT_EQ(te_rt_bias_add(ctx, TE_RT_DTYPE_BF16, &sentinel, &sentinel,
                           &sentinel, 0, INT64_MAX),
            0)
      << lastError();
  EXPECT_EQ(sentinel, 7.0f);
}

TEST_F(Abi, BiasAddErrors) {
  float b[16] = {}, o[16] = {};
  EXPECT_FAILS_WITH(te_rt_bias_add(nullptr, TE_RT_DTYPE_F32, b, b, o, 2, 2),
                    "te_rt_bias_add: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_bias_add(ctx, 3, b, b, o, 2, 2),
                    "te_rt_bias_add: unknown dtype 3 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(te_rt_bias_add(ctx, -1, b, b, o, 2, 2),
                    "te_rt_bias_add: unknown dtype -1 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(te_rt_bias_add(ctx, TE_RT_DTYPE_F32, b, b, o, -1, 2),
                    "te_rt_bias_add: rows must be >= 0, got -1");
  EXPECT_FAILS_WITH(te_rt_bias_add(ctx, TE_RT_DTYPE_F32, b, b, o, 2, -2),
                    "te_rt_bias_add: cols must be >= 0, got -2");
  EXPECT_FAILS_WITH(
      te_rt_bias_add(ctx, TE_RT_DTYPE_F32, b, b, o, int64_t(1) << 40,
                     int64_t(1) << 40),
      "te_rt_bias_add: rows * cols = 1099511627776 * 1099511627776 is too "
      "large");
  EXPECT_FAILS_WITH(te_rt_bias_add(ctx, TE_RT_DTYPE_F32, nullptr, b, o, 2, 2),
                    "te_rt_bias_add: x is NULL");
  EXPECT_FAILS_WITH(te_rt_bias_add(ctx, TE_RT_DTYPE_F32, b, nullptr, o, 2, 2),
                    "te_rt_bias_add: bias is NULL");
  EXPECT_FAILS_WITH(te_rt_bias_add(ctx, TE_RT_DTYPE_F32, b, b + 8, nullptr, 2,
                                   2),
                    "te_rt_bias_add: out is NULL");
  EXPECT_FAILS_WITH(te_rt_bias_add(ctx, TE_RT_DTYPE_F32, b, o, b + 1, 2, 2),
                    "te_rt_bias_add: out overlaps x (in place is out == x)");
  EXPECT_FAILS_WITH(te_rt_bias_add(ctx, TE_RT_DTYPE_F32, b, o + 2, o, 2, 2),
                    "te_rt_bias_add: out overlaps bias");
  // A failed call leaves out alone.
  for (float v : o)
    EXPECT_EQ(v, 0.0f);
}

//===----------------------------------------------------------------------===//
// Communicators and collectives without a second rank
//===----------------------------------------------------------------------===//

TEST_F(Abi, CollectivesNeedACommunicatorOfTheCompiledSize) {
  float s[8] = {}, r[8] = {};
  EXPECT_FAILS_WITH(
      te_rt_all_gather(ctx, TE_RT_GROUP_TP, 2, s, r, 16),
      "te_rt_all_gather: no communicator for group tp on this context "
      "(te_rt_context_set_comm); the entry was compiled for 2 ranks");
  EXPECT_FAILS_WITH(
      te_rt_reduce_scatter(ctx, TE_RT_GROUP_TP, 4, TE_RT_DTYPE_F32, s, r, 2),
      "te_rt_reduce_scatter: no communicator for group tp on this context "
      "(te_rt_context_set_comm); the entry was compiled for 4 ranks");
  // One rank is no exception: a missing communicator is never a silent
  // single-rank run.
  EXPECT_FAILS_WITH(
      te_rt_all_reduce(ctx, TE_RT_GROUP_TP, 1, TE_RT_DTYPE_F32,
                       TE_RT_REDUCE_SUM, s, r, 8),
      "te_rt_all_reduce: no communicator for group tp on this context "
      "(te_rt_context_set_comm); the entry was compiled for 1 rank");
  // Zero counts are not a way around it either.
  EXPECT_FAILS_WITH(
      te_rt_all_gather(ctx, TE_RT_GROUP_TP, 2, s, r, 0),
      "te_rt_all_gather: no communicator for group tp on this context "
      "(te_rt_context_set_comm); the entry was compiled for 2 ranks");
}

TEST_F(Abi, CommunicatorArgumentErrors) {
  float s[8] = {}, r[8] = {};
  EXPECT_FAILS_WITH(te_rt_all_gather(nullptr, TE_RT_GROUP_TP, 2, s, r, 16),
                    "te_rt_all_gather: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_all_gather(ctx, 1, 2, s, r, 16),
                    "te_rt_all_gather: unknown group 1 (0 tp)");
  EXPECT_FAILS_WITH(te_rt_all_gather(ctx, -1, 2, s, r, 16),
                    "te_rt_all_gather: unknown group -1 (0 tp)");
  EXPECT_FAILS_WITH(te_rt_all_gather(ctx, TE_RT_GROUP_TP, 0, s, r, 16),
                    "te_rt_all_gather: nranks must be > 0, got 0");
  EXPECT_FAILS_WITH(
      te_rt_reduce_scatter(ctx, TE_RT_GROUP_COUNT, 2, TE_RT_DTYPE_F32, s, r,
                           2),
      "te_rt_reduce_scatter: unknown group 1 (0 tp)");
  EXPECT_FAILS_WITH(te_rt_all_reduce(ctx, TE_RT_GROUP_TP, -3, TE_RT_DTYPE_F32,
                                     TE_RT_REDUCE_SUM, s, r, 8),
                    "te_rt_all_reduce: nranks must be > 0, got -3");
  EXPECT_FAILS_WITH(te_rt_context_set_comm(nullptr, TE_RT_GROUP_TP, nullptr),
                    "te_rt_context_set_comm: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_context_set_comm(ctx, 7, nullptr),
                    "te_rt_context_set_comm: unknown group 7 (0 tp)");
  // Unsetting what is not set is fine.
  EXPECT_EQ(te_rt_context_set_comm(ctx, TE_RT_GROUP_TP, nullptr), 0);
  EXPECT_EQ(te_rt_comm_size(nullptr), -1);
  EXPECT_EQ(lastError(), "te_rt_comm_size: comm is NULL");
  EXPECT_EQ(te_rt_comm_rank(nullptr), -1);
  EXPECT_EQ(lastError(), "te_rt_comm_rank: comm is NULL");
  te_rt_comm_destroy(nullptr); // fine
  EXPECT_EQ(te_rt_comm_available(5), 0);
  EXPECT_EQ(lastError(),
            "te_rt_comm_available: unknown communicator kind 5 (0 NCCL, 1 "
            "MPI)");
  // NCCL needs a cuda context.
  char id[128] = {};
  EXPECT_EQ(te_rt_comm_create_nccl(ctx, id, 1, 0), nullptr);
  EXPECT_EQ(lastError(), "te_rt_comm_create_nccl: an NCCL communicator needs "
                         "a cuda context (this context runs on cpu)");
  EXPECT_EQ(te_rt_comm_wrap_nccl(ctx, id), nullptr);
  EXPECT_EQ(lastError(), "te_rt_comm_wrap_nccl: an NCCL communicator needs a "
                         "cuda context (this context runs on cpu)");
  EXPECT_EQ(te_rt_comm_create_nccl(nullptr, id, 1, 0), nullptr);
  EXPECT_EQ(lastError(), "te_rt_comm_create_nccl: ctx is NULL");
  EXPECT_EQ(te_rt_comm_wrap_mpi(nullptr, nullptr), nullptr);
  EXPECT_EQ(lastError(), "te_rt_comm_wrap_mpi: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_nccl_unique_id(nullptr),
                    "te_rt_nccl_unique_id: id128 is NULL");
}

TEST_F(Abi, NcclUniqueIdLoadsNcclAtRunTime) {
  // No device is needed for an id: libnccl is dlopen'ed (TE_RT_NCCL_LIBRARY
  // or libnccl.so.2) on first use; without it, or without CUDA built in,
  // the reason is the error.
  char id[128] = {};
  if (te_rt_nccl_unique_id(id) == 0) {
    int nonzero = 0;
    for (char b : id)
      nonzero += b != 0;
    EXPECT_GT(nonzero, 0);
    return;
  }
  std::string e = lastError();
  EXPECT_TRUE(e.rfind("te_rt_nccl_unique_id: cannot load NCCL (", 0) == 0 ||
              e.rfind("te_rt_nccl_unique_id: NCCL needs the cuda backend", 0) ==
                  0)
      << e;
}

TEST_F(Abi, WrapMpiWithoutMpiInitIsAnError) {
  // This process never calls MPI_Init (the MPI tests are CommTest.cpp).
  EXPECT_EQ(te_rt_comm_wrap_mpi(ctx, nullptr), nullptr);
  std::string e = lastError();
  if (te_rt_comm_available(TE_RT_COMM_MPI)) {
    // libmpi loaded on demand (TE_RT_MPI_LIBRARY or the default soname).
    EXPECT_EQ(e.rfind("te_rt_comm_wrap_mpi: MPI is not initialized in ", 0), 0u)
        << e;
    return;
  }
  // Built without MPI, or libmpi cannot be loaded: wrap says why, as
  // te_rt_comm_available does.
  std::string why = lastError();
  const std::string prefix = "te_rt_comm_available: ";
  ASSERT_EQ(why.rfind(prefix, 0), 0u) << why;
  EXPECT_EQ(e, "te_rt_comm_wrap_mpi: " + why.substr(prefix.size()));
}

} // namespace
