//===- CudaGraphTest.cpp - cuda vs cpu: CUDA graphs -------------*- C++ -*-===//
//
// The cuda backend against the cpu backend (split from CudaAbiTest.cpp by
// family; the fixture is CudaAbiFixture.h): CUDA graph capture and replay,
// and the order of a context's calls across stream switches.
//
//===----------------------------------------------------------------------===//

#include "CudaAbiFixture.h"
#include "RuntimeInternal.h"

#ifdef TE_RT_TEST_HAVE_CUDA
#include <cuda_runtime.h>
#endif

using namespace te::test;

namespace {

//===----------------------------------------------------------------------===//
// CUDA graphs
//===----------------------------------------------------------------------===//

/// A cuda context for the graph tests, destroyed at the end of the scope.
class CudaGraphs : public CudaContextTest {
protected:
  CudaGraphs() : CudaContextTest("CUDA graph capture and replay") {}
  /// n random bf16 values in [-2, 2).
  std::vector<uint16_t> randomBF16(int64_t n) {
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<uint16_t> v(static_cast<size_t>(n));
    for (uint16_t &h : v)
      h = te::cpu::floatToBF16(dist(rng));
    return v;
  }

  std::mt19937 rng{77};
};

// LayerNorm -> fprop GEMM (+bias) -> GELU captured once (the GELU's output
// allocated inside the capture) and launched on new inputs copied in before
// each launch: every result equals the eager calls' bit for bit. Host
// copies, synchronization and a second capture are refused meanwhile
// without breaking the capture.
TEST_F(CudaGraphs, ReplaysMatchEagerCallsBitForBit) {
  const int32_t t = TE_RT_DTYPE_BF16;
  const int64_t rows = 64, cols = 1024, n = 768;
  const int64_t zBytes = rows * cols * 2, yBytes = rows * n * 2;
  // Odd extra bytes: the buffer's rounded size is used by no other buffer.
  const int64_t outBytes = yBytes + 1000;
  void *x = alloc(zBytes), *gamma = alloc(cols * 2), *beta = alloc(cols * 2);
  void *w = alloc(n * cols * 2), *bias = alloc(n * 2);
  void *z = alloc(zBytes), *mu = alloc(rows * 4), *rs = alloc(rows * 4);
  void *y = alloc(yBytes), *eagerOut = alloc(outBytes);
  put(gamma, randomBF16(cols));
  put(beta, randomBF16(cols));
  put(w, randomBF16(n * cols));
  put(bias, randomBF16(n));
  auto queue = [&](void *out) {
    ASSERT_EQ(te_rt_norm_fwd(gpu, TE_RT_NORM_LAYERNORM, t, x, gamma, beta,
                             1e-5, 0, rows, cols, z, static_cast<float *>(mu),
                             static_cast<float *>(rs)),
              0)
        << te_rt_last_error();
    ASSERT_EQ(te_rt_gemm_fprop(gpu, t, z, w, bias, y, rows, n, cols), 0)
        << te_rt_last_error();
    ASSERT_EQ(te_rt_act_fwd(gpu, TE_RT_ACT_GELU, t, y, out, rows, n, 0, 0, 0,
                            nullptr),
              0)
        << te_rt_last_error();
  };
  struct Results {
    std::vector<uint8_t> z, mu, rs, y, out;
  };
  auto results = [&](void *out) {
    return Results{get(z, zBytes), get(mu, rows * 4), get(rs, rows * 4),
                   get(y, yBytes), get(out, yBytes)};
  };
  // Eager runs (also the warm-up: kernel state, cuBLASLt, scratch).
  std::vector<uint16_t> inputs[2] = {randomBF16(rows * cols),
                                     randomBF16(rows * cols)};
  Results eager[2];
  for (int i = 0; i < 2; ++i) {
    put(x, inputs[i]);
    queue(eagerOut);
    eager[i] = results(eagerOut);
  }

  EXPECT_EQ(te_rt_context_capturing(gpu), 0);
  ASSERT_EQ(te_rt_capture_begin(gpu), 0) << te_rt_last_error();
  EXPECT_EQ(te_rt_context_capturing(gpu), 1);
  void *out = te_rt_alloc(gpu, outBytes); // belongs to the graph
  ASSERT_NE(out, nullptr) << te_rt_last_error();
  queue(out);
  std::vector<uint8_t> host(16);
  EXPECT_NE(te_rt_copy_to_host(gpu, host.data(), out, 16), 0);
  EXPECT_EQ(lastError(), "te_rt_copy_to_host: cannot copy to the host while "
                         "capturing a CUDA graph (call te_rt_capture_end "
                         "first)");
  EXPECT_NE(te_rt_copy_to_backend(gpu, x, host.data(), 16), 0);
  EXPECT_EQ(lastError(), "te_rt_copy_to_backend: cannot copy from the host "
                         "while capturing a CUDA graph (call "
                         "te_rt_capture_end first)");
  EXPECT_NE(te_rt_synchronize(gpu), 0);
  EXPECT_EQ(lastError(), "te_rt_synchronize: cannot synchronize while "
                         "capturing a CUDA graph (call te_rt_capture_end "
                         "first)");
  EXPECT_NE(te_rt_capture_begin(gpu), 0);
  EXPECT_EQ(lastError(), "te_rt_capture_begin: this context is already "
                         "capturing a CUDA graph (call te_rt_capture_end "
                         "first)");
  te_rt_graph *graph = nullptr, *none = graph;
  ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << te_rt_last_error();
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(te_rt_context_capturing(gpu), 0);
  EXPECT_NE(te_rt_capture_end(gpu, &none), 0);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(lastError(), "te_rt_capture_end: this context is not capturing "
                         "(call te_rt_capture_begin first)");

  // Replays, the second input first: nothing ran during the capture.
  for (int i : {1, 0}) {
    put(x, inputs[i]);
    ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << te_rt_last_error();
    Results got = results(out);
    EXPECT_EQ(got.z, eager[i].z) << "input " << i;
    EXPECT_EQ(got.mu, eager[i].mu) << "input " << i;
    EXPECT_EQ(got.rs, eager[i].rs) << "input " << i;
    EXPECT_EQ(got.y, eager[i].y) << "input " << i;
    EXPECT_EQ(got.out, eager[i].out) << "input " << i;
  }

  // Freed before the graph is destroyed: the graph keeps the buffer, so
  // te_rt_alloc does not hand it out again, and replays still write it.
  te_rt_free(gpu, out);
  void *other = alloc(outBytes);
  EXPECT_NE(other, out);
  put(x, inputs[1]);
  ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << te_rt_last_error();
  EXPECT_EQ(get(out, yBytes), eager[1].out);
  te_rt_free(gpu, out); // again: still the graph's, nothing happens
  // Destroyed: its buffer is released (parked for reuse).
  te_rt_graph_destroy(graph);
  te_rt_graph_destroy(nullptr);
  void *again = alloc(outBytes);
  EXPECT_EQ(again, out);
}

// The current-scaling fusion in a graph: GELU with its amax, then the FP8
// quantization with that amax as amax_in, captured once; replays equal the
// eager calls bit for bit (the amax cell is zeroed again on every replay:
// the smaller input after the larger one gets its own amax).
TEST_F(CudaGraphs, FusedAmaxQuantizeReplays) {
  const int32_t t = TE_RT_DTYPE_BF16;
  const int64_t rows = 64, cols = 1024, n = rows * cols;
  void *x = alloc(n * 2), *y = alloc(n * 2), *amax = alloc(4);
  void *q = alloc(n), *qt = alloc(n), *si = alloc(4);
  auto queue = [&] {
    ASSERT_EQ(te_rt_act_fwd(gpu, TE_RT_ACT_GELU, t, x, y, rows, cols, 0, 0, 0,
                            static_cast<float *>(amax)),
              0)
        << te_rt_last_error();
    ASSERT_EQ(te_rt_quantize_fp8(gpu, t, y, rows, cols, TE_RT_FP8_E4M3, nullptr,
                                 0, q, qt, static_cast<float *>(si), nullptr,
                                 static_cast<const float *>(amax)),
              0)
        << te_rt_last_error();
  };
  auto results = [&] {
    return std::vector<std::vector<uint8_t>>{get(y, n * 2), get(amax, 4),
                                             get(q, n), get(qt, n), get(si, 4)};
  };
  // Input 1 is input 0 halved: a smaller amax.
  std::vector<uint16_t> inputs[2] = {randomBF16(n), {}};
  for (uint16_t h : inputs[0])
    inputs[1].push_back(te::cpu::floatToBF16(0.5f * te::cpu::bf16ToFloat(h)));
  std::vector<std::vector<uint8_t>> eager[2];
  for (int i = 0; i < 2; ++i) {
    put(x, inputs[i]);
    queue();
    eager[i] = results();
  }
  ASSERT_NE(eager[0][1], eager[1][1]); // the amaxes differ
  ASSERT_EQ(te_rt_capture_begin(gpu), 0) << te_rt_last_error();
  queue();
  te_rt_graph *graph = nullptr;
  ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << te_rt_last_error();
  for (int i : {0, 1, 0, 1}) {
    put(x, inputs[i]);
    ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << te_rt_last_error();
    EXPECT_EQ(results(), eager[i]) << "input " << i;
  }
  te_rt_graph_destroy(graph);
}

// A graph launched on another context is refused; a capture left open is
// ended by te_rt_context_destroy.
TEST_F(CudaGraphs, GraphsBelongToTheirContext) {
  void *a = alloc(4096);
  ASSERT_EQ(te_rt_zero(gpu, a, 4096), 0);
  ASSERT_EQ(te_rt_capture_begin(gpu), 0) << te_rt_last_error();
  ASSERT_EQ(te_rt_zero(gpu, a, 4096), 0) << te_rt_last_error();
  te_rt_graph *graph = nullptr;
  ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << te_rt_last_error();
  te_rt_context *other = te_rt_context_create(TE_RT_BACKEND_CUDA);
  ASSERT_NE(other, nullptr);
  EXPECT_NE(te_rt_graph_launch(other, graph), 0);
  EXPECT_EQ(lastError(),
            "te_rt_graph_launch: graph was captured on another context");
  ASSERT_EQ(te_rt_capture_begin(other), 0) << te_rt_last_error();
  void *inside = te_rt_alloc(other, 100);
  ASSERT_NE(inside, nullptr) << te_rt_last_error();
  ASSERT_EQ(te_rt_zero(other, inside, 100), 0) << te_rt_last_error();
  te_rt_context_destroy(other); // ends the capture
  ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << te_rt_last_error();
  ASSERT_EQ(te_rt_synchronize(gpu), 0) << te_rt_last_error();
  te_rt_graph_destroy(graph);
}

// The kernels' scratch buffer: a capture that would grow it fails with a
// clear message (the eager call before capturing is the cure); a graph
// captured before a growth keeps reading the old, retired buffer, and its
// results stay right.
TEST_F(CudaGraphs, ScratchGrowthAndRetiredScratch) {
  const int32_t t = TE_RT_DTYPE_F32;
  const int64_t cols = 96, smallRows = 256, bigRows = 65536;
  void *dy = alloc(bigRows * cols * 4), *db = alloc(cols * 4);
  void *dbBig = alloc(cols * 4);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(bigRows * cols));
  for (float &f : v)
    f = dist(rng);
  put(dy, v);
  // A fresh context has no scratch yet: the capture refuses to grow it
  // (the call fails; the capture itself goes on).
  ASSERT_EQ(te_rt_capture_begin(gpu), 0) << te_rt_last_error();
  ASSERT_EQ(te_rt_zero(gpu, db, cols * 4), 0) << te_rt_last_error();
  EXPECT_NE(te_rt_bias_grad(gpu, t, dy, db, smallRows, cols), 0);
  EXPECT_NE(lastError().find("the scratch buffer would grow while a CUDA "
                             "graph is being captured (run the captured "
                             "work once before capturing)"),
            std::string::npos)
      << lastError();
  te_rt_graph *graph = nullptr;
  ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << te_rt_last_error();
  te_rt_graph_destroy(graph);

  // Eager first, then captured.
  ASSERT_EQ(te_rt_bias_grad(gpu, t, dy, db, smallRows, cols), 0)
      << te_rt_last_error();
  std::vector<uint8_t> eagerSmall = get(db, cols * 4);
  ASSERT_EQ(te_rt_zero(gpu, db, cols * 4), 0);
  ASSERT_EQ(te_rt_capture_begin(gpu), 0) << te_rt_last_error();
  ASSERT_EQ(te_rt_bias_grad(gpu, t, dy, db, smallRows, cols), 0)
      << te_rt_last_error();
  ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << te_rt_last_error();
  // A larger eager call grows (replaces) the scratch buffer.
  ASSERT_EQ(te_rt_bias_grad(gpu, t, dy, dbBig, bigRows, cols), 0)
      << te_rt_last_error();
  ASSERT_EQ(te_rt_synchronize(gpu), 0) << te_rt_last_error();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(te_rt_zero(gpu, db, cols * 4), 0);
    ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << te_rt_last_error();
    EXPECT_EQ(get(db, cols * 4), eagerSmall) << "launch " << i;
  }
  te_rt_graph_destroy(graph);
}

//===----------------------------------------------------------------------===//
// Stream switches
//===----------------------------------------------------------------------===//

/// A cuda context and two streams of the test's own, destroyed after it.
class CudaStreams : public CudaContextTest {
protected:
  CudaStreams() : CudaContextTest("stream switches") {}
  void SetUp() override {
    CudaContextTest::SetUp();
    if (IsSkipped() || HasFatalFailure())
      return;
    ASSERT_EQ(te_rt_internal_cuda_stream_create(&s1), nullptr);
    ASSERT_EQ(te_rt_internal_cuda_stream_create(&s2), nullptr);
  }
  void TearDown() override {
    // Back to the legacy default stream (it always exists) before the
    // context goes: its destroy waits for the stream it last queued on.
    if (gpu) {
      EXPECT_EQ(te_rt_context_set_stream(gpu, nullptr), 0) << lastError();
    }
    CudaContextTest::TearDown();
    te_rt_internal_cuda_stream_destroy(s1);
    te_rt_internal_cuda_stream_destroy(s2);
  }
#ifdef TE_RT_TEST_HAVE_CUDA
  /// The nodes the next node captured on `stream` will depend on (the
  /// stream must be capturing).
  static size_t captureDependencies(void *stream) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    size_t count = 0;
    EXPECT_EQ(cudaStreamGetCaptureInfo(static_cast<cudaStream_t>(stream), &st,
                                       nullptr, nullptr, nullptr, nullptr,
                                       &count),
              cudaSuccess);
    EXPECT_EQ(st, cudaStreamCaptureStatusActive);
    return count;
  }
#endif
  void *s1 = nullptr, *s2 = nullptr;
};

// te_rt_context_set_stream orders a switch: the new stream waits for what
// the old one has queued, so a context's calls keep their order across
// streams (its workspace, scratch and cached buffers are one per context).
// Seven long GEMMs on s1 and then one that writes `c`; on s2, a copy of `c`
// queued right after: it reads the finished product, not the zeros that a
// copy running beside the GEMMs would find. The same back, s2 to s1.
TEST_F(CudaStreams, SwitchKeepsTheCallOrder) {
  const int32_t t = TE_RT_DTYPE_F32;
  const int64_t m = 4096, n = 4096, k = 4096, bytes = m * n * 4;
  void *a = alloc(m * k * 4), *b = alloc(n * k * 4), *e = alloc(bytes);
  void *c = alloc(bytes), *d = alloc(bytes);
  put(a, std::vector<float>(static_cast<size_t>(m * k), 1.0f));
  put(b, std::vector<float>(static_cast<size_t>(n * k), 1.0f));
  const std::vector<float> product(static_cast<size_t>(m * n),
                                  float(k)); // exact
  std::vector<uint8_t> expected(static_cast<size_t>(bytes));
  std::memcpy(expected.data(), product.data(), expected.size());
  for (void *s : {s1, s2}) {
    void *other = s == s1 ? s2 : s1;
    ASSERT_EQ(te_rt_zero(gpu, c, bytes), 0) << lastError();
    ASSERT_EQ(te_rt_zero(gpu, d, bytes), 0) << lastError();
    ASSERT_EQ(te_rt_synchronize(gpu), 0) << lastError();
    ASSERT_EQ(te_rt_context_set_stream(gpu, s), 0) << lastError();
    EXPECT_EQ(te_rt_context_stream(gpu), s);
    for (int i = 0; i < 8; ++i)
      ASSERT_EQ(te_rt_gemm_fprop(gpu, t, a, b, nullptr, i < 7 ? e : c, m, n,
                                 k),
                0)
          << lastError();
    ASSERT_EQ(te_rt_context_set_stream(gpu, other), 0) << lastError();
    ASSERT_EQ(te_rt_context_set_stream(gpu, other), 0) << lastError(); // same
    ASSERT_EQ(te_rt_copy(gpu, d, c, bytes), 0) << lastError();
    EXPECT_TRUE(get(d, bytes) == expected)
        << "the copy on the new stream ran before the old stream's GEMMs";
  }
}

// A switch to or from a stream that someone else is capturing does not
// order (a capture may not wait for work outside it): the capture goes on
// and ends with a graph. A switch while this context's own capture is open
// is refused.
TEST_F(CudaStreams, SwitchAroundAnOutsideCapture) {
  void *a = alloc(4096);
  ASSERT_EQ(te_rt_context_set_stream(gpu, s1), 0) << lastError();
  ASSERT_EQ(te_rt_zero(gpu, a, 4096), 0) << lastError();
  ASSERT_EQ(te_rt_internal_cuda_capture_begin(s2), nullptr);
  ASSERT_EQ(te_rt_context_set_stream(gpu, s2), 0) << lastError();
  EXPECT_EQ(te_rt_context_capturing(gpu), 1);
  ASSERT_EQ(te_rt_zero(gpu, a, 4096), 0) << lastError();
  ASSERT_EQ(te_rt_context_set_stream(gpu, s1), 0) << lastError();
  void *graph = nullptr;
  EXPECT_EQ(te_rt_internal_cuda_capture_end(s2, &graph), nullptr);
  EXPECT_NE(graph, nullptr);
  te_rt_internal_cuda_graph_discard(graph);

  ASSERT_EQ(te_rt_capture_begin(gpu), 0) << lastError();
  EXPECT_NE(te_rt_context_set_stream(gpu, s2), 0);
  EXPECT_EQ(lastError(), "te_rt_context_set_stream: cannot change the stream "
                         "while te_rt_capture_begin's capture of the current "
                         "one is open");
  EXPECT_EQ(te_rt_context_set_stream(gpu, s1), 0) << lastError(); // the same
  ASSERT_EQ(te_rt_zero(gpu, a, 4096), 0) << lastError();
  te_rt_graph *g = nullptr;
  ASSERT_EQ(te_rt_capture_end(gpu, &g), 0) << lastError();
  te_rt_graph_destroy(g);
  ASSERT_EQ(te_rt_synchronize(gpu), 0) << lastError();
}

// te_rt_amax_update_fork while te_rt_capture_begin's capture is open: the
// update is a branch of the graph. Right after the fork the capturing
// stream depends on what it had queued before (not on the update), a
// kernel queued then runs beside the update, and te_rt_arena_release(ctx,
// NULL) joins the branch back (the stream then depends on both). Replays
// give te_rt_amax_update_unused's history and scales bit for bit (eager, on
// the same inputs), as does the fork outside a capture, which runs in
// order. The capture's end joins a fork left pending by itself.
TEST_F(CudaStreams, ForkedAmaxUpdateIsABranchOfTheGraph) {
#ifndef TE_RT_TEST_HAVE_CUDA
  GTEST_SKIP() << "built without the CUDA runtime's headers";
#else
  const int64_t len = 1024, n = 3, m = 1 << 16;
  const uint64_t unused = 4; // slot 2 records nothing: its amax not read
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(0.0f, 300.0f);
  std::vector<float> hist(static_cast<size_t>(len * n)),
      scale(static_cast<size_t>(n)), amax;
  for (float &v : hist)
    v = dist(rng);
  for (float &v : scale)
    v = 1.0f + dist(rng) / 100.0f;
  amax = {12.5f, 700.0f, NAN};
  std::vector<float> ones(static_cast<size_t>(m), 1.0f);
  void *h = alloc(len * n * 4), *sc = alloc(n * 4), *am = alloc(n * 4);
  void *nh = alloc(len * n * 4), *ns = alloc(n * 4);
  void *x = alloc(m * 4), *y = alloc(m * 4), *z = alloc(m * 4);
  put(h, hist);
  put(sc, scale);
  put(am, amax);
  put(x, ones);
  auto f = [](void *p) { return static_cast<float *>(p); };
  ASSERT_EQ(te_rt_context_set_stream(gpu, s1), 0) << lastError();
  ASSERT_EQ(te_rt_amax_update_unused(gpu, f(h), f(sc), f(am), len, n, 448.0f,
                                     0, 0, unused, f(nh), f(ns)),
            0)
      << lastError();
  const std::vector<uint8_t> wantH = get(nh, len * n * 4), wantS = get(ns, n * 4);
  auto fork = [&]() {
    return te_rt_amax_update_fork(gpu, f(h), f(sc), f(am), len, n, 448.0f, 0,
                                  0, unused, f(nh), f(ns));
  };
  auto clear = [&]() {
    ASSERT_EQ(te_rt_zero(gpu, nh, len * n * 4), 0) << lastError();
    ASSERT_EQ(te_rt_zero(gpu, ns, n * 4), 0) << lastError();
  };
  // Outside a capture: in order.
  clear();
  ASSERT_EQ(fork(), 0) << lastError();
  te_rt_arena_release(gpu, nullptr);
  EXPECT_TRUE(get(nh, len * n * 4) == wantH) << "eager fork: history";
  EXPECT_TRUE(get(ns, n * 4) == wantS) << "eager fork: scales";

  auto deps = [&]() { return captureDependencies(s1); };
  for (bool release : {true, false}) {
    ASSERT_EQ(te_rt_capture_begin(gpu), 0) << lastError();
    ASSERT_EQ(te_rt_add(gpu, TE_RT_DTYPE_F32, x, x, y, m), 0) << lastError();
    ASSERT_EQ(fork(), 0) << lastError();
    EXPECT_EQ(deps(), 1u) << "the stream waits for the forked update";
    ASSERT_EQ(te_rt_add(gpu, TE_RT_DTYPE_F32, y, x, z, m), 0) << lastError();
    if (release) {
      te_rt_arena_release(gpu, nullptr);
      EXPECT_EQ(deps(), 2u) << "the update is not joined back";
    }
    te_rt_graph *graph = nullptr;
    ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << lastError();
    for (int i = 0; i < 2; ++i) {
      clear();
      ASSERT_EQ(te_rt_zero(gpu, z, m * 4), 0) << lastError();
      ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << lastError();
      EXPECT_TRUE(get(nh, len * n * 4) == wantH) << "replay: history";
      EXPECT_TRUE(get(ns, n * 4) == wantS) << "replay: scales";
      std::vector<uint8_t> zb = get(z, m * 4);
      float z0;
      std::memcpy(&z0, zb.data(), 4);
      EXPECT_EQ(z0, 3.0f) << "the kernel beside the update";
    }
    te_rt_graph_destroy(graph);
  }
#endif
}

// te_rt_branch_begin / _end / _join: in a capture, the branch's calls (a
// current-scaling FP8 cast, whose amax reduction and scale cell use the
// kernel state's ticket and scratch, and a cuBLASLt wgrad GEMM, which uses
// its workspace) are a branch of the graph beside the same kinds of calls
// on the captured stream: the stream does not wait for the branch until
// the join. Each replay gives the bytes of the same calls in order, and so
// do the branch calls outside a capture.
TEST_F(CudaStreams, BranchRunsBesideTheStreamWithItsOwnBuffers) {
#ifndef TE_RT_TEST_HAVE_CUDA
  GTEST_SKIP() << "built without the CUDA runtime's headers";
#else
  const int64_t m = 16, n = 256, k = 1024, rows = 64, cols = 4096;
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  auto random = [&](int64_t count, float scale) {
    std::vector<float> v(static_cast<size_t>(count));
    for (float &e : v)
      e = scale * dist(rng);
    return v;
  };
  void *dy = alloc(m * n * 4), *x = alloc(m * k * 4), *w = alloc(n * k * 4);
  void *dw = alloc(n * k * 4), *y = alloc(m * n * 4);
  void *q1 = alloc(rows * cols * 4), *q2 = alloc(rows * cols * 4);
  void *d1 = alloc(rows * cols), *d2 = alloc(rows * cols);
  void *si1 = alloc(4), *si2 = alloc(4), *a1 = alloc(4), *a2 = alloc(4);
  void *spare = alloc(4);
  put(dy, random(m * n, 1.0f));
  put(x, random(m * k, 1.0f));
  put(w, random(n * k, 0.05f));
  put(q1, random(rows * cols, 3.0f));
  put(q2, random(rows * cols, 40.0f));
  auto f = [](void *p) { return static_cast<float *>(p); };
  // Two runs of the branch (or the same calls in order): the cast, then
  // the GEMM.
  auto branchCalls = [&](bool branch) {
    if (branch)
      ASSERT_EQ(te_rt_branch_begin(gpu), 0) << lastError();
    ASSERT_EQ(te_rt_quantize_fp8(gpu, TE_RT_DTYPE_F32, q1, rows, cols, 0,
                                 nullptr, 0, d1, nullptr, f(si1), f(a1),
                                 nullptr),
              0)
        << lastError();
    if (branch) {
      ASSERT_EQ(te_rt_branch_end(gpu), 0) << lastError();
      ASSERT_EQ(te_rt_branch_begin(gpu), 0) << lastError();
    }
    ASSERT_EQ(te_rt_gemm_wgrad(gpu, TE_RT_DTYPE_F32, dy, x, dw, nullptr, m, n,
                               k, 0),
              0)
        << lastError();
    if (branch)
      ASSERT_EQ(te_rt_branch_end(gpu), 0) << lastError();
  };
  auto streamCalls = [&]() {
    ASSERT_EQ(te_rt_quantize_fp8(gpu, TE_RT_DTYPE_F32, q2, rows, cols, 0,
                                 nullptr, 0, d2, nullptr, f(si2), f(a2),
                                 nullptr),
              0)
        << lastError();
    ASSERT_EQ(te_rt_gemm_fprop(gpu, TE_RT_DTYPE_F32, x, w, nullptr, y, m, n,
                               k),
              0)
        << lastError();
  };
  struct Bytes {
    std::vector<uint8_t> dw, y, d1, d2, si1, si2, a1, a2;
    bool operator==(const Bytes &o) const {
      return dw == o.dw && y == o.y && d1 == o.d1 && d2 == o.d2 &&
             si1 == o.si1 && si2 == o.si2 && a1 == o.a1 && a2 == o.a2;
    }
  };
  auto read = [&]() {
    return Bytes{get(dw, n * k * 4), get(y, m * n * 4), get(d1, rows * cols),
                 get(d2, rows * cols), get(si1, 4), get(si2, 4),
                 get(a1, 4), get(a2, 4)};
  };
  auto clear = [&]() {
    for (auto [p, bytes] : {std::pair{dw, n * k * 4}, {y, m * n * 4},
                            {d1, rows * cols}, {d2, rows * cols}, {si1, 4},
                            {si2, 4}, {a1, 4}, {a2, 4}})
      ASSERT_EQ(te_rt_zero(gpu, p, bytes), 0) << lastError();
  };
  ASSERT_EQ(te_rt_context_set_stream(gpu, s1), 0) << lastError();
  // In order, no branch: the reference bytes (and every GEMM's algorithm
  // chosen, as an entry's first run does before its graph).
  branchCalls(false);
  streamCalls();
  const Bytes want = read();
  ASSERT_NE(want.dw, std::vector<uint8_t>(want.dw.size(), 0));

  // Outside a capture a branch runs in order.
  clear();
  branchCalls(true);
  streamCalls();
  ASSERT_EQ(te_rt_branch_join(gpu, 0), 0) << lastError();
  ASSERT_EQ(te_rt_branch_join(gpu, -1), 0) << lastError();
  EXPECT_TRUE(read() == want) << "a branch outside a capture";

  auto deps = [&]() { return captureDependencies(s1); };
  // Joined run by run (te_rt_branch_join 0, then 1), all at once (-1), or
  // by the entry's end (arena release).
  for (int join : {0, 1, 2}) {
    ASSERT_EQ(te_rt_capture_begin(gpu), 0) << lastError();
    ASSERT_EQ(te_rt_zero(gpu, y, 4), 0) << lastError(); // a node to fork from
    branchCalls(true);
    EXPECT_EQ(deps(), 1u) << "the stream waits for the branch";
    streamCalls();
    EXPECT_EQ(deps(), 1u) << "the stream waits for the branch";
    if (join == 0) {
      ASSERT_EQ(te_rt_branch_join(gpu, 0), 0) << lastError();
      EXPECT_EQ(deps(), 2u) << "run 0 is not joined";
      ASSERT_EQ(te_rt_branch_join(gpu, 0), 0) << lastError();
      EXPECT_EQ(deps(), 2u) << "run 0 joined twice";
      ASSERT_EQ(te_rt_zero(gpu, spare, 4), 0) << lastError();
      EXPECT_EQ(deps(), 1u);
      ASSERT_EQ(te_rt_branch_join(gpu, 1), 0) << lastError();
    } else if (join == 1) {
      ASSERT_EQ(te_rt_branch_join(gpu, -1), 0) << lastError();
    } else {
      te_rt_arena_release(gpu, nullptr);
    }
    EXPECT_EQ(deps(), 2u) << "the branch is not joined back";
    te_rt_graph *graph = nullptr;
    ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << lastError();
    for (int i = 0; i < 2; ++i) {
      clear();
      ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << lastError();
      EXPECT_TRUE(read() == want) << "replay " << i << ", join " << join;
    }
    te_rt_graph_destroy(graph);
  }

  // A branch left open by a failed entry is closed by its arena release.
  ASSERT_EQ(te_rt_branch_begin(gpu), 0) << lastError();
  te_rt_arena_release(gpu, nullptr);
  EXPECT_NE(te_rt_branch_end(gpu), 0) << "closed by the release";
#endif
}

} // namespace
