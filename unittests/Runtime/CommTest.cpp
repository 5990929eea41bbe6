//===- CommTest.cpp - the cpu backend's collectives under MPI --*- C++ -*-===//
//
// TERuntimeCommTests: run by ctest under mpiexec with 1, 2 and 4 ranks, and
// with 2 where TE_RT_MPI_MAX_COUNT=7 sends every call in pieces (its main
// calls MPI_Init and MPI_Finalize). Every rank checks its own
// results of te_rt_all_gather, te_rt_reduce_scatter and te_rt_all_reduce on
// a cpu context with an MPI communicator against values it computes by hand
// from (rank, index): bytes for the gather, exact fp32 integers and bf16 /
// f16 sums rounded once for the reductions, SUM and MAX, in place and not;
// then the errors (no communicator, another size, a destroyed communicator
// unset from its context, an MPI communicator on a cuda context). A failed
// check on any rank makes that rank exit non-zero, so mpiexec does too; the
// checks never skip a collective (no ASSERT before one), so that a failure
// on one rank cannot leave the others waiting.
//
//===----------------------------------------------------------------------===//

#include "te/Runtime/TERuntime.h"

#include "cpu/Convert.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace te::cpu;

namespace {

std::string lastError() { return te_rt_last_error(); }

/// A cpu context with MPI_COMM_WORLD's communicator set for group tp.
class MpiComm : public ::testing::Test {
protected:
  void SetUp() override {
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    ctx = te_rt_context_create(TE_RT_BACKEND_CPU);
    ASSERT_NE(ctx, nullptr) << lastError();
    comm = te_rt_comm_wrap_mpi(ctx, nullptr);
    ASSERT_NE(comm, nullptr) << lastError();
    ASSERT_EQ(te_rt_context_set_comm(ctx, TE_RT_GROUP_TP, comm), 0)
        << lastError();
  }
  void TearDown() override {
    te_rt_context_destroy(ctx);
    te_rt_comm_destroy(comm);
  }

  int size = 0, rank = 0;
  te_rt_context *ctx = nullptr;
  te_rt_comm *comm = nullptr;
};

/// The byte rank r sends at index i.
uint8_t gatherByte(int r, int64_t i) {
  return static_cast<uint8_t>(r * 31 + i * 7 + 1);
}

/// A value of rank r at index i that bf16 and f16 both hold exactly
/// (8 significant bits, a small exponent range), so that fp32 sums over
/// at most 4 ranks are exact and only the final rounding is seen.
float value(int r, int64_t i) {
  float m = 1.0f + float((r * 3 + i) % 8) * 0x1p-7f;
  int e = static_cast<int>(i % 5) - 2;
  float v = std::ldexp(m, e);
  return (r + i) % 3 == 0 ? -v : v;
}

uint16_t to16(int32_t t, float v) {
  return t == TE_RT_DTYPE_BF16 ? floatToBF16(v) : floatToF16(v);
}
float from16(int32_t t, uint16_t h) {
  return t == TE_RT_DTYPE_BF16 ? bf16ToFloat(h) : f16ToFloat(h);
}

/// n values of rank r from index `first`, as bytes of dtype t.
std::vector<uint8_t> values(int32_t t, int r, int64_t first, int64_t n) {
  std::vector<uint8_t> b(static_cast<size_t>(n * (t == TE_RT_DTYPE_F32 ? 4 : 2)));
  for (int64_t i = 0; i < n; ++i) {
    float v = value(r, first + i);
    if (t == TE_RT_DTYPE_F32)
      std::memcpy(b.data() + 4 * i, &v, 4);
    else {
      uint16_t h = to16(t, v);
      std::memcpy(b.data() + 2 * i, &h, 2);
    }
  }
  return b;
}

/// The reduction over `size` ranks of index i, rounded once to t, as bytes.
std::vector<uint8_t> reduced(int32_t t, int32_t op, int size, int64_t first,
                             int64_t n) {
  std::vector<uint8_t> b(static_cast<size_t>(n * (t == TE_RT_DTYPE_F32 ? 4 : 2)));
  for (int64_t i = 0; i < n; ++i) {
    float acc = op == TE_RT_REDUCE_SUM ? 0.0f : -INFINITY;
    for (int r = 0; r < size; ++r) {
      float v = value(r, first + i); // exact in every dtype
      acc = op == TE_RT_REDUCE_SUM ? acc + v : std::max(acc, v);
    }
    if (t == TE_RT_DTYPE_F32)
      std::memcpy(b.data() + 4 * i, &acc, 4);
    else {
      uint16_t h = to16(t, acc);
      std::memcpy(b.data() + 2 * i, &h, 2);
    }
  }
  return b;
}

const char *dtypeName(int32_t t) {
  return t == TE_RT_DTYPE_F32 ? "f32" : t == TE_RT_DTYPE_BF16 ? "bf16" : "f16";
}

TEST_F(MpiComm, SizeAndRankAreMpis) {
  // TE_COMM_TEST_FAIL_RANK=r fails this check on rank r only: ctest's
  // mpi2.rank1fails expects mpiexec to fail then.
  if (const char *r = std::getenv("TE_COMM_TEST_FAIL_RANK"))
    EXPECT_NE(std::atoi(r), rank) << "the failure asked for on rank " << rank;
  EXPECT_EQ(te_rt_comm_size(comm), size);
  EXPECT_EQ(te_rt_comm_rank(comm), rank);
  EXPECT_EQ(te_rt_comm_available(TE_RT_COMM_MPI), 1);
}

TEST_F(MpiComm, AllGatherOfBytes) {
  for (int64_t bytes : {int64_t(1), int64_t(37), int64_t(4096 + 3)}) {
    std::vector<uint8_t> send(static_cast<size_t>(bytes)),
        recv(static_cast<size_t>(bytes * size), 0xee);
    for (int64_t i = 0; i < bytes; ++i)
      send[i] = gatherByte(rank, i);
    EXPECT_EQ(te_rt_all_gather(ctx, TE_RT_GROUP_TP, size, send.data(),
                               recv.data(), bytes),
              0)
        << lastError();
    int64_t bad = 0;
    for (int r = 0; r < size; ++r)
      for (int64_t i = 0; i < bytes; ++i)
        bad += recv[r * bytes + i] != gatherByte(r, i);
    EXPECT_EQ(bad, 0) << "bytes_per_rank " << bytes << " on rank " << rank;
    // In place (NCCL's convention): send is this rank's block of recv.
    std::vector<uint8_t> buf(static_cast<size_t>(bytes * size), 0xee);
    std::copy(send.begin(), send.end(), buf.begin() + rank * bytes);
    EXPECT_EQ(te_rt_all_gather(ctx, TE_RT_GROUP_TP, size,
                               buf.data() + rank * bytes, buf.data(), bytes),
              0)
        << lastError();
    EXPECT_EQ(buf, recv) << "in place, bytes_per_rank " << bytes;
  }
  // Zero bytes: a no-op, NULL buffers included.
  EXPECT_EQ(te_rt_all_gather(ctx, TE_RT_GROUP_TP, size, nullptr, nullptr, 0),
            0)
      << lastError();
}

TEST_F(MpiComm, ReduceScatterSumOfExactIntegers) {
  const int64_t count = 5;
  std::vector<float> send(static_cast<size_t>(count * size));
  for (int64_t j = 0; j < count * size; ++j)
    send[j] = float(rank * 1000 + j);
  std::vector<float> recv(count, -1.0f), want(count);
  for (int64_t i = 0; i < count; ++i)
    want[i] = float(1000 * size * (size - 1) / 2 +
                    size * (rank * count + i));
  EXPECT_EQ(te_rt_reduce_scatter(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32,
                                 send.data(), recv.data(), count),
            0)
      << lastError();
  EXPECT_EQ(recv, want) << "rank " << rank;
  // In place: recv is this rank's block of send.
  float *own = send.data() + rank * count;
  EXPECT_EQ(te_rt_reduce_scatter(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32,
                                 send.data(), own, count),
            0)
      << lastError();
  EXPECT_EQ(std::vector<float>(own, own + count), want) << "in place";
  EXPECT_EQ(te_rt_reduce_scatter(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32,
                                 nullptr, nullptr, 0),
            0)
      << lastError();
}

TEST_F(MpiComm, ReduceScatterSumOf16BitValuesRoundsOnce) {
  const int64_t count = 67;
  for (int32_t t : {TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16, TE_RT_DTYPE_F32}) {
    std::vector<uint8_t> send = values(t, rank, 0, count * size);
    std::vector<uint8_t> recv(send.size() / size, 0x5a);
    EXPECT_EQ(te_rt_reduce_scatter(ctx, TE_RT_GROUP_TP, size, t, send.data(),
                                   recv.data(), count),
              0)
        << lastError();
    EXPECT_EQ(recv, reduced(t, TE_RT_REDUCE_SUM, size, rank * count, count))
        << dtypeName(t) << " on rank " << rank;
  }
}

TEST_F(MpiComm, AllReduceSumAndMax) {
  const int64_t count = 131;
  for (int32_t t : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16})
    for (int32_t op : {TE_RT_REDUCE_SUM, TE_RT_REDUCE_MAX}) {
      std::vector<uint8_t> want = reduced(t, op, size, 0, count);
      std::vector<uint8_t> send = values(t, rank, 0, count),
                           recv(send.size(), 0x5a);
      EXPECT_EQ(te_rt_all_reduce(ctx, TE_RT_GROUP_TP, size, t, op,
                                 send.data(), recv.data(), count),
                0)
          << lastError();
      EXPECT_EQ(recv, want) << dtypeName(t) << " op " << op;
      EXPECT_EQ(send, values(t, rank, 0, count)) << "send is left alone";
      // In place.
      EXPECT_EQ(te_rt_all_reduce(ctx, TE_RT_GROUP_TP, size, t, op,
                                 send.data(), send.data(), count),
                0)
          << lastError();
      EXPECT_EQ(send, want) << dtypeName(t) << " op " << op << " in place";
    }
  // A bf16 sum that rounds: rank 0 gives 1, every other rank 2^-8; the
  // exact fp32 sum is rounded once (ties to even), not after every add.
  if (size > 1) {
    uint16_t one = floatToBF16(1.0f), small = floatToBF16(0x1p-8f);
    uint16_t mine = rank == 0 ? one : small, out = 0;
    EXPECT_EQ(te_rt_all_reduce(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_BF16,
                               TE_RT_REDUCE_SUM, &mine, &out, 1),
              0)
        << lastError();
    // 1 + (size - 1) * 2^-8 in fp32, rounded once to bf16 (2^-7 steps).
    EXPECT_EQ(out, floatToBF16(1.0f + float(size - 1) * 0x1p-8f));
    EXPECT_EQ(bf16ToFloat(out),
              size == 2 ? 1.0f : size == 3 ? 1.0f + 0x1p-7f : 1.0f + 0x1p-6f)
        << "size " << size;
  }
  EXPECT_EQ(te_rt_all_reduce(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32,
                             TE_RT_REDUCE_MAX, nullptr, nullptr, 0),
            0)
      << lastError();
}

TEST_F(MpiComm, AnotherMpiCommunicator) {
  // MPI_COMM_SELF: one rank, and the collective still runs (a copy).
  MPI_Comm self = MPI_COMM_SELF;
  te_rt_comm *one = te_rt_comm_wrap_mpi(ctx, &self);
  EXPECT_NE(one, nullptr) << lastError();
  if (one) {
    EXPECT_EQ(te_rt_comm_size(one), 1);
    EXPECT_EQ(te_rt_comm_rank(one), 0);
    te_rt_context *solo = te_rt_context_create(TE_RT_BACKEND_CPU);
    EXPECT_EQ(te_rt_context_set_comm(solo, TE_RT_GROUP_TP, one), 0);
    float s[3] = {1, 2, 3}, r[3] = {};
    EXPECT_EQ(te_rt_all_reduce(solo, TE_RT_GROUP_TP, 1, TE_RT_DTYPE_F32,
                               TE_RT_REDUCE_SUM, s, r, 3),
              0)
        << lastError();
    EXPECT_EQ(std::vector<float>(r, r + 3), std::vector<float>({1, 2, 3}));
    te_rt_context_destroy(solo);
    te_rt_comm_destroy(one);
  }
  // A split communicator: the even and the odd ranks.
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int halfSize = 0;
  MPI_Comm_size(half, &halfSize);
  te_rt_comm *h = te_rt_comm_wrap_mpi(ctx, &half);
  EXPECT_NE(h, nullptr) << lastError();
  if (h) {
    EXPECT_EQ(te_rt_comm_size(h), halfSize);
    EXPECT_EQ(te_rt_comm_rank(h), rank / 2);
    te_rt_context *sub = te_rt_context_create(TE_RT_BACKEND_CPU);
    EXPECT_EQ(te_rt_context_set_comm(sub, TE_RT_GROUP_TP, h), 0);
    float mine = float(rank), sum = -1;
    EXPECT_EQ(te_rt_all_reduce(sub, TE_RT_GROUP_TP, halfSize, TE_RT_DTYPE_F32,
                               TE_RT_REDUCE_SUM, &mine, &sum, 1),
              0)
        << lastError();
    float want = 0;
    for (int r = rank % 2; r < size; r += 2)
      want += float(r);
    EXPECT_EQ(sum, want);
    te_rt_comm_destroy(h); // unsets it on `sub`
    EXPECT_NE(te_rt_all_reduce(sub, TE_RT_GROUP_TP, halfSize, TE_RT_DTYPE_F32,
                               TE_RT_REDUCE_SUM, &mine, &sum, 1),
              0);
    te_rt_context_destroy(sub);
  }
  MPI_Comm_free(&half);
}

TEST_F(MpiComm, Errors) {
  float s[16] = {}, r[64] = {};
  // Another size than the compiled one.
  std::string ranks = std::to_string(size) + (size == 1 ? " rank" : " ranks");
  EXPECT_NE(te_rt_all_gather(ctx, TE_RT_GROUP_TP, size + 1, s, r, 4), 0);
  EXPECT_EQ(lastError(), "te_rt_all_gather: group tp was compiled for " +
                             std::to_string(size + 1) +
                             " ranks, the communicator has " + ranks);
  EXPECT_NE(te_rt_reduce_scatter(ctx, TE_RT_GROUP_TP, size + 2,
                                 TE_RT_DTYPE_F32, s, r, 1),
            0);
  EXPECT_EQ(lastError(), "te_rt_reduce_scatter: group tp was compiled for " +
                             std::to_string(size + 2) +
                             " ranks, the communicator has " + ranks);
  // Counts, dtypes and ops.
  EXPECT_NE(te_rt_all_gather(ctx, TE_RT_GROUP_TP, size, s, r, -1), 0);
  EXPECT_EQ(lastError(), "te_rt_all_gather: bytes_per_rank must be >= 0, got -1");
  if (size > 1) { // (one rank of INT64_MAX bytes fits the arithmetic)
    EXPECT_NE(te_rt_all_gather(ctx, TE_RT_GROUP_TP, size, s, r, INT64_MAX), 0);
    EXPECT_EQ(lastError(), "te_rt_all_gather: nranks * bytes_per_rank = " +
                               std::to_string(size) +
                               " * 9223372036854775807 is too large");
  }
  EXPECT_NE(te_rt_reduce_scatter(ctx, TE_RT_GROUP_TP, size, 3, s, r, 1), 0);
  EXPECT_EQ(lastError(),
            "te_rt_reduce_scatter: unknown dtype 3 (0 f32, 1 bf16, 2 f16)");
  EXPECT_NE(te_rt_reduce_scatter(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32, s,
                                 r, -4),
            0);
  EXPECT_EQ(lastError(), "te_rt_reduce_scatter: recv_count must be >= 0, got -4");
  EXPECT_NE(te_rt_all_reduce(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32, 2, s,
                             r, 4),
            0);
  EXPECT_EQ(lastError(), "te_rt_all_reduce: unknown op 2 (0 sum, 1 max)");
  EXPECT_NE(te_rt_all_reduce(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32,
                             TE_RT_REDUCE_SUM, s, r, -1),
            0);
  EXPECT_EQ(lastError(), "te_rt_all_reduce: count must be >= 0, got -1");
  EXPECT_NE(te_rt_all_reduce(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32,
                             TE_RT_REDUCE_SUM, nullptr, r, 4),
            0);
  EXPECT_EQ(lastError(), "te_rt_all_reduce: send is NULL");
  EXPECT_NE(te_rt_all_gather(ctx, TE_RT_GROUP_TP, size, s, nullptr, 4), 0);
  EXPECT_EQ(lastError(), "te_rt_all_gather: recv is NULL");
  // Overlaps other than the in-place forms (each overlaps on every rank:
  // no rank may go on to the collective alone).
  uint8_t *rb = reinterpret_cast<uint8_t *>(r);
  EXPECT_NE(te_rt_all_reduce(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32,
                             TE_RT_REDUCE_SUM, s, s + 1, 4),
            0);
  EXPECT_EQ(lastError(),
            "te_rt_all_reduce: send and recv overlap (in place is send == "
            "recv)");
  EXPECT_NE(te_rt_all_gather(ctx, TE_RT_GROUP_TP, size, rb + rank * 4 + 1, rb,
                             4),
            0);
  EXPECT_EQ(lastError(), "te_rt_all_gather: send overlaps recv (in place is "
                         "send == recv + rank * bytes_per_rank)");
  EXPECT_NE(te_rt_reduce_scatter(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32, r,
                                 r + rank * 2 + 1, 2),
            0);
  EXPECT_EQ(lastError(), "te_rt_reduce_scatter: recv overlaps send (in place "
                         "is recv == send + rank * recv_count elements)");
}

TEST_F(MpiComm, CommunicatorLifetimes) {
  float s[4] = {1, 2, 3, 4}, r[4] = {};
  // No communicator on a fresh context.
  te_rt_context *other = te_rt_context_create(TE_RT_BACKEND_CPU);
  EXPECT_NE(te_rt_all_reduce(other, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32,
                             TE_RT_REDUCE_SUM, s, r, 4),
            0);
  EXPECT_EQ(lastError(),
            "te_rt_all_reduce: no communicator for group tp on this context "
            "(te_rt_context_set_comm); the entry was compiled for " +
                std::to_string(size) + (size == 1 ? " rank" : " ranks"));
  // One communicator on two contexts; destroying one context leaves the
  // communicator (and the other context's use of it) alone.
  EXPECT_EQ(te_rt_context_set_comm(other, TE_RT_GROUP_TP, comm), 0);
  te_rt_context_destroy(other);
  EXPECT_EQ(te_rt_all_reduce(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32,
                             TE_RT_REDUCE_MAX, s, r, 4),
            0)
      << lastError();
  EXPECT_EQ(std::vector<float>(r, r + 4), std::vector<float>({1, 2, 3, 4}));
  // A destroyed communicator is unset from the contexts it was set on.
  te_rt_comm *extra = te_rt_comm_wrap_mpi(ctx, nullptr);
  EXPECT_NE(extra, nullptr) << lastError();
  EXPECT_EQ(te_rt_context_set_comm(ctx, TE_RT_GROUP_TP, extra), 0);
  te_rt_comm_destroy(extra);
  EXPECT_NE(te_rt_all_reduce(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32,
                             TE_RT_REDUCE_SUM, s, r, 4),
            0);
  EXPECT_EQ(lastError(),
            "te_rt_all_reduce: no communicator for group tp on this context "
            "(te_rt_context_set_comm); the entry was compiled for " +
                std::to_string(size) + (size == 1 ? " rank" : " ranks"));
  // Set again, it works; unset (NULL), it is missing again.
  EXPECT_EQ(te_rt_context_set_comm(ctx, TE_RT_GROUP_TP, comm), 0);
  EXPECT_EQ(te_rt_all_reduce(ctx, TE_RT_GROUP_TP, size, TE_RT_DTYPE_F32,
                             TE_RT_REDUCE_SUM, s, r, 4),
            0)
      << lastError();
  EXPECT_EQ(te_rt_context_set_comm(ctx, TE_RT_GROUP_TP, nullptr), 0);
  EXPECT_NE(te_rt_all_gather(ctx, TE_RT_GROUP_TP, size, s, r, 0), 0);
  EXPECT_EQ(te_rt_context_set_comm(ctx, TE_RT_GROUP_TP, comm), 0);
}

TEST_F(MpiComm, MpiCommunicatorOnACudaContextIsAnError) {
  if (!te_rt_backend_available(TE_RT_BACKEND_CUDA))
    GTEST_SKIP() << "no CUDA device visible: an MPI communicator on a cuda "
                    "context is not exercised here";
  te_rt_context *gpu = te_rt_context_create(TE_RT_BACKEND_CUDA);
  ASSERT_NE(gpu, nullptr) << lastError();
  EXPECT_EQ(te_rt_comm_wrap_mpi(gpu, nullptr), nullptr);
  EXPECT_EQ(lastError(), "te_rt_comm_wrap_mpi: an MPI communicator needs a "
                         "cpu context (this context runs on cuda)");
  EXPECT_NE(te_rt_context_set_comm(gpu, TE_RT_GROUP_TP, comm), 0);
  EXPECT_EQ(lastError(), "te_rt_context_set_comm: an MPI communicator needs "
                         "a cpu context (this context runs on cuda)");
  te_rt_context_destroy(gpu);
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  // Every rank learns whether any failed, and exits non-zero if so.
  int any = rc;
  MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any != 0 && rc == 0 && rank == 0)
    std::fprintf(stderr, "TERuntimeCommTests: a test failed on another rank\n");
  MPI_Finalize();
  return any != 0 ? 1 : 0;
}
