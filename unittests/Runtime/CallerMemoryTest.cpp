//===- CallerMemoryTest.cpp - the caller's stream, arena, workspace -*- C++ -*-===//
//
// te_rt_context_set_stream / _set_arena / _set_workspace and the arena
// calls compiled entries make (te_rt_arena_acquire / _release): what a
// PyTorch op relies on to run on torch's current stream with memory from
// its caching allocator. On the cpu backend: the argument checks and the
// arena hand-out; on a CUDA device (skipped without one): the legacy
// default stream (0) as the context's stream, and a caller workspace that
// gives the same bits as the context's own, refuses a call whose scratch
// does not fit with the bytes it needed, and works again with that much.
//
//===----------------------------------------------------------------------===//

#include "CudaAbiFixture.h"
#include "te/Runtime/TERuntime.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

std::string lastError() { return te_rt_last_error(); }

class CpuCallerMemory : public ::testing::Test {
protected:
  void SetUp() override {
    ctx = te_rt_context_create(TE_RT_BACKEND_CPU);
    ASSERT_NE(ctx, nullptr) << lastError();
  }
  void TearDown() override { te_rt_context_destroy(ctx); }
  te_rt_context *ctx = nullptr;
};

TEST_F(CpuCallerMemory, StreamsAreCudaOnly) {
  EXPECT_EQ(te_rt_context_set_stream(ctx, nullptr), 0) << lastError();
  EXPECT_EQ(te_rt_context_stream(ctx), nullptr);
  int dummy;
  EXPECT_NE(te_rt_context_set_stream(ctx, &dummy), 0);
  EXPECT_NE(lastError().find("te_rt_context_set_stream: stream"),
            std::string::npos)
      << lastError();
  EXPECT_NE(lastError().find("a cpu context has no streams"),
            std::string::npos)
      << lastError();
  EXPECT_NE(te_rt_context_set_stream(nullptr, nullptr), 0);
}

TEST_F(CpuCallerMemory, ArenaIsHandedOutWhenLargeEnough) {
  void *arena = te_rt_alloc(ctx, 4096);
  ASSERT_NE(arena, nullptr);
  ASSERT_EQ(te_rt_context_set_arena(ctx, arena, 4096), 0) << lastError();
  EXPECT_EQ(te_rt_arena_acquire(ctx, 4096), arena);
  EXPECT_EQ(te_rt_arena_acquire(ctx, 0), arena);
  te_rt_arena_release(ctx, arena); // not freed: the caller's
  EXPECT_EQ(te_rt_arena_acquire(ctx, 4097), nullptr);
  EXPECT_EQ(lastError(), "te_rt_arena_acquire: the caller's arena has 4096 "
                         "bytes; this entry needs 4097 "
                         "(te_module_entry_arena_bytes at these dims)");
  // Without a caller arena, acquire allocates and release frees (ASan
  // reports a leak or a double free otherwise).
  ASSERT_EQ(te_rt_context_set_arena(ctx, nullptr, 0), 0);
  void *own = te_rt_arena_acquire(ctx, 100);
  ASSERT_NE(own, nullptr);
  EXPECT_NE(own, arena);
  te_rt_arena_release(ctx, own);
  te_rt_arena_release(ctx, nullptr);
  // An arena of no bytes (a compiled entry whose slots are all empty at its
  // dims) allocates nothing: a fixed aligned address, the same each call,
  // that release leaves alone (ASan reports a free of it).
  void *none = te_rt_arena_acquire(ctx, 0);
  ASSERT_NE(none, nullptr) << lastError();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(none) % 256, 0u);
  EXPECT_EQ(te_rt_arena_acquire(ctx, 0), none);
  EXPECT_NE(none, own);
  te_rt_arena_release(ctx, none);
  te_rt_arena_release(ctx, none);
  te_rt_free(ctx, arena);
}

TEST_F(CpuCallerMemory, BadArenasAndWorkspacesAreRefused) {
  void *buf = te_rt_alloc(ctx, te_rt_workspace_bytes() + 512);
  ASSERT_NE(buf, nullptr);
  char *odd = static_cast<char *>(buf) + 8;
  EXPECT_NE(te_rt_context_set_arena(ctx, odd, 64), 0);
  EXPECT_EQ(lastError(), "te_rt_context_set_arena: ptr is not 256-byte aligned");
  EXPECT_NE(te_rt_context_set_arena(ctx, buf, -1), 0);
  EXPECT_NE(lastError().find("bytes"), std::string::npos) << lastError();
  EXPECT_NE(te_rt_context_set_workspace(ctx, odd, te_rt_workspace_bytes()), 0);
  EXPECT_EQ(lastError(),
            "te_rt_context_set_workspace: ptr is not 256-byte aligned");
  EXPECT_NE(te_rt_context_set_workspace(ctx, buf, 1024), 0);
  EXPECT_EQ(lastError(), "te_rt_context_set_workspace: a workspace of 1024 "
                         "bytes is smaller than the GEMM workspace (33554432 "
                         "bytes)");
  EXPECT_EQ(te_rt_context_set_workspace(ctx, buf, te_rt_workspace_bytes()), 0);
  EXPECT_EQ(te_rt_context_workspace_needed(ctx), 0);
  EXPECT_EQ(te_rt_context_set_workspace(ctx, nullptr, 0), 0);
  EXPECT_EQ(te_rt_gemm_workspace_bytes(), int64_t(32) << 20);
  EXPECT_EQ(te_rt_workspace_bytes(), int64_t(48) << 20);
  EXPECT_EQ(te_rt_arena_acquire(nullptr, 1), nullptr);
  te_rt_free(ctx, buf);
}

//===----------------------------------------------------------------------===//
// CUDA
//===----------------------------------------------------------------------===//

class CudaCallerMemory : public te::test::CudaContextTest {
protected:
  CudaCallerMemory()
      : CudaContextTest("the caller's stream and workspace") {}
  /// A [rows, cols] f32 matrix of seeded values, on the device.
  void *matrix(int64_t rows, int64_t cols) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> host(static_cast<size_t>(rows * cols));
    for (float &v : host)
      v = dist(rng);
    void *p = alloc(rows * cols * 4);
    put(p, host);
    return p;
  }
};

// The legacy default stream (0) is a stream like any other: the work of
// norm + bias gradient queued on it gives the bits of the context's own
// stream.
TEST_F(CudaCallerMemory, LegacyDefaultStreamGivesTheSameBits) {
  const int64_t rows = 96, cols = 512;
  void *x = matrix(rows, cols), *gamma = matrix(1, cols), *beta = matrix(1, cols);
  auto run = [&] {
    void *z = alloc(rows * cols * 4), *mu = alloc(rows * 4),
         *rs = alloc(rows * 4), *db = alloc(cols * 4);
    EXPECT_EQ(te_rt_norm_fwd(gpu, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32, x,
                             gamma, beta, 1e-5, 0, rows, cols, z,
                             static_cast<float *>(mu),
                             static_cast<float *>(rs)),
              0)
        << lastError();
    EXPECT_EQ(te_rt_bias_grad(gpu, TE_RT_DTYPE_F32, z, db, rows, cols), 0)
        << lastError();
    std::vector<uint8_t> out = get(z, rows * cols * 4);
    std::vector<uint8_t> d = get(db, cols * 4);
    out.insert(out.end(), d.begin(), d.end());
    return out;
  };
  void *own = te_rt_context_stream(gpu);
  EXPECT_NE(own, nullptr);
  std::vector<uint8_t> a = run();
  ASSERT_EQ(te_rt_context_set_stream(gpu, nullptr), 0) << lastError();
  EXPECT_EQ(te_rt_context_stream(gpu), nullptr);
  std::vector<uint8_t> b = run();
  EXPECT_EQ(a, b);
  ASSERT_EQ(te_rt_context_set_stream(gpu, own), 0) << lastError();
}

// A caller workspace: the same bits as the context's own; one with no room
// for the scratch refuses the call, saying what it needs, and that much
// works.
TEST_F(CudaCallerMemory, WorkspaceTooSmallSaysWhatItNeeds) {
  const int64_t rows = 4096, cols = 1024;
  void *dy = matrix(rows, cols);
  void *db = alloc(cols * 4);
  ASSERT_EQ(te_rt_bias_grad(gpu, TE_RT_DTYPE_F32, dy, db, rows, cols), 0)
      << lastError();
  std::vector<uint8_t> own = get(db, cols * 4);

  void *ws = alloc(te_rt_workspace_bytes());
  ASSERT_EQ(te_rt_context_set_workspace(gpu, ws, te_rt_workspace_bytes()), 0);
  void *db2 = alloc(cols * 4);
  ASSERT_EQ(te_rt_bias_grad(gpu, TE_RT_DTYPE_F32, dy, db2, rows, cols), 0)
      << lastError();
  EXPECT_EQ(get(db2, cols * 4), own);

  int64_t tight = te_rt_gemm_workspace_bytes();
  void *small = alloc(tight);
  ASSERT_EQ(te_rt_context_set_workspace(gpu, small, tight), 0);
  EXPECT_NE(te_rt_bias_grad(gpu, TE_RT_DTYPE_F32, dy, db2, rows, cols), 0);
  EXPECT_NE(lastError().find("the caller's workspace is too small"),
            std::string::npos)
      << lastError();
  int64_t needed = te_rt_context_workspace_needed(gpu);
  EXPECT_GT(needed, tight);
  void *enough = alloc(needed);
  ASSERT_EQ(te_rt_context_set_workspace(gpu, enough, needed), 0);
  EXPECT_EQ(te_rt_context_workspace_needed(gpu), 0);
  void *db3 = alloc(cols * 4);
  ASSERT_EQ(te_rt_bias_grad(gpu, TE_RT_DTYPE_F32, dy, db3, rows, cols), 0)
      << lastError();
  EXPECT_EQ(get(db3, cols * 4), own);
  ASSERT_EQ(te_rt_context_set_workspace(gpu, nullptr, 0), 0);
}

} // namespace
