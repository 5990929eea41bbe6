//===- Runner.cpp - te-run's calls of an entry ------------------*- C++ -*-===//
//
// The calls of an entry on a runtime context: upload, call (and --bench's
// timed calls or CUDA graph launches), download; --caller-memory's arena
// and workspace; the retry of a call refused by the recipe's alignment
// check at the multiple it names.
//
//===----------------------------------------------------------------------===//

#include "DimExpr.h"
#include "Driver.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <numeric>

namespace te::run {

using te::dimexpr::parseUnsigned;

namespace {
std::optional<AlignmentRefusal> parseAlignmentRefusal(const std::string &m) {
  size_t needs = m.find(" needs "), mod = m.find(" % ", needs);
  size_t eq = m.find(" == 0, got ", mod);
  if (needs == std::string::npos || mod == std::string::npos ||
      eq == std::string::npos)
    return std::nullopt;
  std::optional<uint64_t> multiple =
      parseUnsigned(std::string_view(m).substr(mod + 3, eq - mod - 3));
  if (!multiple || *multiple == 0)
    return std::nullopt;
  AlignmentRefusal r{{}, int64_t(*multiple)};
  std::string product = m.substr(needs + 7, mod - needs - 7);
  size_t begin = 0;
  while (begin <= product.size()) {
    size_t star = product.find('*', begin);
    std::string factor = product.substr(begin, star - begin);
    if (std::optional<size_t> k = te::dimexpr::symbolIndex(factor))
      r.symbols.push_back(*k);
    if (star == std::string::npos)
      break;
    begin = star + 1;
  }
  return r;
}
} // namespace

std::optional<std::vector<Tensor>>
Runner::run(const Entry &e, const std::vector<Tensor> &in, unsigned repeats,
            std::vector<double> &times, AlignmentRefusal *refused) {
  std::vector<int64_t> dims = bindDims(e, in);
  for (size_t i = 0; i < in.size(); ++i) {
    const te_module_tensor *a = e.arg(i);
    if (in[i].dtype == "qtensor" &&
        int64_t(in[i].data.size()) != bufferBytes(a, dims))
      die(e.name + ": " + e.argLabel(i) + " (" +
          te_module_tensor_get(a, "type") + ") must be " +
          str(bufferBytes(a, dims)) + " bytes, got " + str(in[i].data.size()));
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < e.numResults; ++i) {
    const te_module_tensor *o = e.result(i);
    Tensor t{dtypeOf(o), shapeOf(o, dims.data()), {}};
    t.data = hostBuffer(bufferBytes(o, dims),
                        e.name + ": result" + std::to_string(i));
    out.push_back(std::move(t));
  }
  std::vector<void *> args, results;
  for (const Tensor &t : in)
    args.push_back(upload(t));
  for (const Tensor &t : out)
    results.push_back(alloc(t.data.size()));
  auto release = [&] {
    for (void *p : args)
      te_rt_free(ctx, p);
    for (void *p : results)
      te_rt_free(ctx, p);
  };
  // te_module_run's message is "<entry> failed: <the entry's error>".
  auto entryError = [&] {
    std::string error = te_rt_last_error(), prefix = e.name + " failed: ";
    return error.rfind(prefix, 0) == 0 ? error.substr(prefix.size()) : error;
  };
  // --caller-memory: the arena and workspace are te-run's, set before
  // every call; a workspace too small for the call's scratch is grown to
  // what the runtime says it needed and the (functional) call rerun.
  void *arena = nullptr, *workspace = nullptr;
  int64_t workspaceBytes = te_rt_workspace_bytes(), arenaBytes = -1;
  // --donate: every donatable argument (te-run's own upload of it).
  std::vector<uint8_t> donated(in.size(), 0);
  bool donates = false;
  for (size_t i = 0; opts.donate && i < in.size(); ++i)
    donates |= (donated[i] = uint8_t(te_module_tensor_donatable(e.arg(i))));
  const uint8_t *donatedFlags = donates ? donated.data() : nullptr;
  if (opts.callerMemory) {
    if (te_module_entry_arena_bytes_donated(e.entry, dims.data(), donatedFlags,
                                            &arenaBytes) != 0)
      die(te_rt_last_error());
    if (arenaBytes < 0)
      die(e.name + ": --caller-memory: the library does not say its arena "
                   "size at run time (made by an older te-compile)");
    arena = alloc(arenaBytes);
    workspace = alloc(workspaceBytes);
    std::cerr << "te-run: " << e.name << ": caller arena " << arenaBytes
              << " bytes, workspace " << workspaceBytes << " bytes\n";
  }
  auto bindMemory = [&] {
    if (!opts.callerMemory)
      return;
    if (te_rt_context_set_arena(ctx, arena, arenaBytes) != 0 ||
        te_rt_context_set_workspace(ctx, workspace, workspaceBytes) != 0)
      die(te_rt_last_error());
  };
  auto launch = [&] {
    bindMemory();
    int32_t rc =
        te_module_run_donated(e.entry, ctx, args.data(), results.data(),
                              dims.data(), donatedFlags);
    // (A donated call that failed midway may have overwritten what it was
    // donated: it is not run again.)
    if (rc != 0 && opts.callerMemory && !donatedFlags) {
      if (int64_t needed = te_rt_context_workspace_needed(ctx);
          needed > workspaceBytes) {
        te_rt_synchronize(ctx);
        te_rt_free(ctx, workspace);
        workspaceBytes = needed;
        workspace = alloc(workspaceBytes);
        bindMemory();
        rc = te_module_run_donated(e.entry, ctx, args.data(), results.data(),
                                   dims.data(), donatedFlags);
      }
    }
    return rc;
  };
  auto call = [&] {
    if (launch() != 0)
      die(te_rt_last_error());
    if (te_rt_synchronize(ctx) != 0)
      die(te_rt_last_error());
  };
  if (launch() != 0) {
    std::string error = entryError();
    std::optional<AlignmentRefusal> r = parseAlignmentRefusal(error);
    if (refused && r && error.rfind(e.name + ": recipe ", 0) == 0) {
      *refused = *r;
      refused->message = error;
      release();
      return std::nullopt;
    }
    die(e.name + " failed: " + error);
  }
  if (te_rt_synchronize(ctx) != 0)
    die(te_rt_last_error());
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].data.empty() &&
        te_rt_copy_to_host(ctx, out[i].data.data(), results[i],
                           out[i].data.size()) != 0)
      die(te_rt_last_error());
  te_rt_graph *graph = nullptr;
  if (opts.graph && repeats) {
    // The warm-up above created the kernels' state, cuBLASLt and the
    // cached buffers: the capture only records work.
    if (te_rt_capture_begin(ctx) != 0)
      die(te_rt_last_error());
    if (launch() != 0) {
      std::string error = entryError();
      if (te_rt_capture_end(ctx, &graph) == 0)
        te_rt_graph_destroy(graph);
      die(e.name + " failed while capturing a CUDA graph: " + error);
    }
    if (te_rt_capture_end(ctx, &graph) != 0)
      die(e.name + ": " + te_rt_last_error());
  }
  for (unsigned i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (graph) {
      if (te_rt_graph_launch(ctx, graph) != 0 || te_rt_synchronize(ctx) != 0)
        die(e.name + " (graph): " + te_rt_last_error());
    } else {
      call();
    }
    times.push_back(std::chrono::duration<double, std::micro>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  te_rt_graph_destroy(graph); // and the arena the capture allocated
  if (opts.callerMemory) {
    te_rt_synchronize(ctx);
    te_rt_context_set_arena(ctx, nullptr, 0);
    te_rt_context_set_workspace(ctx, nullptr, 0);
    te_rt_free(ctx, arena);
    te_rt_free(ctx, workspace);
  }
  release();
  return out;
}

void *Runner::alloc(int64_t bytes) {
  void *p = te_rt_alloc(ctx, bytes);
  if (!p)
    die(te_rt_last_error());
  return p;
}

void *Runner::upload(const Tensor &t) {
  void *p = alloc(t.data.size());
  // An empty tensor (a zero dim) has nothing to copy (and no host data).
  if (!t.data.empty() &&
      te_rt_copy_to_backend(ctx, p, t.data.data(), t.data.size()) != 0)
    die(te_rt_last_error());
  return p;
}

/// Runs `e` on its inputs; generated inputs (--random, initial state) use
/// dims that meet the entry's alignment: those its dim expressions state,
/// and those its recipe's run-time check asks for (the check runs before
/// anything else, so a refused call is retried at the multiple it names).
/// Returns the inputs used and the results.
std::pair<std::vector<Tensor>, std::vector<Tensor>>
runEntry(Runner &runner, const Entry &e, unsigned bench,
         std::vector<double> &times) {
  std::vector<Tensor> given = givenInputs(e);
  std::vector<int64_t> choice(e.numDims, 8);
  for (int attempt = 0;; ++attempt) {
    std::vector<bool> chosen;
    std::vector<int64_t> dims = generatedDims(e, given, choice, chosen);
    std::vector<Tensor> in = completeInputs(e, given, dims);
    AlignmentRefusal refusal;
    std::optional<std::vector<Tensor>> out =
        runner.run(e, in, bench, times, &refusal);
    if (out)
      return {std::move(in), std::move(*out)};
    auto k =
        std::find_if(refusal.symbols.begin(), refusal.symbols.end(),
                     [&](size_t k) { return k < chosen.size() && chosen[k]; });
    if (k == refusal.symbols.end() || attempt >= 8 ||
        choice[*k] >= (int64_t(1) << 20))
      die(e.name + " failed: " + refusal.message);
    int64_t multiple; // global: the refused local multiple x --tp's N
    if (refusal.multiple > (int64_t(1) << 30) ||
        __builtin_mul_overflow(refusal.multiple, dimScales(e)[*k], &multiple))
      die(e.name + " failed: " + refusal.message);
    choice[*k] = std::lcm(choice[*k], multiple);
    if (printingRank())
      std::cerr << "te-run: note: " << e.name << ": generating inputs with d"
                << *k << " = " << choice[*k] << (opts.tp ? " (global)" : "")
                << " (" << refusal.message << ")\n";
  }
}

void report(std::string what, std::vector<double> times) {
  if (times.empty() || !printingRank())
    return;
  if (opts.graph)
    what += " (graph)";
  std::sort(times.begin(), times.end());
  auto at = [&](double q) {
    return times[std::min(times.size() - 1, size_t(q * times.size()))];
  };
  std::printf("bench %s: %zu calls, median %.1f us, p10 %.1f us, p90 %.1f "
              "us, min %.1f us\n",
              what.c_str(), times.size(), at(0.5), at(0.1), at(0.9),
              times.front());
  std::fflush(stdout);
}

} // namespace te::run
