//===- ModuleImpl.h - te-mlir module client: shared parts -------*- C++ -*-===//
//
// What the module client's two halves share: the objects behind
// TEModule.h's opaque handles, built by Module.cpp (loading, the
// descriptions) and used by ModuleRun.cpp (running entries and training
// steps), and the helpers both call. Not part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_MODULE_MODULEIMPL_H
#define TE_LIB_RUNTIME_MODULE_MODULEIMPL_H

#include "te/Runtime/TEModule.h"

#include "Json.h"
#include "Padding.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace te::module {

using EntryFn = int32_t (*)(te_rt_context *, void *const *, void *const *,
                            const int64_t *);

/// Records `message` as the last error; returns 1.
int32_t fail(const std::string &message);

inline std::string str(int64_t v) { return std::to_string(v); }

/// "[2x3]".
std::string shapeString(const std::vector<int64_t> &shape);

/// One dim of a validated shape: an integer, or a symbol or expression.
struct Dim {
  std::string text;
  std::optional<int64_t> value;
};

/// The value of dim expression `expr` at `dims`, which must be >= 0.
bool evaluateDim(const std::string &expr, const std::vector<int64_t> &dims,
                 int64_t &out, int64_t *inexactDivisor = nullptr);

/// Whether every argument `donated` (one flag per argument, NULL: none)
/// names is donatable; else fails naming it, `what` first.
bool checkDonated(const te_module_entry *entry, const uint8_t *donated,
                  const char *what);

/// A shape at `dims`.
bool evaluateShape(const std::vector<Dim> &shapeDims,
                   const std::vector<int64_t> &dims,
                   std::vector<int64_t> &shape);

} // namespace te::module

struct te_module_tensor {
  struct Inner {
    std::string name, dtype;
    std::vector<te::module::Dim> dims;
  };
  const te_module_entry *entry = nullptr;
  const te::json::Object *info = nullptr;
  std::string dtype, label, shapeText;
  std::vector<te::module::Dim> dims;
  std::optional<std::string> roles[7]; // TE_MODULE_ROLE_*
  /// The module info's te.donatable: te_module_run_donated may hand over
  /// its buffer.
  bool donatable = false;
  int64_t alignment = 0;
  std::vector<Inner> inner;

  /// The entry's dims as a vector (null: none, as for a state's shape).
  std::vector<int64_t> dimsOf(const int64_t *values) const;
  bool layout(const std::vector<int64_t> &dims, std::vector<int64_t> *offsets,
              std::vector<int64_t> *sizes, int64_t &total) const;
};

namespace te::module {
/// A number no other entry loaded in this process has (entry graphs key on
/// it: an entry loaded later at a freed entry's address is another entry).
inline uint64_t newEntryUid() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
} // namespace te::module

struct te_module_entry {
  const uint64_t uid = te::module::newEntryUid();
  const te_module *module = nullptr;
  const te::json::Object *info = nullptr;
  std::string name, symbol, arenaText;
  /// arena_bytes_donated's text (empty: no donatable argument).
  std::string arenaDonatedText;
  std::optional<int64_t> arena; ///< nullopt: "dynamic"
  size_t numDims = 0;
  std::vector<te_module_tensor> args, results;
  te::module::EntryFn fn = nullptr;
  /// te_arena_bytes_<fn> (module info's arena_symbol; null in libraries
  /// older than it).
  int64_t (*arenaFn)(const int64_t *) = nullptr;
  /// te_arena_bytes_donated_<fn> (arena_donated_symbol; null when no
  /// argument is donatable).
  int64_t (*arenaDonatedFn)(const int64_t *, const uint8_t *) = nullptr;
  /// The qtensor results: te_module_run zeroes their padding.
  std::vector<size_t> quantizedResults;
  /// Per result: whether the entry may write its buffer beyond its
  /// tensors' bytes (module info `padding_written`; every result when a
  /// library has no such key). The runner zeroes the padding of the others
  /// before the entry, beside its work (ModuleRun.cpp).
  std::vector<bool> paddingWritten;
  /// Per result: the recipe-state argument the caller may pass as its
  /// buffer too (module info `state_in_place`), or -1.
  std::vector<int64_t> stateInPlace;

  using Padding = std::shared_ptr<const std::vector<te::padding::Range>>;
  /// The padding of the quantized results at the dims of the last runs,
  /// most recent first (at most kPaddingCacheSize): a run at dims seen
  /// before neither evaluates a shape nor allocates. Runs on several
  /// threads (one context each) share it under the mutex.
  static constexpr size_t kPaddingCacheSize = 8;
  mutable std::mutex paddingMutex;
  mutable std::vector<std::pair<std::vector<int64_t>, Padding>> paddingCache;

  /// The padding ranges of the quantized results at `dims` (numDims
  /// values), from the cache or computed (null, with the last error, when a
  /// layout cannot be evaluated there).
  Padding padding(const int64_t *dims) const;
};

struct te_module {
  std::string path;
  void *handle = nullptr;
  std::string infoText;
  te::json::Value info;
  std::vector<std::unique_ptr<te_module_entry>> entries;
  std::map<std::string, const te_module_entry *> byName;
};

struct te_module_step {
  const te_module_entry *fwd = nullptr, *bwd = nullptr;
  /// te-split-wgrad's <fn>_bwd_wgrad (te.wgrad_of the backward), or null.
  const te_module_entry *wgrad = nullptr;
  /// Per backward argument: TE_MODULE_FEED_* and the index.
  std::vector<std::pair<int32_t, int64_t>> feed;
  /// The same per argument of the wgrad entry.
  std::vector<std::pair<int32_t, int64_t>> wgradFeed;
};

#endif // TE_LIB_RUNTIME_MODULE_MODULEIMPL_H
