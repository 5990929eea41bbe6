//===- CudaModulePaddingTest.cpp - quantized padding on cuda ----*- C++ -*-===//
//
// te_module_run on a cuda context leaves the padding of every quantized
// result zeroed (ModulePaddingTest.cpp has the cpu side): runs of
// fixtures/qtensor_library.c into device buffers filled with 0xAB against
// runs into zeroed ones and against the cpu backend's bytes, with more
// ranges than one launch holds, and replayed from a CUDA graph (the zeroing
// is captured with the entry). te_rt_zero_ranges' kernel itself is tested
// in CudaAbiElementwiseTest.cpp. Skipped without a CUDA device.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "CudaAbiFixture.h"
#include "ModulePaddingCheck.h"
#include "module/EntryGraphs.h"
#include "te/Runtime/TEModule.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace te::test;

namespace {

/// Entry graphs on for one test, whatever TE_RT_ENTRY_GRAPHS says.
struct EntryGraphsOn {
  EntryGraphsOn() { te::rt::overrideEntryGraphs(1); }
  ~EntryGraphsOn() { te::rt::overrideEntryGraphs(-1); }
};

class CudaModulePadding : public CudaContextTest {
protected:
  CudaModulePadding()
      : CudaContextTest("the zeroed padding of quantized results on cuda") {}
  void SetUp() override {
    CudaContextTest::SetUp();
    if (IsSkipped() || HasFatalFailure())
      return;
    ASSERT_EQ(te_module_open(TE_TEST_QTENSOR_LIBRARY, &module), 0)
        << lastError();
    cpu = te_rt_context_create(TE_RT_BACKEND_CPU);
    ASSERT_NE(cpu, nullptr) << lastError();
  }
  void TearDown() override {
    te_rt_context_destroy(cpu);
    te_module_close(module);
    CudaContextTest::TearDown();
  }
  const te_module_entry *entry(const char *name) {
    const te_module_entry *e = te_module_find_entry(module, name);
    EXPECT_NE(e, nullptr) << lastError();
    return e;
  }
  /// `name` at `dims` on `args` into 0xAB-filled and into zeroed device
  /// buffers, checked, and against the cpu backend's bytes; the padding
  /// bytes checked.
  int64_t check(const char *name, const std::vector<Bytes> &args,
                const std::vector<int64_t> &dims) {
    const te_module_entry *e = entry(name);
    std::vector<Bytes> filled = runFilled(gpu, e, args, dims, 0xAB),
                       zeroed = runFilled(gpu, e, args, dims, 0x00),
                       host = runFilled(cpu, e, args, dims, 0xAB);
    EXPECT_EQ(filled, host) << name << ": cuda and cpu differ";
    return expectPaddingZeroed(e, dims, filled, zeroed);
  }
  /// The byte sizes of `e`'s results at `dims`.
  std::vector<int64_t> resultSizes(const te_module_entry *e,
                                   const std::vector<int64_t> &dims) {
    std::vector<int64_t> sizes;
    for (int64_t i = 0; i < te_module_entry_num_results(e); ++i) {
      int64_t n = 0;
      EXPECT_EQ(te_module_tensor_bytes(te_module_entry_result(e, i),
                                       dims.data(), &n),
                0)
          << lastError();
      sizes.push_back(n);
    }
    return sizes;
  }
  /// Every buffer of `buffers` (of `sizes` bytes) filled with `byte`.
  void fill(const std::vector<void *> &buffers,
            const std::vector<int64_t> &sizes, uint8_t byte) {
    for (size_t i = 0; i < buffers.size(); ++i)
      put(buffers[i], Bytes(size_t(sizes[i]), byte));
  }
  /// The bytes of every buffer of `buffers` (of `sizes` bytes).
  std::vector<Bytes> fetch(const std::vector<void *> &buffers,
                           const std::vector<int64_t> &sizes) {
    std::vector<Bytes> out;
    for (size_t i = 0; i < buffers.size(); ++i)
      out.push_back(get(buffers[i], sizes[i]));
    return out;
  }
  /// Device buffers for `e`'s results at `dims` (their sizes in *sizes).
  std::vector<void *> resultBuffers(const te_module_entry *e,
                                    const std::vector<int64_t> &dims,
                                    std::vector<int64_t> *sizes = nullptr) {
    std::vector<int64_t> n = resultSizes(e, dims);
    std::vector<void *> buffers;
    for (int64_t b : n)
      buffers.push_back(alloc(b));
    if (sizes)
      *sizes = n;
    return buffers;
  }
  te_module *module = nullptr;
  te_rt_context *cpu = nullptr;
};

TEST_F(CudaModulePadding, QuantizedResultsComeOutWithZeroPadding) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{24, 20},
                            {16, 16},
                            {1, 1},
                            {40, 136},
                            {24, 20}})
    EXPECT_GT(check("quantize", {randomInput(rows * cols, 9)}, {rows, cols}), 0)
        << rows << "x" << cols;
}

// 160 ranges: two te_rt_zero_ranges calls of one launch each.
TEST_F(CudaModulePadding, MoreRangesThanOneLaunch) {
  EXPECT_EQ(check("many", {randomInput(10, 5)}, {10}), 80 * (252 + 246));
}

// The entry and the zeroing captured once, replayed into buffers refilled
// with 0xAB before each launch: the padding is zeroed by the replay.
TEST_F(CudaModulePadding, ZeroingIsCapturedInAGraph) {
  const te_module_entry *e = entry("quantize");
  const int64_t rows = 24, cols = 20;
  std::vector<int64_t> dims = {rows, cols};
  Bytes x = randomInput(rows * cols, 4);
  std::vector<Bytes> zeroed = runFilled(gpu, e, {x}, dims, 0x00);
  void *in = alloc(int64_t(x.size()));
  put(in, x);
  std::vector<int64_t> sizes;
  std::vector<void *> results = resultBuffers(e, dims, &sizes);
  auto refill = [&] { fill(results, sizes, 0xAB); };
  void *args[1] = {in};
  // Eager first: the kernel state and scratch exist before the capture.
  refill();
  ASSERT_EQ(te_module_run(e, gpu, args, results.data(), dims.data()), 0)
      << lastError();
  ASSERT_EQ(te_rt_synchronize(gpu), 0) << lastError();
  refill();
  ASSERT_EQ(te_rt_capture_begin(gpu), 0) << lastError();
  ASSERT_EQ(te_module_run(e, gpu, args, results.data(), dims.data()), 0)
      << lastError();
  te_rt_graph *graph = nullptr;
  ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << lastError();
  for (int replay = 0; replay < 2; ++replay) {
    refill();
    ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << lastError();
    EXPECT_GT(expectPaddingZeroed(e, dims, fetch(results, sizes), zeroed), 0)
        << replay;
  }
  te_rt_graph_destroy(graph);
}

// te_module_run's entry graphs: a call on the same buffers and dims a second
// time is recorded into a CUDA graph and replayed from then on. Each call
// below runs on new input values into buffers refilled with 0xAB: its bytes
// equal the cpu backend's on that input, whether it ran plainly (the first
// call), was captured (the second) or replayed (the rest); new dims are a
// new key.
TEST_F(CudaModulePadding, EntryGraphsReplayTheSameBits) {
  EntryGraphsOn on;
  const te_module_entry *e = entry("quantize");
  std::vector<int64_t> dims = {24, 20};
  void *in = alloc(int64_t(4 * 40 * 136));
  std::vector<void *> results = resultBuffers(e, {40, 136}); // the larger
  std::vector<int64_t> sizes;
  auto runOnce = [&](unsigned seed) {
    Bytes x = randomInput(dims[0] * dims[1], seed);
    put(in, x);
    sizes = resultSizes(e, dims);
    fill(results, sizes, 0xAB);
    void *args[1] = {in};
    ASSERT_EQ(te_module_run(e, gpu, args, results.data(), dims.data()), 0)
        << lastError();
    EXPECT_EQ(fetch(results, sizes), runFilled(cpu, e, {x}, dims, 0xAB))
        << "seed " << seed << ": cuda and cpu differ";
  };
  te::rt::EntryGraphStats before = te::rt::entryGraphStats(gpu);
  for (unsigned seed = 1; seed <= 5; ++seed)
    runOnce(seed);
  te::rt::EntryGraphStats after = te::rt::entryGraphStats(gpu);
  EXPECT_EQ(after.plain - before.plain, 1);
  EXPECT_EQ(after.captures - before.captures, 1);
  EXPECT_EQ(after.replays - before.replays, 3);
  EXPECT_EQ(after.failures - before.failures, 0);
  // Other dims: a new key (a plain run, a capture, a replay), the first
  // graph kept.
  dims = {40, 136};
  for (unsigned seed = 11; seed <= 13; ++seed)
    runOnce(seed);
  te::rt::EntryGraphStats more = te::rt::entryGraphStats(gpu);
  EXPECT_EQ(more.captures - after.captures, 1);
  EXPECT_EQ(more.replays - after.replays, 1);
  EXPECT_EQ(more.cached, after.cached + 1);
  dims = {24, 20};
  runOnce(21);
  EXPECT_EQ(te::rt::entryGraphStats(gpu).replays, more.replays + 1);
}

// While the caller records its own graph, te_module_run launches the
// entry's kernels into that capture (no graph of its own): the caller's
// graph then does the whole work on every replay.
TEST_F(CudaModulePadding, CallerCaptureRecordsTheEntryItself) {
  EntryGraphsOn on;
  const te_module_entry *e = entry("quantize");
  std::vector<int64_t> dims = {16, 16};
  Bytes x = randomInput(16 * 16, 3);
  std::vector<Bytes> host = runFilled(cpu, e, {x}, dims, 0xAB);
  void *in = alloc(int64_t(x.size()));
  put(in, x);
  std::vector<int64_t> sizes;
  std::vector<void *> results = resultBuffers(e, dims, &sizes);
  void *args[1] = {in};
  // Twice plainly first: a third call outside a capture would replay.
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(te_module_run(e, gpu, args, results.data(), dims.data()), 0)
        << lastError();
  ASSERT_EQ(te_rt_synchronize(gpu), 0) << lastError();
  te::rt::EntryGraphStats before = te::rt::entryGraphStats(gpu);
  ASSERT_EQ(te_rt_capture_begin(gpu), 0) << lastError();
  ASSERT_EQ(te_module_run(e, gpu, args, results.data(), dims.data()), 0)
      << lastError();
  te_rt_graph *graph = nullptr;
  ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << lastError();
  te::rt::EntryGraphStats after = te::rt::entryGraphStats(gpu);
  EXPECT_EQ(after.replays, before.replays);
  EXPECT_EQ(after.captures, before.captures);
  fill(results, sizes, 0xAB);
  ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << lastError();
  EXPECT_EQ(fetch(results, sizes), host);
  te_rt_graph_destroy(graph);
}

// A compiled entry acquires its arena even when its slots hold no bytes at
// its dims (results that back the intermediates: LayerNormLinear's forward at
// few tokens). Without a caller arena that used to allocate 256 bytes, which
// inside the entry graph's capture belonged to the graph: the capture failed,
// and such entries ran plainly on every call. Now nothing is allocated and
// the capture holds.
TEST_F(CudaModulePadding, AnEntryWithAnEmptyArenaIsCaptured) {
  struct Call {
    te_rt_context *ctx;
    void *buffer;
    void *arena = nullptr;
  } call{gpu, alloc(512)};
  auto run = [](void *state) -> int32_t {
    auto *c = static_cast<Call *>(state);
    c->arena = te_rt_arena_acquire(c->ctx, 0);
    if (!c->arena)
      return 1;
    int32_t rc = te_rt_zero(c->ctx, c->buffer, 512);
    te_rt_arena_release(c->ctx, c->arena);
    return rc;
  };
  ASSERT_EQ(te_rt_context_set_arena(gpu, nullptr, 0), 0) << lastError();
  put(call.buffer, Bytes(512, 0xAB));
  te_rt_graph *graph = te::rt::captureAside(gpu, run, &call);
  ASSERT_NE(graph, nullptr) << lastError();
  EXPECT_NE(call.arena, nullptr);
  ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << lastError();
  EXPECT_EQ(get(call.buffer, 512), Bytes(512, 0));
  te_rt_graph_destroy(graph);
}

// An entry whose calls keep bringing new addresses (each set seen twice,
// never again) stops being captured once its captures are not paid back by
// replays; it then runs plainly, with the same bytes.
TEST_F(CudaModulePadding, EntryGraphsStopWhenAddressesChurn) {
  EntryGraphsOn on;
  const te_module_entry *e = entry("noop");
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(te_module_entry_num_args(e), 1);
  std::vector<int64_t> dims(size_t(te_module_entry_num_dims(e)), 4);
  te::rt::EntryGraphStats before = te::rt::entryGraphStats(gpu);
  int64_t argBytes = 0;
  ASSERT_EQ(te_module_tensor_bytes(te_module_entry_arg(e, 0), dims.data(),
                                   &argBytes),
            0)
      << lastError();
  std::vector<void *> results = resultBuffers(e, dims);
  for (int set = 0; set < 24; ++set) {
    void *args[1] = {alloc(argBytes)}; // a new address each set
    for (int call = 0; call < 2; ++call)
      ASSERT_EQ(te_module_run(e, gpu, args, results.data(), dims.data()), 0)
          << lastError();
  }
  te::rt::EntryGraphStats after = te::rt::entryGraphStats(gpu);
  EXPECT_EQ(after.captures - before.captures, 16);
  EXPECT_EQ(after.replays - before.replays, 0);
  EXPECT_EQ(after.failures - before.failures, 0);
  EXPECT_EQ(after.cached, before.cached); // dropped when it stopped
  EXPECT_EQ(after.plain - before.plain, 48 - 16);
}

} // namespace

