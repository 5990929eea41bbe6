//===- AbiContextTest.cpp - runtime ABI: contexts and buffers ---*- C++ -*-===//
//
// The te_rt_* calls through the C ABI (split from AbiTest.cpp by family;
// the fixture is AbiFixture.h): contexts and buffers.
//
//===----------------------------------------------------------------------===//

#include "AbiFixture.h"
#include "Backend.h"

using namespace te::test;

namespace {

//===----------------------------------------------------------------------===//
// Contexts and buffers
//===----------------------------------------------------------------------===//

TEST(AbiContext, CpuCreateAndDestroy) {
  ScopedEnv env("TE_RT_BACKEND", nullptr);
  te_rt_context *ctx = te_rt_context_create(TE_RT_BACKEND_CPU);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(te_rt_context_backend(ctx), TE_RT_BACKEND_CPU);
  EXPECT_EQ(te_rt_synchronize(ctx), 0);
  te_rt_context_destroy(ctx);
  te_rt_context_destroy(nullptr); // a no-op
}

TEST(AbiContext, BoundToItsBackendsTable) {
  // A context's calls go through its backend's table (Backend.h): set at
  // creation, complete in both backends (no null entry), and a call a
  // backend lacks fails naming the call and the backend.
  ScopedEnv env("TE_RT_BACKEND", nullptr);
  te_rt_context *ctx = te_rt_context_create(TE_RT_BACKEND_CPU);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->ops, &te::rt::cpuOps);
  te_rt_context_destroy(ctx);
  for (const te::rt::BackendOps *ops : {&te::rt::cpuOps, &te::rt::cudaOps}) {
    ASSERT_NE(ops->name, nullptr);
#define TE_RT_BACKEND_CALL(Name, Ret, Params)                                  \
  EXPECT_NE(ops->Name, nullptr) << ops->name << " lacks " #Name;
#include "BackendCalls.def"
  }
  te_rt_context cuda;
  te::rt::bindBackend(&cuda, TE_RT_BACKEND_CUDA);
  EXPECT_EQ(cuda.backend, TE_RT_BACKEND_CUDA);
  EXPECT_EQ(cuda.ops, &te::rt::cudaOps);
  EXPECT_FAILS_WITH(te::rt::unsupported(te::rt::Checker("te_rt_some_call"),
                                        &cuda),
                    "te_rt_some_call: the cuda backend does not implement "
                    "this call");
}

TEST(AbiContext, AutoResolvesThroughSelectBackend) {
  ScopedEnv env("TE_RT_BACKEND", nullptr);
  te_rt_context *ctx = te_rt_context_create(TE_RT_BACKEND_AUTO);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(te_rt_context_backend(ctx),
            te_rt_select_backend(TE_RT_BACKEND_AUTO));
  EXPECT_NE(te_rt_context_backend(ctx), TE_RT_BACKEND_AUTO);
  te_rt_context_destroy(ctx);
}

TEST(AbiContext, EnvironmentOverridesTheRequest) {
  ScopedEnv env("TE_RT_BACKEND", "cpu");
  te_rt_context *ctx = te_rt_context_create(TE_RT_BACKEND_CUDA);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(te_rt_context_backend(ctx), TE_RT_BACKEND_CPU);
  te_rt_context_destroy(ctx);
}

TEST(AbiContext, CudaWithoutDeviceFailsCleanly) {
  ScopedEnv env("TE_RT_BACKEND", nullptr);
  if (te_rt_backend_available(TE_RT_BACKEND_CUDA))
    GTEST_SKIP() << "a CUDA device is visible";
  EXPECT_EQ(te_rt_context_create(TE_RT_BACKEND_CUDA), nullptr);
  std::string err = lastError();
  EXPECT_EQ(err.rfind("te_rt_context_create: te_rt_select_backend: backend "
                      "'cuda' requested but ",
                      0),
            0u)
      << err;
}

TEST(AbiContext, BadBackendAndNullContext) {
  ScopedEnv env("TE_RT_BACKEND", nullptr);
  EXPECT_EQ(te_rt_context_create(9), nullptr);
  EXPECT_EQ(lastError(),
            "te_rt_context_create: te_rt_select_backend: argument "
            "'requested' = 9 is not a backend (0 cpu, 1 cuda, 2 auto)");
  EXPECT_EQ(te_rt_context_backend(nullptr), TE_RT_BACKEND_INVALID);
  EXPECT_EQ(lastError(), "te_rt_context_backend: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_synchronize(nullptr),
                    "te_rt_synchronize: ctx is NULL");
}

TEST_F(Abi, AllocIsAlignedAndUnique) {
  std::vector<void *> ptrs;
  for (int64_t bytes : {0, 0, 1, 3, 255, 256, 257, 4096, 1000003}) {
    void *p = te_rt_alloc(ctx, bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u) << bytes;
    std::memset(p, 0xab, static_cast<size_t>(bytes)); // all of it is ours
    for (void *q : ptrs)
      EXPECT_NE(p, q);
    ptrs.push_back(p);
  }
  // Without a context the owner is unknown: an error, nothing freed.
  te_rt_free(nullptr, ptrs[0]);
  EXPECT_EQ(lastError(), "te_rt_free: ctx is NULL");
  for (void *p : ptrs)
    te_rt_free(ctx, p);
  te_rt_free(ctx, nullptr);
  te_rt_free(nullptr, nullptr);
}

TEST_F(Abi, AllocErrors) {
  EXPECT_EQ(te_rt_alloc(ctx, -1), nullptr);
  EXPECT_EQ(lastError(), "te_rt_alloc: bytes must be >= 0, got -1");
  EXPECT_EQ(te_rt_alloc(nullptr, 16), nullptr);
  EXPECT_EQ(lastError(), "te_rt_alloc: ctx is NULL");
  EXPECT_EQ(te_rt_alloc(ctx, std::numeric_limits<int64_t>::max()), nullptr);
  EXPECT_EQ(lastError(), "te_rt_alloc: bytes = 9223372036854775807 is too "
                         "large (the limit is 2^48)");
  EXPECT_EQ(te_rt_alloc(ctx, (int64_t(1) << 48) + 1), nullptr);
  EXPECT_EQ(lastError(), "te_rt_alloc: bytes = 281474976710657 is too large "
                         "(the limit is 2^48)");
}

TEST_F(Abi, CopiesAndZero) {
  const char host[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  char back[8] = {};
  void *a = te_rt_alloc(ctx, 8), *b = te_rt_alloc(ctx, 8);
  ASSERT_EQ(te_rt_copy_to_backend(ctx, a, host, 8), 0);
  ASSERT_EQ(te_rt_copy(ctx, b, a, 8), 0);
  ASSERT_EQ(te_rt_zero(ctx, a, 4), 0);
  ASSERT_EQ(te_rt_copy_to_host(ctx, back, b, 8), 0);
  EXPECT_EQ(std::memcmp(back, host, 8), 0);
  ASSERT_EQ(te_rt_copy_to_host(ctx, back, a, 8), 0);
  const char want[8] = {0, 0, 0, 0, 5, 6, 7, 8};
  EXPECT_EQ(std::memcmp(back, want, 8), 0);
  EXPECT_EQ(te_rt_copy(ctx, b, a, 0), 0);
  EXPECT_EQ(te_rt_synchronize(ctx), 0);

  char *bytes = static_cast<char *>(a);
  EXPECT_FAILS_WITH(te_rt_copy(ctx, bytes + 1, bytes, 4),
                    "te_rt_copy: dst and src overlap");
  EXPECT_FAILS_WITH(te_rt_copy(ctx, bytes, bytes + 3, 4),
                    "te_rt_copy: dst and src overlap");
  EXPECT_EQ(te_rt_copy(ctx, bytes + 4, bytes, 4), 0); // adjacent is fine
  // Onto itself: nothing moves, nothing fails (a weight-cache forward whose
  // saved weight result is the cached-weight argument's buffer).
  EXPECT_EQ(te_rt_copy(ctx, bytes, bytes, 8), 0);
  ASSERT_EQ(te_rt_copy_to_host(ctx, back, a, 8), 0);
  const char same[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(std::memcmp(back, same, 8), 0); // a's bytes after the copies above
  EXPECT_FAILS_WITH(te_rt_copy(ctx, nullptr, a, 4), "te_rt_copy: dst is NULL");
  EXPECT_FAILS_WITH(te_rt_copy(ctx, b, a, -2),
                    "te_rt_copy: bytes must be >= 0, got -2");
  EXPECT_FAILS_WITH(te_rt_copy_to_backend(ctx, a, nullptr, 4),
                    "te_rt_copy_to_backend: host_src is NULL");
  EXPECT_FAILS_WITH(te_rt_copy_to_host(nullptr, back, a, 4),
                    "te_rt_copy_to_host: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_copy_to_host(ctx, nullptr, a, 4),
                    "te_rt_copy_to_host: host_dst is NULL");
  EXPECT_FAILS_WITH(te_rt_zero(ctx, nullptr, 4), "te_rt_zero: dst is NULL");
  EXPECT_FAILS_WITH(te_rt_zero(ctx, a, -1),
                    "te_rt_zero: bytes must be >= 0, got -1");
  te_rt_free(ctx, a);
  te_rt_free(ctx, b);
}

// Many ranges (more than one cuda launch holds) at odd offsets and sizes,
// overlapping, empty ones with and without a pointer: exactly their union
// is zeroed.
TEST_F(Abi, ZeroRanges) {
  std::vector<uint8_t> buf(5000, 0xAB), want = buf;
  std::vector<void *> ptrs;
  std::vector<int64_t> bytes;
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {
    int64_t at = rng() % 4900, n = i % 7 == 0 ? 0 : rng() % 37;
    ptrs.push_back(i % 14 == 0 ? nullptr : buf.data() + at);
    bytes.push_back(n);
    if (ptrs.back())
      std::fill(want.begin() + at, want.begin() + at + n, 0);
  }
  ASSERT_EQ(te_rt_zero_ranges(ctx, ptrs.data(), bytes.data(), 300), 0)
      << lastError();
  EXPECT_EQ(buf, want);
  EXPECT_EQ(te_rt_zero_ranges(ctx, nullptr, nullptr, 0), 0);
}

TEST_F(Abi, ZeroRangesErrors) {
  uint8_t buf[16];
  std::memset(buf, 0xAB, sizeof(buf));
  void *ptrs[2] = {buf, buf + 8};
  int64_t bytes[2] = {8, 8};
  EXPECT_FAILS_WITH(te_rt_zero_ranges(nullptr, ptrs, bytes, 2),
                    "te_rt_zero_ranges: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_zero_ranges(ctx, ptrs, bytes, -1),
                    "te_rt_zero_ranges: count must be >= 0, got -1");
  EXPECT_FAILS_WITH(te_rt_zero_ranges(ctx, nullptr, bytes, 2),
                    "te_rt_zero_ranges: ptrs is NULL");
  EXPECT_FAILS_WITH(te_rt_zero_ranges(ctx, ptrs, nullptr, 2),
                    "te_rt_zero_ranges: bytes is NULL");
  bytes[1] = -3;
  EXPECT_FAILS_WITH(te_rt_zero_ranges(ctx, ptrs, bytes, 2),
                    "te_rt_zero_ranges: bytes[1] must be >= 0, got -3");
  bytes[1] = (int64_t(1) << 48) + 1;
  EXPECT_FAILS_WITH(te_rt_zero_ranges(ctx, ptrs, bytes, 2),
                    "te_rt_zero_ranges: bytes[1] = 281474976710657 is too "
                    "large (the limit is 2^48)");
  bytes[1] = 8;
  ptrs[1] = nullptr;
  EXPECT_FAILS_WITH(te_rt_zero_ranges(ctx, ptrs, bytes, 2),
                    "te_rt_zero_ranges: ptrs[1] is NULL (bytes[1] = 8)");
  ptrs[1] = reinterpret_cast<void *>(~uintptr_t(0) - 3);
  EXPECT_FAILS_WITH(te_rt_zero_ranges(ctx, ptrs, bytes, 2),
                    "te_rt_zero_ranges: ptrs[1] + bytes[1] overflows the "
                    "address space");
  // Every range is checked first: a failed call zeroes nothing, not even
  // the ranges before the bad one.
  for (uint8_t b : buf)
    EXPECT_EQ(b, 0xAB);
}

TEST_F(Abi, SuccessKeepsTheLastError) {
  EXPECT_NE(te_rt_zero(ctx, nullptr, 4), 0);
  char buf[4];
  EXPECT_EQ(te_rt_zero(ctx, buf, 4), 0);
  EXPECT_EQ(lastError(), "te_rt_zero: dst is NULL");
}

} // namespace
