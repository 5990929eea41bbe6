//===- ModulePaddingCheck.h - runs that check quantized padding -*- C++ -*-===//
//
// What ModulePaddingTest.cpp (cpu) and CudaModulePaddingTest.cpp (cuda)
// share: an entry of fixtures/qtensor_library.c run on a context with its
// result buffers first filled with one byte value, and the check that the
// padding of every quantized result is zero afterwards while the inner
// tensors' bytes are those of a run into zero-filled buffers.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_UNITTESTS_MODULEPADDINGCHECK_H
#define TE_RUNTIME_UNITTESTS_MODULEPADDINGCHECK_H

#include "te/Runtime/TEModule.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace te::test {

using Bytes = std::vector<uint8_t>;

/// The fp32 input of the fixture's entries: n seeded values in [-3, 3].
inline Bytes randomInput(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  Bytes b(static_cast<size_t>(n) * 4);
  for (int64_t i = 0; i < n; ++i) {
    float v = dist(rng);
    std::memcpy(b.data() + 4 * i, &v, 4);
  }
  return b;
}

/// Runs `entry` on `ctx` at `dims` on `args` (host bytes, copied to the
/// context's buffers), every result buffer filled with `fill` first; the
/// results' bytes after the run (empty on failure, which is a test
/// failure).
inline std::vector<Bytes> runFilled(te_rt_context *ctx,
                                    const te_module_entry *entry,
                                    const std::vector<Bytes> &args,
                                    const std::vector<int64_t> &dims,
                                    uint8_t fill) {
  std::vector<void *> a, r;
  std::vector<int64_t> sizes;
  auto release = [&] {
    for (void *p : a)
      te_rt_free(ctx, p);
    for (void *p : r)
      te_rt_free(ctx, p);
  };
  for (const Bytes &b : args) {
    a.push_back(te_rt_alloc(ctx, int64_t(b.size())));
    EXPECT_EQ(te_rt_copy_to_backend(ctx, a.back(), b.data(), int64_t(b.size())),
              0)
        << te_rt_last_error();
  }
  for (int64_t i = 0; i < te_module_entry_num_results(entry); ++i) {
    int64_t n = 0;
    EXPECT_EQ(te_module_tensor_bytes(te_module_entry_result(entry, i),
                                     dims.data(), &n),
              0)
        << te_rt_last_error();
    Bytes filled(static_cast<size_t>(n), fill);
    r.push_back(te_rt_alloc(ctx, n));
    sizes.push_back(n);
    EXPECT_EQ(te_rt_copy_to_backend(ctx, r.back(), filled.data(), n), 0)
        << te_rt_last_error();
  }
  std::vector<Bytes> out;
  if (te_module_run(entry, ctx, a.data(), r.data(), dims.data()) != 0 ||
      te_rt_synchronize(ctx) != 0) {
    ADD_FAILURE() << te_rt_last_error();
    release();
    return out;
  }
  for (size_t i = 0; i < r.size(); ++i) {
    out.emplace_back(static_cast<size_t>(sizes[i]));
    EXPECT_EQ(te_rt_copy_to_host(ctx, out.back().data(), r[i], sizes[i]), 0)
        << te_rt_last_error();
  }
  release();
  return out;
}

/// Per byte of quantized result `t`'s buffer at `dims`: whether an inner
/// tensor holds it (te_module_tensor_inner_layout).
inline std::vector<bool> innerBytes(const te_module_tensor *t,
                                    const std::vector<int64_t> &dims) {
  int64_t total = 0;
  EXPECT_EQ(te_module_tensor_bytes(t, dims.data(), &total), 0)
      << te_rt_last_error();
  std::vector<bool> inner(static_cast<size_t>(total));
  for (int64_t k = 0; k < te_module_tensor_num_inner(t); ++k) {
    int64_t offset = 0, bytes = 0;
    EXPECT_EQ(te_module_tensor_inner_layout(t, k, dims.data(), &offset, &bytes),
              0)
        << te_rt_last_error();
    for (int64_t j = offset; j < offset + bytes && j < total; ++j)
      inner[size_t(j)] = true;
  }
  return inner;
}

/// Checks the results of `entry` at `dims` from a run into buffers filled
/// with garbage (`filled`) against those of a run into zeroed buffers
/// (`zeroed`): every padding byte of a quantized result is 0, every other
/// byte is the zeroed run's. Returns the padding bytes checked.
inline int64_t expectPaddingZeroed(const te_module_entry *entry,
                                   const std::vector<int64_t> &dims,
                                   const std::vector<Bytes> &filled,
                                   const std::vector<Bytes> &zeroed) {
  int64_t checked = 0;
  EXPECT_EQ(filled.size(), size_t(te_module_entry_num_results(entry)));
  EXPECT_EQ(zeroed.size(), filled.size());
  for (size_t i = 0; i < filled.size() && i < zeroed.size(); ++i) {
    const te_module_tensor *t = te_module_entry_result(entry, int64_t(i));
    const std::string what = std::string(te_module_entry_name(entry)) + " " +
                             te_module_tensor_label(t);
    if (filled[i].size() != zeroed[i].size()) {
      ADD_FAILURE() << what << ": " << filled[i].size() << " bytes, then "
                    << zeroed[i].size();
      continue;
    }
    std::vector<bool> inner =
        std::string(te_module_tensor_dtype(t)) == "qtensor"
            ? innerBytes(t, dims)
            : std::vector<bool>(filled[i].size(), true);
    int64_t badPadding = 0, badInner = 0, first = -1;
    for (size_t j = 0; j < filled[i].size(); ++j) {
      bool bad = inner[j] ? filled[i][j] != zeroed[i][j] : filled[i][j] != 0;
      if (bad && first < 0)
        first = int64_t(j);
      (inner[j] ? badInner : badPadding) += bad;
      checked += !inner[j];
    }
    EXPECT_EQ(badPadding, 0)
        << what << ": padding bytes not zeroed, first " << first;
    EXPECT_EQ(badInner, 0) << what << ": inner bytes differ from a run into "
                           << "zeroed buffers, first " << first;
  }
  return checked;
}

} // namespace te::test

#endif // TE_RUNTIME_UNITTESTS_MODULEPADDINGCHECK_H
