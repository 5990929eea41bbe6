//===- EntryGraphs.cpp - te_module_run's CUDA graphs of whole entries -----===//
//
// See EntryGraphs.h. A call's key is everything an entry's launches are a
// function of: the entry, its argument and result addresses, its dims, and
// the context's arena, donation flags, workspace and NVFP4 seed. A key seen
// once is remembered; its second call records the graph, later ones replay
// it.
//
//===----------------------------------------------------------------------===//

#include "EntryGraphs.h"

#include "Context.h"
#include "ModuleImpl.h"
#include "RuntimeInternal.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

namespace te::rt {
namespace {

/// Graphs kept per entry (the least recently used is replaced): a loop
/// whose addresses cycle through a few sets (microbatches, alternating
/// buffers) keeps one per set.
constexpr size_t kGraphsPerEntry = 4;
/// Keys remembered per entry that were seen once.
constexpr size_t kSeenPerEntry = 8;
/// Entries with graphs per context (the least recently used are dropped).
constexpr size_t kEntries = 256;
/// An entry stops being captured after this many captures that replays
/// did not pay back (fewer than kMinReplaysPerCapture replays each: its
/// calls keep bringing new addresses), or after kMaxFailures failed ones.
constexpr int64_t kCaptureBudget = 16;
constexpr int64_t kMinReplaysPerCapture = 4;
constexpr int64_t kMaxFailures = 2;

using Key = std::vector<uintptr_t>;

struct Graph {
  Key key;
  te_rt_graph *graph = nullptr;
  uint64_t lastUse = 0;
};

struct PerEntry {
  std::vector<Graph> graphs;
  std::vector<Key> seen; // oldest first
  int64_t captures = 0, replays = 0, failures = 0;
  bool off = false;
  uint64_t lastUse = 0;
  Key lastKey; // TE_RT_ENTRY_GRAPHS_LOG: the previous call's key
  int64_t logged = 0;
};

} // namespace

struct EntryGraphCache {
  std::unordered_map<uint64_t, PerEntry> entries; // by te_module_entry::uid
  uint64_t clock = 0;
  EntryGraphStats stats;
  Key key; // the current call's (reused: a replay allocates nothing)
};

namespace {

void dropEntry(PerEntry &pe, EntryGraphStats &stats) {
  for (Graph &g : pe.graphs)
    te_rt_graph_destroy(g.graph);
  stats.cached -= int64_t(pe.graphs.size());
  pe.graphs.clear();
}

/// The context's part of a call's key, in keyOf's order (after the entry's
/// uid, its argument and result addresses and its dims; the donation flags
/// follow): TE_RT_ENTRY_GRAPHS_LOG names a changed part by these.
constexpr const char *kContextKeyParts[] = {"arena", "arena bytes", "workspace",
                                            "workspace bytes", "seed"};

/// Writes the call's key into `k` (its capacity kept from call to call).
void keyOf(const te_module_entry *entry, const te_rt_context *ctx,
           void *const *args, void *const *results, const int64_t *dims,
           Key &k) {
  k.clear();
  k.push_back(uintptr_t(entry->uid));
  for (size_t i = 0; i < entry->args.size(); ++i)
    k.push_back(reinterpret_cast<uintptr_t>(args[i]));
  for (size_t i = 0; i < entry->results.size(); ++i)
    k.push_back(reinterpret_cast<uintptr_t>(results[i]));
  for (size_t i = 0; i < entry->numDims; ++i)
    k.push_back(uintptr_t(dims[i]));
  const uintptr_t context[] = {reinterpret_cast<uintptr_t>(ctx->arena),
                               uintptr_t(ctx->arenaBytes),
                               reinterpret_cast<uintptr_t>(ctx->workspace),
                               uintptr_t(ctx->workspaceBytes),
                               uintptr_t(ctx->seed)};
  static_assert(std::size(context) == std::size(kContextKeyParts),
                "kContextKeyParts names keyOf's context parts");
  k.insert(k.end(), std::begin(context), std::end(context));
  // the donation flags, packed (their count first: none differs from zeros)
  k.push_back(uintptr_t(ctx->donated.size()));
  for (size_t i = 0; i < ctx->donated.size(); i += sizeof(uintptr_t)) {
    uintptr_t w = 0;
    std::memcpy(&w, ctx->donated.data() + i,
                std::min(sizeof(uintptr_t), ctx->donated.size() - i));
    k.push_back(w);
  }
}

/// Queues `graph` on the caller's stream for `entry`'s call; its status in
/// *rc (the last error names the entry on failure).
void launch(const te_module_entry *entry, te_rt_context *ctx,
            const te_rt_graph *graph, int32_t *rc) {
  *rc = 0;
  if (const char *err =
          te_rt_internal_cuda_graph_launch(graph->exec, ctx->stream)) {
    te_rt_internal_set_error(entry->name +
                             " failed: cudaGraphLaunch failed: " + err);
    *rc = 1;
  }
}

/// TE_RT_ENTRY_GRAPHS_LOG=1: a line on stderr for each call of an entry that
/// does not replay a graph (at most kLogLinesPerEntry per entry): why it ran
/// plainly or captured, and which parts of its key differ from its previous
/// call's (what makes a loop's calls miss their graphs).
constexpr int64_t kLogLinesPerEntry = 32;

bool logEnabled() {
  static const bool on = [] {
    const char *env = std::getenv("TE_RT_ENTRY_GRAPHS_LOG");
    return env && *env && std::strcmp(env, "0") != 0;
  }();
  return on;
}

/// The parts of `now` that differ from `before` (keyOf's layout), named.
std::string keyChanges(const te_module_entry *entry, const Key &before,
                       const Key &now) {
  if (before.empty())
    return "first call";
  std::string out;
  auto add = [&](const std::string &what) {
    out += out.empty() ? what : ", " + what;
  };
  const size_t nArgs = entry->args.size(), nRes = entry->results.size();
  const size_t dimsAt = 1 + nArgs + nRes, ctxAt = dimsAt + entry->numDims,
               flagsAt = ctxAt + std::size(kContextKeyParts);
  for (size_t i = 0; i < std::max(before.size(), now.size()); ++i) {
    if (i < before.size() && i < now.size() && before[i] == now[i])
      continue;
    if (i >= 1 && i < 1 + nArgs)
      add("arg" + std::to_string(i - 1));
    else if (i >= 1 + nArgs && i < dimsAt)
      add("result" + std::to_string(i - 1 - nArgs));
    else if (i >= dimsAt && i < ctxAt)
      add("dim" + std::to_string(i - dimsAt));
    else if (i >= ctxAt && i < flagsAt)
      add(kContextKeyParts[i - ctxAt]);
    else if (i >= flagsAt) {
      add("donation flags");
      break;
    }
  }
  return out.empty() ? "same key" : out;
}

void logCall(const te_module_entry *entry, PerEntry &pe, const Key &key,
             const char *what) {
  if (!logEnabled() || pe.logged >= kLogLinesPerEntry)
    return;
  ++pe.logged;
  std::fprintf(
      stderr,
      "te-mlir entry graphs: %s: %s (changed since its last call: %s)\n",
      entry->name.c_str(), what, keyChanges(entry, pe.lastKey, key).c_str());
}

/// -1: TE_RT_ENTRY_GRAPHS decides; 0 / 1: overridden (tests).
std::atomic<int> overridden{-1};
} // namespace

bool entryGraphsEnabled() {
  if (int o = overridden.load(std::memory_order_relaxed); o >= 0)
    return o != 0;
  static const bool on = [] {
    const char *env = std::getenv("TE_RT_ENTRY_GRAPHS");
    if (!env || !*env)
      return kEntryGraphsByDefault;
    return std::strcmp(env, "0") != 0;
  }();
  return on;
}

void overrideEntryGraphs(int on) {
  overridden.store(on < 0 ? -1 : on != 0, std::memory_order_relaxed);
}

bool runEntryGraph(const te_module_entry *entry, te_rt_context *ctx,
                   void *const *args, void *const *results,
                   const int64_t *dims, int32_t (*record)(void *),
                   void *state, int32_t *rc) {
  if (ctx->backend != TE_RT_BACKEND_CUDA || !entryGraphsEnabled() ||
      ctx->capturing)
    return false;
  // Collectives are left to the caller's own graphs: every rank must run
  // the same launches.
  for (te_rt_comm *comm : ctx->comms)
    if (comm)
      return false;
  if (!ctx->entryGraphs) {
    ctx->entryGraphs = new (std::nothrow) EntryGraphCache;
    if (!ctx->entryGraphs)
      return false;
  }
  EntryGraphCache &cache = *ctx->entryGraphs;
  // The caller records its own graph: its capture must see the launches.
  if (te_rt_internal_cuda_stream_capturing(ctx->stream)) {
    ++cache.stats.plain;
    return false;
  }
  PerEntry &pe = cache.entries[entry->uid];
  pe.lastUse = ++cache.clock;
  if (pe.off) {
    ++cache.stats.plain;
    return false;
  }
  Key &key = cache.key;
  keyOf(entry, ctx, args, results, dims, key);
  // (the log's previous key: kept only while logging)
  struct Remember {
    PerEntry &pe;
    const Key &key;
    ~Remember() {
      if (logEnabled())
        pe.lastKey = key;
    }
  } remember{pe, key};
  for (Graph &g : pe.graphs)
    if (g.key == key) {
      g.lastUse = cache.clock;
      launch(entry, ctx, g.graph, rc);
      if (*rc == 0) {
        ++pe.replays;
        ++cache.stats.replays;
      }
      return true;
    }
  auto seen = std::find(pe.seen.begin(), pe.seen.end(), key);
  if (seen == pe.seen.end()) {
    if (pe.seen.size() == kSeenPerEntry)
      pe.seen.erase(pe.seen.begin());
    pe.seen.push_back(key);
    ++cache.stats.plain;
    logCall(entry, pe, key, "plain, a key not seen before");
    return false;
  }
  pe.seen.erase(seen);
  // Captures that replays did not pay back: this entry's addresses churn.
  if (pe.captures >= kCaptureBudget &&
      pe.replays < kMinReplaysPerCapture * pe.captures) {
    pe.off = true;
    dropEntry(pe, cache.stats);
    ++cache.stats.plain;
    logCall(entry, pe, key,
            ("off from now: its addresses churn (" +
             std::to_string(pe.captures) + " captures, " +
             std::to_string(pe.replays) + " replays)")
                .c_str());
    return false;
  }
  te_rt_graph *graph = captureAside(ctx, record, state);
  if (!graph) {
    ++cache.stats.failures;
    ++cache.stats.plain;
    if (++pe.failures >= kMaxFailures) {
      pe.off = true;
      dropEntry(pe, cache.stats);
    }
    logCall(entry, pe, key,
            (std::string("plain, its capture failed") +
             (pe.off ? " (off from now)" : "") + ": " + te_rt_last_error())
                .c_str());
    return false; // (the plain run that follows overwrites the last error)
  }
  if (pe.graphs.size() == kGraphsPerEntry) {
    auto lru = std::min_element(
        pe.graphs.begin(), pe.graphs.end(),
        [](const Graph &a, const Graph &b) { return a.lastUse < b.lastUse; });
    te_rt_graph_destroy(lru->graph);
    pe.graphs.erase(lru);
    --cache.stats.cached;
  }
  pe.graphs.push_back({key, graph, cache.clock});
  ++pe.captures;
  logCall(entry, pe, key,
          ("captured (graph " + std::to_string(pe.graphs.size()) + " of " +
           std::to_string(kGraphsPerEntry) + ")")
              .c_str());
  ++cache.stats.captures;
  ++cache.stats.cached;
  // Bounded entries: drop the least recently used one's graphs.
  if (cache.entries.size() > kEntries) {
    auto lru = cache.entries.end();
    for (auto it = cache.entries.begin(); it != cache.entries.end(); ++it)
      if (it->first != entry->uid &&
          (lru == cache.entries.end() || it->second.lastUse < lru->second.lastUse))
        lru = it;
    if (lru != cache.entries.end()) {
      dropEntry(lru->second, cache.stats);
      cache.entries.erase(lru);
    }
  }
  launch(entry, ctx, graph, rc);
  return true;
}

void destroyEntryGraphs(te_rt_context *ctx) {
  if (!ctx->entryGraphs)
    return;
  for (auto &[uid, pe] : ctx->entryGraphs->entries)
    dropEntry(pe, ctx->entryGraphs->stats);
  delete ctx->entryGraphs;
  ctx->entryGraphs = nullptr;
}

EntryGraphStats entryGraphStats(const te_rt_context *ctx) {
  return ctx && ctx->entryGraphs ? ctx->entryGraphs->stats : EntryGraphStats{};
}

} // namespace te::rt
