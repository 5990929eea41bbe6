//===- AbiGraphTest.cpp - runtime ABI: graph calls --------------*- C++ -*-===//
//
// The te_rt_* calls through the C ABI (split from AbiTest.cpp by family;
// the fixture is AbiFixture.h): CUDA graph calls without a device.
//
//===----------------------------------------------------------------------===//

#include "AbiFixture.h"
#include "Backend.h"

using namespace te::test;

namespace {

//===----------------------------------------------------------------------===//
// CUDA graphs (the calls' checks; CudaAbiTest.cpp captures and replays)
//===----------------------------------------------------------------------===//

TEST_F(Abi, CudaGraphCallsNeedTheCudaBackend) {
  EXPECT_FAILS_WITH(te_rt_capture_begin(ctx),
                    "te_rt_capture_begin: CUDA graphs need the cuda backend "
                    "(this context runs on cpu)");
  te_rt_graph *graph = reinterpret_cast<te_rt_graph *>(&graph);
  EXPECT_FAILS_WITH(te_rt_capture_end(ctx, &graph),
                    "te_rt_capture_end: CUDA graphs need the cuda backend "
                    "(this context runs on cpu)");
  EXPECT_EQ(graph, nullptr); // set on failure
  te_rt_graph fake;
  fake.ctx = ctx;
  EXPECT_FAILS_WITH(te_rt_graph_launch(ctx, &fake),
                    "te_rt_graph_launch: CUDA graphs need the cuda backend "
                    "(this context runs on cpu)");
  te_rt_graph_destroy(nullptr); // a no-op
  // NULL arguments.
  EXPECT_FAILS_WITH(te_rt_capture_begin(nullptr),
                    "te_rt_capture_begin: ctx is NULL");
  graph = &fake;
  EXPECT_FAILS_WITH(te_rt_capture_end(nullptr, &graph),
                    "te_rt_capture_end: ctx is NULL");
  EXPECT_EQ(graph, nullptr);
  EXPECT_FAILS_WITH(te_rt_capture_end(ctx, nullptr),
                    "te_rt_capture_end: graph is NULL");
  EXPECT_FAILS_WITH(te_rt_graph_launch(nullptr, &fake),
                    "te_rt_graph_launch: ctx is NULL");
  // Whether the stream is being captured: never on cpu.
  EXPECT_EQ(te_rt_context_capturing(ctx), 0);
  EXPECT_EQ(te_rt_context_capturing(nullptr), -1);
  EXPECT_EQ(lastError(), "te_rt_context_capturing: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_graph_launch(ctx, nullptr),
                    "te_rt_graph_launch: graph is NULL");
  // The context is unaffected.
  EXPECT_EQ(te_rt_synchronize(ctx), 0);
  char host[4] = {1, 2, 3, 4}, back[4] = {};
  void *p = te_rt_alloc(ctx, 4);
  ASSERT_EQ(te_rt_copy_to_backend(ctx, p, host, 4), 0);
  ASSERT_EQ(te_rt_copy_to_host(ctx, back, p, 4), 0);
  EXPECT_EQ(std::memcmp(back, host, 4), 0);
  te_rt_free(ctx, p);
}

TEST(AbiCuda, GraphBookkeepingWithoutADevice) {
  // A cuda context built by hand (no stream, no device needed) with a
  // capture in progress set by hand: the checks and the buffer ownership
  // that involve no CUDA call.
  te_rt_context cuda;
  te::rt::bindBackend(&cuda, TE_RT_BACKEND_CUDA);
  te_rt_context *ctx = &cuda;
  te_rt_graph *none = nullptr;
  EXPECT_FAILS_WITH(te_rt_capture_end(ctx, &none),
                    "te_rt_capture_end: this context is not capturing (call "
                    "te_rt_capture_begin first)");
  EXPECT_FAILS_WITH(te_rt_capture_end(ctx, nullptr),
                    "te_rt_capture_end: graph is NULL");
  EXPECT_FAILS_WITH(te_rt_graph_launch(ctx, nullptr),
                    "te_rt_graph_launch: graph is NULL");
  te_rt_context other;
  te::rt::bindBackend(&other, TE_RT_BACKEND_CUDA);
  te_rt_graph foreign;
  foreign.ctx = &other;
  EXPECT_FAILS_WITH(te_rt_graph_launch(ctx, &foreign),
                    "te_rt_graph_launch: graph was captured on another "
                    "context");

  // Two buffers "allocated" before the capture (fake addresses, never
  // dereferenced).
  alignas(256) static char before[2][256];
  cuda.cudaLive[before[0]] = 256;
  cuda.cudaLive[before[1]] = 256;
  te_rt_graph *graph = new te_rt_graph;
  graph->ctx = ctx;
  cuda.capturing = graph;
  EXPECT_FAILS_WITH(te_rt_capture_begin(ctx),
                    "te_rt_capture_begin: this context is already capturing "
                    "a CUDA graph (call te_rt_capture_end first)");
  char host[8] = {};
  EXPECT_FAILS_WITH(te_rt_copy_to_host(ctx, host, before[0], 8),
                    "te_rt_copy_to_host: cannot copy to the host while "
                    "capturing a CUDA graph (call te_rt_capture_end first)");
  EXPECT_FAILS_WITH(te_rt_copy_to_backend(ctx, before[0], host, 8),
                    "te_rt_copy_to_backend: cannot copy from the host while "
                    "capturing a CUDA graph (call te_rt_capture_end first)");
  EXPECT_FAILS_WITH(te_rt_synchronize(ctx),
                    "te_rt_synchronize: cannot synchronize while capturing a "
                    "CUDA graph (call te_rt_capture_end first)");
  EXPECT_FAILS_WITH(te_rt_graph_launch(ctx, graph),
                    "te_rt_graph_launch: cannot launch a graph while "
                    "capturing a CUDA graph (call te_rt_capture_end first)");
  // Not from te_rt_alloc: cudaFree would break the capture.
  te_rt_free(ctx, host);
  EXPECT_EQ(lastError(), "te_rt_free: cannot cudaFree a buffer that "
                         "te_rt_alloc did not hand out while capturing a CUDA "
                         "graph (call te_rt_capture_end first)");
  // Freed during the capture: the graph keeps it, the cache stays empty.
  te_rt_free(ctx, before[0]);
  EXPECT_TRUE(cuda.cudaCached.empty());
  EXPECT_EQ(cuda.graphOwned.count(before[0]), 1u);
  cuda.capturing = nullptr;
  // Freed again after the capture: still the graph's.
  te_rt_free(ctx, before[0]);
  EXPECT_TRUE(cuda.cudaCached.empty());
  // Without a capture, te_rt_free parks a buffer as before.
  te_rt_free(ctx, before[1]);
  EXPECT_EQ(cuda.cudaCached.size(), 1u);
  // Destroying the graph parks its buffer; freeing it once more is an error.
  te_rt_graph_destroy(graph);
  EXPECT_TRUE(cuda.graphOwned.empty());
  EXPECT_EQ(cuda.cudaCached.size(), 2u);
  EXPECT_TRUE(cuda.cudaLive.empty());
  te_rt_free(ctx, before[0]);
  EXPECT_EQ(lastError(), "te_rt_free: ptr was already freed (or released by "
                         "te_rt_graph_destroy)");
  EXPECT_EQ(cuda.cudaCached.size(), 2u);
}

TEST(AbiCuda, ArgumentChecksComeFirstOnCuda) {
  // A context on the cuda backend, built by hand so that this runs without
  // a GPU: the primitives refuse bad arguments with the cpu path's messages
  // before queuing anything (CudaAbiTest.cpp runs them on a device).
  te_rt_context cuda;
  te::rt::bindBackend(&cuda, TE_RT_BACKEND_CUDA);
  te_rt_context *ctx = &cuda;
  float b[8] = {}, s[2] = {};
  float *p = b;
  const int32_t f32 = TE_RT_DTYPE_F32;
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, f32, nullptr, p,
                                   p, 1e-5, 0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: x is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_bwd(ctx, TE_RT_NORM_RMSNORM, f32, p, p, s, s, p,
                                   0, 2, 2, p, p, p),
                    "te_rt_norm_bwd: dbeta must be NULL for RMSNorm");
  EXPECT_FAILS_WITH(te_rt_gemm_fprop(ctx, f32, nullptr, p, p, p, 2, 2, 2),
                    "te_rt_gemm_fprop: x is NULL");
  EXPECT_FAILS_WITH(te_rt_gemm_dgrad(ctx, f32, p, p, p, -1, 2, 2),
                    "te_rt_gemm_dgrad: m must be >= 0, got -1");
  EXPECT_FAILS_WITH(te_rt_gemm_wgrad(ctx, f32, p, p, p, p, 2, 2, 2, 2),
                    "te_rt_gemm_wgrad: accumulate must be 0 or 1, got 2");
  EXPECT_FAILS_WITH(
      te_rt_act_fwd(ctx, TE_RT_ACT_SWIGLU, f32, p, p, 1, 3, 0, 0, 0, nullptr),
      "te_rt_act_fwd: gated activation swiglu needs an even number of "
      "columns, got 3");
  EXPECT_FAILS_WITH(te_rt_act_bwd(ctx, TE_RT_ACT_GELU, f32, nullptr, p, p, 2, 2,
                                  0, 0, 0, nullptr),
                    "te_rt_act_bwd: dy is NULL");
  EXPECT_FAILS_WITH(te_rt_dbias_dact(ctx, TE_RT_ACT_GEGLU, f32, p, p, p, p, 2,
                                     2, 0, 0, 0, nullptr),
                    "te_rt_dbias_dact: gated activation geglu has no fused "
                    "dbias + dact");
  EXPECT_FAILS_WITH(te_rt_bias_grad(ctx, 7, p, p, 2, 2),
                    "te_rt_bias_grad: unknown dtype 7 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(te_rt_add(ctx, f32, p, p, nullptr, 4),
                    "te_rt_add: c is NULL");
  EXPECT_FAILS_WITH(te_rt_cast(ctx, f32, 9, p, p, 4),
                    "te_rt_cast: unknown dst_dtype 9 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(te_rt_transpose(ctx, f32, p, p + 1, 2, 2),
                    "te_rt_transpose: dst and src overlap");
  EXPECT_EQ(te_rt_context_backend(ctx), TE_RT_BACKEND_CUDA);
}

TEST(AbiCuda, NVFP4NeedsBlackwell) {
  // On a cuda context (built by hand: no GPU needed, the calls refuse
  // before any CUDA call) the NVFP4 calls check their arguments, then fail
  // with a message naming the recipe, the architectures and the way out;
  // te_rt_context_set_seed and te_rt_nvfp4_random_bits work on every
  // backend.
  te_rt_context cuda;
  te::rt::bindBackend(&cuda, TE_RT_BACKEND_CUDA);
  te_rt_context *ctx = &cuda;
  const std::string refusal =
      "NVFP4 is a Blackwell (sm_100+) recipe: its GEMMs need FP4 (E2M1) "
      "tensor cores with E4M3 block scales, which Hopper lacks, and this "
      "build's cuda backend targets Hopper (sm_90); use the cpu backend";
  float f[256] = {}, am = 0;
  uint8_t q[512] = {};
  EXPECT_FAILS_WITH(te_rt_quantize_nvfp4(ctx, TE_RT_DTYPE_F32, f, 16, 16, 0, 1,
                                         1, 0, 1, q, q, &am, q, q, &am),
                    "te_rt_quantize_nvfp4: " + refusal);
  EXPECT_FAILS_WITH(te_rt_gemm_nvfp4(ctx, TE_RT_DTYPE_BF16, q, q, &am, q, q,
                                     &am, 0, nullptr, f, 16, 16, 16, 0),
                    "te_rt_gemm_nvfp4: " + refusal);
  float rowAm[16] = {};
  EXPECT_FAILS_WITH(te_rt_quantize_nvfp4_row_scaled(ctx, TE_RT_DTYPE_F32, f, 16,
                                                    16, 1, q, q, rowAm),
                    "te_rt_quantize_nvfp4_row_scaled: " + refusal);
  EXPECT_FAILS_WITH(te_rt_gemm_nvfp4_row_scaled(ctx, TE_RT_DTYPE_BF16, q, q,
                                                rowAm, q, q, &am, 0, nullptr,
                                                f, 16, 16, 16, 0),
                    "te_rt_gemm_nvfp4_row_scaled: " + refusal);
  // Bad arguments are reported first, with the cpu path's messages.
  EXPECT_FAILS_WITH(te_rt_quantize_nvfp4(ctx, TE_RT_DTYPE_F32, f, 16, 16, 0, 1,
                                         0, 0, 0, q, q, &am, nullptr, nullptr,
                                         nullptr),
                    "te_rt_quantize_nvfp4: rht needs the columnwise copy "
                    "(columnwise_data is NULL): the transform applies to the "
                    "columnwise data only");
  EXPECT_FAILS_WITH(te_rt_gemm_nvfp4(ctx, TE_RT_DTYPE_F32, q, q, &am, q, q, &am,
                                     0, nullptr, f, 16, 16, 8, 0),
                    "te_rt_gemm_nvfp4: k must be a multiple of 16 (NVFP4 "
                    "blocks), got 8");
  EXPECT_EQ(te_rt_context_set_seed(ctx, 42), 0);
  EXPECT_EQ(cuda.seed, 42u);
  EXPECT_EQ(te_rt_nvfp4_random_bits(0, 0, 0, 0), 0xE220A839u);
}

} // namespace
