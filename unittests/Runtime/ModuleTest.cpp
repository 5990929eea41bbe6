//===- ModuleTest.cpp - the module client (te_module_*) ---------*- C++ -*-===//
//
// te/Runtime/TEModule.h on hand-written fixture libraries
// (fixtures/step_library.c, fixtures/no_info_library.c, built by CMake):
// opening (missing file, not ELF, truncated, no te_module_info), entry
// lookup, tensor descriptions, dim binding and its messages, shapes and
// sizes, and a real run and training step on the cpu backend.
//
//===----------------------------------------------------------------------===//

#include "te/Runtime/TEModule.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::string lastError() { return te_rt_last_error(); }

/// A file under the test's temporary directory holding `bytes`.
std::string writeFile(const std::string &name, const std::string &bytes) {
  std::string path = ::testing::TempDir() + "/te_module_" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class ModuleTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(te_module_open(TE_TEST_STEP_LIBRARY, &module), 0) << lastError();
    ctx = te_rt_context_create(TE_RT_BACKEND_CPU);
    ASSERT_NE(ctx, nullptr) << lastError();
  }
  void TearDown() override {
    te_rt_context_destroy(ctx);
    te_module_close(module);
  }
  const te_module_entry *entry(const char *name) {
    const te_module_entry *e = te_module_find_entry(module, name);
    EXPECT_NE(e, nullptr) << lastError();
    return e;
  }
  te_module *module = nullptr;
  te_rt_context *ctx = nullptr;
};

//===----------------------------------------------------------------------===//
// Opening
//===----------------------------------------------------------------------===//

TEST(ModuleOpen, MissingFile) {
  te_module *m = reinterpret_cast<te_module *>(1);
  EXPECT_NE(te_module_open("/nonexistent/lib.so", &m), 0);
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(lastError(), "cannot load '/nonexistent/lib.so': no such file");
}

TEST(ModuleOpen, NotElf) {
  std::string path = writeFile("text.so", "this is not a library\n");
  te_module *m = nullptr;
  EXPECT_NE(te_module_open(path.c_str(), &m), 0);
  EXPECT_EQ(lastError(),
            "cannot load '" + path + "': not an ELF file (bad magic)");
}

TEST(ModuleOpen, Truncated) {
  std::string bytes = readFile(TE_TEST_STEP_LIBRARY);
  ASSERT_GT(bytes.size(), 100u);
  std::string path = writeFile("cut100.so", bytes.substr(0, 100));
  te_module *m = nullptr;
  EXPECT_NE(te_module_open(path.c_str(), &m), 0);
  EXPECT_EQ(lastError().rfind("cannot load '" + path +
                                  "': the program header table (file bytes "
                                  "64..",
                              0),
            0u)
      << lastError();
  EXPECT_NE(lastError().find("ends past the end of the file (100 bytes)"),
            std::string::npos)
      << lastError();
}

TEST(ModuleOpen, NoModuleInfo) {
  te_module *m = nullptr;
  EXPECT_NE(te_module_open(TE_TEST_NO_INFO_LIBRARY, &m), 0);
  EXPECT_EQ(lastError(), std::string("'") + TE_TEST_NO_INFO_LIBRARY +
                             "' is not a te-compile library (no "
                             "te_module_info)");
}

TEST(ModuleOpen, Directory) {
  te_module *m = nullptr;
  EXPECT_NE(te_module_open(::testing::TempDir().c_str(), &m), 0);
  EXPECT_NE(lastError().find("': not a regular file"), std::string::npos)
      << lastError();
}

TEST(ModuleOpen, NullArguments) {
  te_module *m = nullptr;
  EXPECT_NE(te_module_open(nullptr, &m), 0);
  EXPECT_EQ(lastError(), "te_module_open: path is NULL");
  EXPECT_NE(te_module_open(TE_TEST_STEP_LIBRARY, nullptr), 0);
  te_module_close(nullptr); // fine
}

//===----------------------------------------------------------------------===//
// Entries and tensors
//===----------------------------------------------------------------------===//

TEST_F(ModuleTest, ListsEntries) {
  ASSERT_EQ(te_module_num_entries(module), 4);
  std::vector<std::string> names;
  for (int64_t i = 0; i < te_module_num_entries(module); ++i)
    names.push_back(te_module_entry_name(te_module_entry_at(module, i)));
  EXPECT_EQ(names, (std::vector<std::string>{"scale", "scale_fwd",
                                             "scale_bwd", "q"}));
  EXPECT_EQ(te_module_entry_at(module, 4), nullptr);
  EXPECT_STREQ(te_module_get(module, "target"), "cpu");
  EXPECT_EQ(te_module_get(module, "arch"), nullptr);
  EXPECT_STREQ(te_module_path(module), TE_TEST_STEP_LIBRARY);
  EXPECT_NE(std::strstr(te_module_info_text(module), "\"scale_fwd\""),
            nullptr);
}

TEST_F(ModuleTest, EntryLookup) {
  const te_module_entry *e = entry("scale_fwd");
  EXPECT_STREQ(te_module_entry_symbol(e), "te_entry_scale_fwd");
  EXPECT_STREQ(te_module_entry_get(e, "te.forward_of"), "scale");
  EXPECT_EQ(te_module_entry_num_args(e), 3);
  EXPECT_EQ(te_module_entry_num_results(e), 3);
  EXPECT_EQ(te_module_entry_num_dims(e), 1);
  EXPECT_EQ(te_module_find_entry(module, "nope"), nullptr);
  EXPECT_EQ(lastError(),
            std::string("'") + TE_TEST_STEP_LIBRARY + "': no entry 'nope'");
}

TEST_F(ModuleTest, TensorDescriptions) {
  const te_module_entry *bwd = entry("scale_bwd");
  const te_module_tensor *x = te_module_entry_arg(bwd, 0);
  EXPECT_STREQ(te_module_tensor_dtype(x), "float32");
  EXPECT_STREQ(te_module_tensor_label(x), "arg0 (te.saved=m.input)");
  EXPECT_STREQ(te_module_tensor_role(x, TE_MODULE_ROLE_ALIAS), "input:0");
  EXPECT_STREQ(te_module_tensor_role(x, TE_MODULE_ROLE_SAVED), "m.input");
  EXPECT_EQ(te_module_tensor_role(x, TE_MODULE_ROLE_STATE), nullptr);
  EXPECT_EQ(te_module_tensor_rank(x), 2);
  EXPECT_STREQ(te_module_tensor_dim(x, 0), "d0");
  EXPECT_STREQ(te_module_tensor_dim(x, 1), "4");
  EXPECT_STREQ(te_module_tensor_shape_text(x), "[\"d0\",4]");
  EXPECT_STREQ(te_module_tensor_label(te_module_entry_arg(bwd, 3)),
               "arg3 (te.grad_of=output:0)");
  EXPECT_STREQ(te_module_tensor_label(te_module_entry_result(bwd, 1)),
               "result1 (te.grad_of=input:1)");
  EXPECT_STREQ(te_module_tensor_role(te_module_entry_arg(entry("scale"), 1),
                                     TE_MODULE_ROLE_CACHED_WEIGHT),
               "m.w");
  EXPECT_EQ(te_module_entry_arg(bwd, 5), nullptr);
  EXPECT_EQ(te_module_entry_state_result(bwd, 4), 2);
  EXPECT_EQ(te_module_entry_state_result(bwd, 0), -1);
  // state_in_place: the new history may be written over argument 4
  // (te_entry_scale_bwd reads each slot before writing it).
  EXPECT_EQ(te_module_entry_result_state_in_place(bwd, 2), 4);
  EXPECT_EQ(te_module_entry_result_state_in_place(bwd, 0), -1);
  EXPECT_EQ(te_module_entry_result_state_in_place(bwd, 3), -1);
  EXPECT_EQ(te_module_entry_result_state_in_place(bwd, -1), -1);
  EXPECT_EQ(te_module_entry_result_state_in_place(nullptr, 0), -1);
  EXPECT_EQ(te_module_entry_result_state_in_place(entry("scale_fwd"), 1), -1);
}

TEST_F(ModuleTest, ArenaBytes) {
  int64_t bytes = 0, dims[1] = {8};
  EXPECT_EQ(te_module_entry_arena_bytes(entry("scale_fwd"), dims, &bytes), 0);
  EXPECT_EQ(bytes, 64);
  EXPECT_STREQ(te_module_entry_arena_text(entry("scale_fwd")), "64");
  EXPECT_EQ(te_module_entry_arena_bytes(entry("scale_bwd"), dims, &bytes), 0);
  EXPECT_EQ(bytes, -1);
  EXPECT_STREQ(te_module_entry_arena_text(entry("scale_bwd")), "\"dynamic\"");
}

TEST_F(ModuleTest, InitialState) {
  float v = -1;
  const te_module_entry *fwd = entry("scale_fwd"), *bwd = entry("scale_bwd");
  EXPECT_EQ(te_module_tensor_initial_state(te_module_entry_arg(fwd, 2), &v), 0);
  EXPECT_EQ(v, 1.0f); // scales start at one
  EXPECT_EQ(te_module_tensor_initial_state(te_module_entry_arg(bwd, 4), &v), 0);
  EXPECT_EQ(v, 0.0f); // amax histories at zero
  EXPECT_NE(te_module_tensor_initial_state(te_module_entry_arg(fwd, 0), &v), 0);
  EXPECT_EQ(lastError(),
            "scale_fwd: arg0 is not float32 recipe state (te.state)");
}

//===----------------------------------------------------------------------===//
// Dims, shapes and sizes
//===----------------------------------------------------------------------===//

TEST_F(ModuleTest, BindDims) {
  const te_module_entry *e = entry("scale");
  int64_t x[2] = {6, 4}, w[1] = {4}, dims[1] = {-1};
  const int64_t *shapes[2] = {x, w};
  int64_t ranks[2] = {2, 1};
  const char *dtypes[2] = {"float32", "float32"};
  ASSERT_EQ(te_module_bind_dims(e, dtypes, shapes, ranks, dims), 0)
      << lastError();
  EXPECT_EQ(dims[0], 6);
  int64_t shape[2];
  ASSERT_EQ(te_module_tensor_shape(te_module_entry_result(e, 0), dims, shape),
            0);
  EXPECT_EQ(shape[0], 6);
  EXPECT_EQ(shape[1], 4);
  int64_t bytes;
  ASSERT_EQ(te_module_tensor_bytes(te_module_entry_result(e, 0), dims, &bytes),
            0);
  EXPECT_EQ(bytes, 6 * 4 * 4);
}

TEST_F(ModuleTest, BindDimsErrors) {
  const te_module_entry *e = entry("scale");
  int64_t x[2] = {6, 4}, w[1] = {5}, dims[1];
  const int64_t *shapes[2] = {x, w};
  int64_t ranks[2] = {2, 1};
  const char *dtypes[2] = {"float32", "bfloat16"};
  EXPECT_NE(te_module_bind_dims(e, dtypes, shapes, ranks, dims), 0);
  EXPECT_EQ(lastError(), "scale: arg1 (te.cached_weight=m.w) must be "
                         "float32, got bfloat16");
  EXPECT_NE(te_module_bind_dims(e, nullptr, shapes, ranks, dims), 0);
  EXPECT_EQ(lastError(), "scale: arg1 (te.cached_weight=m.w) dim 0 must be "
                         "4, got [5]");
  ranks[0] = 1;
  EXPECT_NE(te_module_bind_dims(e, nullptr, shapes, ranks, dims), 0);
  EXPECT_EQ(lastError(), "scale: arg0 must have rank 2, got [6]");
  ranks[0] = -1;
  w[0] = 4;
  EXPECT_NE(te_module_bind_dims(e, nullptr, shapes, ranks, dims), 0);
  EXPECT_EQ(lastError(),
            "scale: the dim symbol d0 is not bound: no argument with it was "
            "given as a tensor (quantized tensors read from files carry no "
            "shape)");
}

TEST_F(ModuleTest, BindDimsDisagree) {
  const te_module_entry *bwd = entry("scale_bwd");
  int64_t x[2] = {6, 4}, w[1] = {4}, rows[1] = {7}, dy[2] = {6, 4},
          hist[1] = {2}, dims[1];
  const int64_t *shapes[5] = {x, w, rows, dy, hist};
  int64_t ranks[5] = {2, 1, 1, 2, 1};
  EXPECT_NE(te_module_bind_dims(bwd, nullptr, shapes, ranks, dims), 0);
  EXPECT_EQ(lastError(),
            "scale_bwd: arg2 (te.saved=m.rowsum) dim 0 is 7 but d0 = 6 from "
            "an earlier argument (these dims must be equal)");
}

// Argument dims that are expressions of the others (a sequence-parallel
// backward's gathered rows, `2*d0`) are checked once the symbols are bound.
TEST(ModuleBind, ArgumentExpression) {
  te_module *module = nullptr;
  ASSERT_EQ(te_module_open(TE_TEST_GATHERED_LIBRARY, &module), 0)
      << lastError();
  const te_module_entry *e = te_module_find_entry(module, "gathered");
  ASSERT_NE(e, nullptr) << lastError();
  int64_t x[2] = {3, 4}, dy[2] = {6, 4}, dims[1] = {-1};
  const int64_t *shapes[2] = {x, dy};
  int64_t ranks[2] = {2, 2};
  ASSERT_EQ(te_module_bind_dims(e, nullptr, shapes, ranks, dims), 0)
      << lastError();
  EXPECT_EQ(dims[0], 3);
  dy[0] = 5;
  EXPECT_NE(te_module_bind_dims(e, nullptr, shapes, ranks, dims), 0);
  EXPECT_EQ(lastError(), "gathered: arg1 dim 0 must be 2*d0 = 6, got 5");
  te_module_close(module);
}

TEST(ModuleOpen, MalformedArgumentExpression) {
  te_module *module = nullptr;
  EXPECT_NE(te_module_open(TE_TEST_MALFORMED_GATHERED_LIBRARY, &module), 0);
  EXPECT_NE(lastError().find("args[1].shape[0]: '2*' is neither a dim symbol "
                             "d0..d0 nor an expression of them"),
            std::string::npos)
      << lastError();
}

TEST_F(ModuleTest, QuantizedLayout) {
  const te_module_entry *q = entry("q");
  const te_module_tensor *t = te_module_entry_arg(q, 0);
  EXPECT_STREQ(te_module_tensor_dtype(t), "qtensor");
  EXPECT_STREQ(te_module_tensor_get(t, "type"), "!te.qtensor<?x64xe4m3>");
  EXPECT_EQ(te_module_tensor_alignment(t), 128);
  ASSERT_EQ(te_module_tensor_num_inner(t), 2);
  EXPECT_STREQ(te_module_tensor_inner_name(t, 1), "scale_inv");
  EXPECT_STREQ(te_module_tensor_inner_dtype(t, 1), "float32");
  EXPECT_EQ(te_module_tensor_inner_rank(t, 1), 1);
  EXPECT_STREQ(te_module_tensor_inner_dim(t, 1, 0), "ceildiv(d0, 32)");
  int64_t dims[2] = {33, 10}, offset, bytes, total;
  // data: 33 * 64 = 2112 bytes, padded to 2176; scale_inv: 2 floats.
  ASSERT_EQ(te_module_tensor_inner_layout(t, 1, dims, &offset, &bytes), 0);
  EXPECT_EQ(offset, 2176);
  EXPECT_EQ(bytes, 8);
  ASSERT_EQ(te_module_tensor_bytes(t, dims, &total), 0);
  EXPECT_EQ(total, 2176 + 128);
  EXPECT_NE(te_module_tensor_inner_layout(t, 2, dims, &offset, &bytes), 0);
  EXPECT_EQ(lastError(),
            "te_module_tensor_inner_layout: no inner tensor 2 of arg0");
}

TEST_F(ModuleTest, ShapeErrors) {
  const te_module_tensor *r = te_module_entry_result(entry("q"), 0);
  int64_t dims[2] = {33, 10}, shape[2];
  EXPECT_NE(te_module_tensor_shape(r, dims, shape), 0);
  EXPECT_EQ(lastError(), "dim expression 'roundup(d0/32, 4)': 33 is not "
                         "divisible by 32 (the recipe needs a multiple of 32 "
                         "there)");
  dims[0] = 64;
  ASSERT_EQ(te_module_tensor_shape(r, dims, shape), 0) << lastError();
  EXPECT_EQ(shape[0], 4);
  EXPECT_EQ(shape[1], 10);
  int64_t value, divisor;
  EXPECT_NE(te_module_eval_dim("d0/3", dims, 2, &value, &divisor), 0);
  EXPECT_EQ(divisor, 3);
  EXPECT_EQ(te_module_eval_dim("ceildiv(d1, 4) * d0", dims, 2, &value,
                               &divisor),
            0);
  EXPECT_EQ(value, 3 * 64);
  EXPECT_NE(te_module_eval_dim("d2", dims, 2, &value, &divisor), 0);
  EXPECT_EQ(divisor, 0);
  EXPECT_EQ(lastError(), "malformed dim expression 'd2' at column 3: unknown "
                         "dim symbol 'd2' (the entry has 2 dim symbols)");
  int64_t big[2] = {int64_t(1) << 62, 1 << 30};
  int64_t bytes;
  EXPECT_NE(te_module_tensor_bytes(te_module_entry_arg(entry("q"), 1), big,
                                   &bytes),
            0);
  EXPECT_NE(lastError().find("has more elements than fit in int64"),
            std::string::npos)
      << lastError();
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

TEST_F(ModuleTest, RunEntry) {
  const te_module_entry *e = entry("scale");
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, w = {1, 10, 100, -1};
  int64_t dims[1] = {2};
  void *y = nullptr;
  int64_t bytes = 0;
  ASSERT_EQ(te_module_tensor_alloc(te_module_entry_result(e, 0), ctx, dims,
                                   &y, &bytes),
            0)
      << lastError();
  EXPECT_EQ(bytes, 32);
  void *args[2] = {x.data(), w.data()}, *results[1] = {y};
  ASSERT_EQ(te_module_run(e, ctx, args, results, dims), 0) << lastError();
  std::vector<float> out(8);
  ASSERT_EQ(te_rt_copy_to_host(ctx, out.data(), y, 32), 0);
  EXPECT_EQ(out, (std::vector<float>{1, 20, 300, -4, 5, 60, 700, -8}));
  te_rt_free(ctx, y);
  EXPECT_NE(te_module_run(e, ctx, nullptr, results, dims), 0);
  EXPECT_EQ(lastError(), "scale failed: args is NULL (2 arguments)");
  EXPECT_NE(te_module_run(e, nullptr, args, results, dims), 0);
  EXPECT_EQ(lastError(), "scale failed: the context is NULL");
}

// Donation on a library without donatable arguments (what te-compile's
// libraries are for their forward and inference entries, and older ones
// for all): nothing is donatable, a flag on an argument fails before the
// run naming it, no flags is te_module_run; the context's flags the entry
// reads (te_rt_arg_donated) are set and cleared around a donated run.
TEST_F(ModuleTest, DonationRefusedWhereNothingIsDonatable) {
  const te_module_entry *e = entry("scale");
  EXPECT_EQ(te_module_tensor_donatable(te_module_entry_arg(e, 0)), 0);
  EXPECT_EQ(te_module_entry_arena_donated_text(e), nullptr);
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, w = {1, 10, 100, -1};
  std::vector<float> y(8);
  int64_t dims[1] = {2};
  void *args[2] = {x.data(), w.data()}, *results[1] = {y.data()};
  const uint8_t flags[2] = {1, 0};
  EXPECT_NE(te_module_run_donated(e, ctx, args, results, dims, flags), 0);
  EXPECT_EQ(lastError(), "te_module_run_donated: scale arg0 is not donatable "
                         "(te_module_tensor_donatable)");
  EXPECT_EQ(y, std::vector<float>(8, 0.0f)); // not run
  int64_t plain = -1, none = -1, flagged = -1;
  ASSERT_EQ(te_module_entry_arena_bytes(e, dims, &plain), 0) << lastError();
  ASSERT_EQ(te_module_entry_arena_bytes_donated(e, dims, nullptr, &none), 0)
      << lastError();
  EXPECT_EQ(none, plain);
  EXPECT_NE(te_module_entry_arena_bytes_donated(e, dims, flags, &flagged), 0);
  ASSERT_EQ(te_module_run_donated(e, ctx, args, results, dims, nullptr), 0)
      << lastError();
  EXPECT_EQ(y, (std::vector<float>{1, 20, 300, -4, 5, 60, 700, -8}));
  // The flags compiled entries read.
  const uint8_t set[3] = {0, 1, 0};
  ASSERT_EQ(te_rt_context_set_donated(ctx, set, 3), 0) << lastError();
  EXPECT_EQ(te_rt_arg_donated(ctx, 1), 1);
  EXPECT_EQ(te_rt_arg_donated(ctx, 0), 0);
  EXPECT_EQ(te_rt_arg_donated(ctx, 7), 0);
  ASSERT_EQ(te_rt_context_set_donated(ctx, nullptr, 0), 0) << lastError();
  EXPECT_EQ(te_rt_arg_donated(ctx, 1), 0);
  EXPECT_NE(te_rt_context_set_donated(ctx, nullptr, 2), 0);
}

TEST_F(ModuleTest, StepFeed) {
  te_module_step *step = nullptr;
  ASSERT_EQ(te_module_step_create(module, "scale", &step), 0) << lastError();
  EXPECT_STREQ(te_module_entry_name(te_module_step_fwd(step)), "scale_fwd");
  EXPECT_STREQ(te_module_entry_name(te_module_step_bwd(step)), "scale_bwd");
  const std::pair<int32_t, int64_t> expected[] = {
      {TE_MODULE_FEED_INPUT, 0},
      {TE_MODULE_FEED_INPUT, 1},
      {TE_MODULE_FEED_RESULT, 1},
      {TE_MODULE_FEED_GRAD, 0},
      {TE_MODULE_FEED_STATE, -1}};
  for (int64_t i = 0; i < 5; ++i) {
    int32_t kind;
    int64_t index;
    ASSERT_EQ(te_module_step_feed(step, i, &kind, &index), 0);
    EXPECT_EQ(std::make_pair(kind, index), expected[i]) << "argument " << i;
  }
  int32_t kind;
  int64_t index;
  EXPECT_NE(te_module_step_feed(step, 5, &kind, &index), 0);
  EXPECT_EQ(lastError(), "scale_bwd has no argument 5");
  te_module_step_destroy(step);

  // Without a name: the pair linked by te.forward_of / te.backward_of.
  ASSERT_EQ(te_module_step_create(module, nullptr, &step), 0) << lastError();
  EXPECT_STREQ(te_module_entry_name(te_module_step_fwd(step)), "scale_fwd");
  te_module_step_destroy(step);
  EXPECT_NE(te_module_step_create(module, "main", &step), 0);
  EXPECT_EQ(lastError(), "the library has no main_fwd/_bwd (compile with "
                         "te-compile --train)");
}

// te-split-wgrad's third entry (fixtures/wgrad_library.c): found by
// te.wgrad_of, fed from the backward's stash (a quantized buffer, the only
// source of its dim) and the caller's main_grad, its dims from the
// backward's; a step without one says so.
TEST_F(ModuleTest, WgradStep) {
  te_module_step *plain = nullptr;
  ASSERT_EQ(te_module_step_create(module, "scale", &plain), 0) << lastError();
  EXPECT_EQ(te_module_step_wgrad(plain), nullptr);
  int32_t kind;
  int64_t index;
  EXPECT_NE(te_module_step_wgrad_feed(plain, 0, &kind, &index), 0);
  EXPECT_EQ(lastError(),
            "scale_bwd has no wgrad entry (no argument is te.delay_wgrad)");
  te_module_step_destroy(plain);

  te_module *lib = nullptr;
  ASSERT_EQ(te_module_open(TE_TEST_WGRAD_LIBRARY, &lib), 0) << lastError();
  te_module_step *step = nullptr;
  ASSERT_EQ(te_module_step_create(lib, "lin", &step), 0) << lastError();
  const te_module_entry *wgrad = te_module_step_wgrad(step);
  ASSERT_NE(wgrad, nullptr);
  EXPECT_STREQ(te_module_entry_name(wgrad), "lin_bwd_wgrad");
  EXPECT_STREQ(te_module_tensor_role(te_module_entry_arg(wgrad, 0),
                                     TE_MODULE_ROLE_WGRAD_STASH),
               "stash0");
  EXPECT_STREQ(te_module_tensor_label(te_module_entry_arg(wgrad, 0)),
               "arg0 (te.wgrad_stash=stash0)");
  const std::pair<int32_t, int64_t> expected[] = {
      {TE_MODULE_FEED_STASH, 1}, {TE_MODULE_FEED_MAIN_GRAD, 1}};
  for (int64_t i = 0; i < 2; ++i) {
    ASSERT_EQ(te_module_step_wgrad_feed(step, i, &kind, &index), 0);
    EXPECT_EQ(std::make_pair(kind, index), expected[i]) << "argument " << i;
  }
  EXPECT_NE(te_module_step_wgrad_feed(step, 2, &kind, &index), 0);
  EXPECT_EQ(lastError(), "lin_bwd_wgrad has no argument 2");
  int64_t fwdDims[1] = {3}, wgradDims[1] = {0};
  ASSERT_EQ(te_module_step_wgrad_dims(step, fwdDims, wgradDims), 0)
      << lastError();
  EXPECT_EQ(wgradDims[0], 3);

  // forward, backward, then the deferred weight gradient into main_grad
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
                     w = {1, 10, 100, -1}, y(12), dy(12, 1.0f), dx(12),
                     stash(24, -1.0f), main = {0.5f, 0, 0, 0}, dw(4);
  void *fwdArgs[2] = {x.data(), w.data()}, *fwdResults[1] = {y.data()};
  void *grads[1] = {dy.data()}, *bwdArgs[3] = {};
  void *bwdResults[2] = {dx.data(), stash.data()};
  ASSERT_EQ(te_module_step_run(step, ctx, fwdArgs, fwdResults, grads, bwdArgs,
                               bwdResults, fwdDims),
            0)
      << lastError();
  EXPECT_EQ(
      dx, (std::vector<float>{1, 10, 100, -1, 1, 10, 100, -1, 1, 10, 100, -1}));
  void *wgradArgs[2] = {nullptr, main.data()}, *wgradResults[1] = {dw.data()};
  EXPECT_NE(te_module_step_wgrad_args(step, fwdArgs, fwdResults, grads, nullptr,
                                      wgradArgs),
            0);
  EXPECT_EQ(lastError(), "lin_bwd_wgrad: no buffer for arg0 "
                         "(te.wgrad_stash=stash0) (backward result 1)");
  ASSERT_EQ(te_module_step_wgrad_args(step, fwdArgs, fwdResults, grads,
                                      bwdResults, wgradArgs),
            0)
      << lastError();
  EXPECT_EQ(wgradArgs[0], stash.data());
  EXPECT_EQ(wgradArgs[1], main.data()); // the caller's
  ASSERT_EQ(te_module_run(wgrad, ctx, wgradArgs, wgradResults, wgradDims), 0)
      << lastError();
  EXPECT_EQ(dw, (std::vector<float>{15.5f, 18, 21, 24}));
  te_module_step_destroy(step);
  te_module_close(lib);
}

TEST_F(ModuleTest, TrainingStep) {
  te_module_step *step = nullptr;
  ASSERT_EQ(te_module_step_create(module, "scale", &step), 0) << lastError();
  const te_module_entry *fwd = te_module_step_fwd(step),
                        *bwd = te_module_step_bwd(step);
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, w = {1, 10, 100, -1},
                     scaleA = {1}, scaleB = {0}, y(8), rowsum(2), dy(8, 1.0f),
                     hist = {0, 0}, dx(8), dw(4), newHist(2);
  int64_t fwdDims[1] = {2}, bwdDims[1] = {0};
  ASSERT_EQ(te_module_step_bwd_dims(step, fwdDims, bwdDims), 0) << lastError();
  EXPECT_EQ(bwdDims[0], 2);
  void *fwdArgs[3] = {x.data(), w.data(), scaleA.data()};
  void *fwdResults[3] = {y.data(), rowsum.data(), scaleB.data()};
  void *grads[3] = {dy.data(), nullptr, nullptr};
  void *bwdArgs[5] = {nullptr, nullptr, nullptr, nullptr, hist.data()};
  void *bwdResults[3] = {dx.data(), dw.data(), newHist.data()};
  ASSERT_EQ(te_module_step_run(step, ctx, fwdArgs, fwdResults, grads, bwdArgs,
                               bwdResults, fwdDims),
            0)
      << lastError();
  // The backward was fed from the forward.
  EXPECT_EQ(bwdArgs[0], x.data());
  EXPECT_EQ(bwdArgs[1], w.data());
  EXPECT_EQ(bwdArgs[2], rowsum.data());
  EXPECT_EQ(bwdArgs[3], dy.data());
  EXPECT_EQ(bwdArgs[4], hist.data());
  EXPECT_EQ(y, (std::vector<float>{1, 20, 300, -4, 5, 60, 700, -8}));
  EXPECT_EQ(rowsum, (std::vector<float>{10, 26}));
  EXPECT_EQ(dx, (std::vector<float>{1, 10, 100, -1, 1, 10, 100, -1}));
  EXPECT_EQ(dw, (std::vector<float>{6, 8, 10, 12}));
  // Recipe state: the forward's doubled, the backward's history advanced;
  // the state results carry it to the next step.
  EXPECT_EQ(te_module_entry_state_result(fwd, 2), 2);
  EXPECT_EQ(scaleB[0], 2.0f);
  EXPECT_EQ(newHist, (std::vector<float>{1, 2}));
  fwdArgs[2] = scaleB.data();
  fwdResults[2] = scaleA.data();
  bwdArgs[4] = newHist.data();
  bwdResults[2] = hist.data();
  ASSERT_EQ(te_module_step_run(step, ctx, fwdArgs, fwdResults, grads, bwdArgs,
                               bwdResults, fwdDims),
            0)
      << lastError();
  EXPECT_EQ(scaleA[0], 4.0f);
  EXPECT_EQ(hist, (std::vector<float>{2, 4}));
  EXPECT_EQ(te_module_entry_num_args(bwd), 5);
  // The backward's history written in place (state_in_place): one buffer
  // as its argument and its result.
  ASSERT_EQ(te_module_entry_result_state_in_place(bwd, 2), 4);
  fwdArgs[2] = scaleA.data();
  fwdResults[2] = scaleB.data();
  bwdArgs[4] = bwdResults[2] = hist.data();
  ASSERT_EQ(te_module_step_run(step, ctx, fwdArgs, fwdResults, grads, bwdArgs,
                               bwdResults, fwdDims),
            0)
      << lastError();
  EXPECT_EQ(hist, (std::vector<float>{3, 6}));

  // A missing gradient is named.
  grads[0] = nullptr;
  EXPECT_NE(te_module_step_run(step, ctx, fwdArgs, fwdResults, grads, bwdArgs,
                               bwdResults, fwdDims),
            0);
  EXPECT_EQ(lastError(), "scale_bwd: no buffer for arg3 (te.grad_of=output:0) "
                         "(the gradient of forward result 0)");
  te_module_step_destroy(step);
}

} // namespace
