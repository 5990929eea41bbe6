//===- EntryGraphs.h - te_module_run's CUDA graphs of whole entries -*- C++ -*-===//
//
// On a cuda context an entry launches one kernel, memset or cuBLASLt call
// per runtime call: 5 to 25 launches of 2-5 host microseconds each, the
// largest part of an eager step's host time at few tokens. An entry is a
// pure function of its buffers' addresses and its dims (every kernel
// parameter is derived from them, the context's workspace and donation
// flags), and a caching allocator hands a training loop the same addresses
// step after step. So te_module_run records the entry once into a CUDA
// graph (on the context's own stream, without running it) when it sees the
// same call a second time, and from then on replays that graph with one
// launch. Same kernels, same parameters: the same bits.
//
// On by default (kEntryGraphsByDefault; TE_RT_ENTRY_GRAPHS=0 turns them
// off). A call runs plainly (no graph) when the caller's stream is being
// captured (the caller's own graph records the kernels), on the cpu
// backend, when they are off, or when a capture of the entry failed (a host
// copy, a synchronization, an allocation without a caller arena); an entry whose
// captures keep failing or whose calls keep bringing new addresses stops
// being captured. Bounded: kGraphsPerEntry graphs per entry, the least
// recently used replaced; kEntries entries per context.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_MODULE_ENTRYGRAPHS_H
#define TE_LIB_RUNTIME_MODULE_ENTRYGRAPHS_H

#include "te/Runtime/TEModule.h"

#include <cstdint>

namespace te::rt {

/// Counters of one context's entry graphs (for tests and diagnostics).
struct EntryGraphStats {
  int64_t replays = 0;  ///< calls that launched a cached graph
  int64_t captures = 0; ///< graphs recorded (and launched)
  int64_t plain = 0;    ///< calls that ran the entry's launches themselves
  int64_t failures = 0; ///< captures that failed (the call then ran plainly)
  int64_t cached = 0;   ///< graphs held now
};

/// Runs `entry` through a cached CUDA graph when it can (see above): true
/// when it did (the call's status in *rc), false when the caller must run
/// the entry plainly. `record(state)` queues the entry's work (what a
/// plain run queues) while it is captured.
bool runEntryGraph(const te_module_entry *entry, te_rt_context *ctx,
                   void *const *args, void *const *results,
                   const int64_t *dims, int32_t (*record)(void *),
                   void *state, int32_t *rc);

/// Destroys the context's entry graphs (te_rt_context_destroy).
void destroyEntryGraphs(te_rt_context *ctx);

/// The context's counters (all zero before its first cuda entry run).
EntryGraphStats entryGraphStats(const te_rt_context *ctx);

/// Whether te_module_run uses entry graphs: TE_RT_ENTRY_GRAPHS (read once)
/// "1" on, "0" off; unset: kEntryGraphsByDefault.
constexpr bool kEntryGraphsByDefault = true;
bool entryGraphsEnabled();
/// Tests: 1 / 0 force entry graphs on / off, -1 leaves it to the variable.
void overrideEntryGraphs(int on);

} // namespace te::rt

#endif // TE_LIB_RUNTIME_MODULE_ENTRYGRAPHS_H
