//===- Driver.cpp - te-run's flow -------------------------------*- C++ -*-===//
//
// The library opened by the module client, the entry chosen (--entry,
// --step) and checked against --tp, the runtime context (and --tp's
// communicator), then --list, one entry or a training step (NAME_fwd, then
// NAME_bwd on its saved bundle and the output gradients).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <filesystem>
#include <iostream>

namespace fs = std::filesystem;

namespace te::run {
namespace {

/// A qtensor's parts (" {scale_inv, transpose}": which copies it holds, e.g.
/// a stash kept columnwise only); "" for other tensors.
std::string partsOf(const te_module_tensor *t) {
  std::string s;
  for (int64_t i = 0, n = te_module_tensor_num_inner(t); i < n; ++i)
    s += std::string(i ? ", " : " {") + te_module_tensor_inner_name(t, i);
  return s.empty() ? s : s + "}";
}

void printList(const std::vector<Entry> &entries) {
  // A tensor-parallel library's fields (te-compile --tp), where present.
  auto tpField = [](const char *key, const char *value) {
    return value ? std::string(" (") + key + "=" + value + ")" : "";
  };
  for (const Entry &e : entries) {
    std::cout << e.name
              << tpField("te.tp", te_module_entry_get(e.entry, "te.tp"))
              << tpField("te.sequence_parallel",
                         te_module_entry_get(e.entry, "te.sequence_parallel"))
              << "\n";
    for (size_t i = 0; i < e.numArgs; ++i)
      std::cout << "  " << e.argLabel(i) << ": " << dtypeOf(e.arg(i)) << " "
                << te_module_tensor_shape_text(e.arg(i))
                << tpField("te.tp_shard",
                           te_module_tensor_get(e.arg(i), "te.tp_shard"))
                << (te_module_tensor_donatable(e.arg(i)) ? " (donatable)" : "")
                << partsOf(e.arg(i)) << "\n";
    for (size_t i = 0; i < e.numResults; ++i) {
      const te_module_tensor *r = e.result(i);
      std::cout << "  -> result" << i << ": " << dtypeOf(r) << " "
                << te_module_tensor_shape_text(r);
      for (auto [role, key] : kNamingRoles)
        if (auto s = roleOf(r, role))
          std::cout << " (" << key << "=" << *s << ")";
      std::cout << tpField("te.tp_shard",
                           te_module_tensor_get(r, "te.tp_shard"))
                << partsOf(r) << "\n";
    }
    std::cout << "  arena: " << te_module_entry_arena_text(e.entry)
              << " bytes";
    // With every donatable argument donated (te_module_run_donated).
    if (const char *donated = te_module_entry_arena_donated_text(e.entry))
      std::cout << ", " << donated << " bytes with its donatable arguments "
                << "donated";
    std::cout << "\n";
    // The plan's peak: what a call holds above its arguments (its results
    // and its arena; intermediates lent a result's buffer take no more).
    int64_t arena = 0;
    if (te_module_entry_num_dims(e.entry) == 0 &&
        te_module_entry_arena_bytes(e.entry, nullptr, &arena) == 0 &&
        arena >= 0) {
      int64_t results = 0, bytes = 0;
      for (size_t i = 0; i < e.numResults; ++i)
        if (te_module_tensor_bytes(e.result(i), nullptr, &bytes) == 0)
          results += bytes;
      std::cout << "  peak: " << results + arena
                << " bytes above the arguments (results " << results
                << " + arena " << arena << ")\n";
    }
    // Where the runner zeroes the quantized results' padding: beside the
    // entry's work where the entry never writes it, else after the entry.
    std::string beside, after;
    for (size_t i = 0; i < e.numResults; ++i) {
      if (std::string(dtypeOf(e.result(i))) != "qtensor")
        continue;
      std::string &list =
          te_module_entry_result_padding_written(e.entry, int64_t(i)) == 0
              ? beside
              : after;
      list += (list.empty() ? "result" : ", result") + std::to_string(i);
    }
    if (!beside.empty() || !after.empty())
      std::cout << "  padding zeroed: beside the entry "
                << (beside.empty() ? "none" : beside) << "; after it "
                << (after.empty() ? "none" : after) << "\n";
    // Recipe state the caller may pass as one buffer (state_in_place).
    std::string inPlace;
    for (size_t i = 0; i < e.numResults; ++i)
      if (int64_t a =
              te_module_entry_result_state_in_place(e.entry, int64_t(i));
          a >= 0)
        inPlace += (inPlace.empty() ? "" : ", ") + std::string("result") +
                   std::to_string(i) + " over arg" + std::to_string(a);
    if (!inPlace.empty())
      std::cout << "  state written in place: " << inPlace << "\n";
  }
}

/// The open library, its entries and the runtime context a run uses.
struct Session {
  te_module *module = nullptr;
  std::vector<Entry> order;
  te_rt_context *ctx = nullptr;
  te_rt_comm *comm = nullptr;
  /// ", tp=N" (and " (sequence parallel)") under --tp, for the summary.
  std::string tpText;

  const Entry *find(const std::string &name) const {
    for (const Entry &e : order)
      if (e.name == name)
        return &e;
    return nullptr;
  }
  /// Releases the communicator, the context and the library.
  void finish() {
    if (comm) {
      te_rt_synchronize(ctx);
      te_rt_context_set_comm(ctx, TE_RT_GROUP_TP, nullptr);
      te_rt_comm_destroy(comm);
    }
    te_rt_context_destroy(ctx);
    te_module_close(module);
  }
};

/// The entry run without --step (--entry, or the only one), checked
/// against --tp; with --step, NAME_fwd (if there) is checked and "" is
/// returned. The entry run says which tensor parallelism the library was
/// compiled for; it must be --tp's.
std::string chooseEntry(const Session &s) {
  std::string name = opts.entry;
  if (opts.step.empty()) {
    if (name.empty()) {
      if (s.order.size() != 1)
        die("the library has " + str(s.order.size()) +
            " entries; choose one with --entry (see --list)");
      name = s.order.front().name;
    }
    if (!s.find(name))
      die("no entry '" + name + "' (see --list)");
    checkTP(*s.find(name));
  } else if (const Entry *fwd = s.find(opts.step + "_fwd")) {
    checkTP(*fwd);
  }
  return name;
}

/// The runtime context on the backend of --backend (default: the
/// library's target) and, under --tp, its communicator.
void createContext(Session &s, const std::string &name) {
  std::string backend = opts.backend;
  if (backend.empty())
    backend = te_module_get(s.module, "target")
                  ? te_module_get(s.module, "target")
                  : "auto";
  int32_t requested = te_rt_backend_from_name(backend.c_str());
  if (requested == TE_RT_BACKEND_INVALID)
    die("--backend must be cpu, cuda or auto, got '" + backend + "'");
  s.ctx = te_rt_context_create(requested);
  if (!s.ctx)
    die(te_rt_last_error());
  if (te_rt_context_set_seed(s.ctx, opts.rngSeed) != 0)
    die(te_rt_last_error());
  if (opts.graph && te_rt_context_backend(s.ctx) != TE_RT_BACKEND_CUDA)
    die(std::string("--graph: CUDA graphs need the cuda backend (this "
                    "context runs on ") +
        te_rt_backend_name(te_rt_context_backend(s.ctx)) +
        "; use --backend cuda)");
  s.comm = opts.tp ? setUpComm(s.ctx) : nullptr;
  if (opts.tp) {
    const Entry *e =
        opts.step.empty() ? s.find(name) : s.find(opts.step + "_fwd");
    const char *sp =
        e ? te_module_entry_get(e->entry, "te.sequence_parallel") : nullptr;
    s.tpText =
        ", tp=" + str(opts.tp) +
        (sp && std::string_view(sp) == "true" ? " (sequence parallel)" : "");
  }
}

/// The backward's inputs of a training step: fed from the forward's
/// inputs `in` and results `out`, the output gradients (--grads or
/// --random) and TE's initial recipe state; with `bwdOut`, the inputs of
/// the step's wgrad entry instead (te-split-wgrad), whose stashes are
/// backward results (the same gradient files, seeds and initial state as
/// the backward's).
std::vector<Tensor>
backwardInputs(te_module_step *step, const Entry &bwd,
               const std::vector<Tensor> &in, const std::vector<Tensor> &out,
               const std::vector<Tensor> *bwdOut = nullptr) {
  std::vector<Tensor> bwdIn(bwd.numArgs);
  for (size_t i = 0; i < bwd.numArgs; ++i) {
    const te_module_tensor *a = bwd.arg(i);
    int32_t kind;
    int64_t k;
    check(bwdOut ? te_module_step_wgrad_feed(step, int64_t(i), &kind, &k)
                 : te_module_step_feed(step, int64_t(i), &kind, &k));
    if (kind == TE_MODULE_FEED_STASH && bwdOut) {
      bwdIn[i] = (*bwdOut)[size_t(k)];
    } else if (kind == TE_MODULE_FEED_INPUT) {
      bwdIn[i] = in[size_t(k)];
    } else if (kind == TE_MODULE_FEED_RESULT) {
      bwdIn[i] = out[size_t(k)];
    } else if (kind == TE_MODULE_FEED_GRAD) {
      std::string path =
          opts.gradsDir.empty()
              ? ""
              : findNpy(opts.gradsDir, "result" + std::to_string(k));
      if (path.empty() && opts.randomSeed < 0)
        die("--step: no gradient for forward result " + str(k) +
            " (give --grads DIR with result" + str(k) + ".npy, or --random)");
      // Under --tp the gradients are GLOBAL (as the tp=1 run's) and
      // each rank keeps its part by the bwd argument's te.tp_shard.
      std::string what = bwd.name + ": " + bwd.argLabel(i) + " (" +
                         (path.empty() ? "--random" : "'" + path + "'") +
                         ", the gradient of forward result " + str(k) + ")";
      Shard shard = shardOf(a, what, true);
      bwdIn[i] = localPart(
          path.empty()
              ? randomTensor(a, unsigned(opts.randomSeed) + 1000u + unsigned(k),
                             globalShapeOf(out[size_t(k)].shape, shard, what))
              : loadNpy(path, dtypeOf(a)),
          shard, what);
    } else if (kind == TE_MODULE_FEED_MAIN_GRAD) {
      // Megatron's fp32 main_grad of forward argument k: --grads DIR's
      // main_grad_argK.npy, else zeros (a fresh accumulation).
      std::string file = "main_grad_arg" + std::to_string(k);
      std::string path =
          opts.gradsDir.empty() ? "" : findNpy(opts.gradsDir, file);
      if (!path.empty()) {
        bwdIn[i] = loadNpy(path, dtypeOf(a));
        if (bwdIn[i].shape != in[size_t(k)].shape)
          die("--step: '" + path + "' has shape " +
              shapeString(bwdIn[i].shape) + " but forward argument " + str(k) +
              " (whose main_grad it is) has shape " +
              shapeString(in[size_t(k)].shape));
      } else {
        std::string what = bwd.name + ": " + bwd.argLabel(i) +
                           " (zeros: the main_grad of forward argument " +
                           str(k) + ")";
        const std::vector<int64_t> &shape = in[size_t(k)].shape;
        bwdIn[i] = Tensor{
            "float32", shape,
            hostBuffer(byteCount(elementCount(shape, what), 4, what), what)};
      }
    } else {
      // The backward's recipe state starts as TE initializes it.
      bwdIn[i] = std::move(*initialState(a, shapeOf(a, nullptr)));
    }
  }
  return bwdIn;
}

/// --outputs of a training step: fwd/resultN (and state.NAME), bwd/grad_argN
/// (and state.NAME, resultN).
void writeStepResults(const Entry &fwd, const Entry &bwd,
                      const std::vector<Tensor> &out,
                      const std::vector<Tensor> &grads, const Entry *wgrad,
                      const std::vector<Tensor> &wgrads) {
  std::error_code ec;
  const std::string &outputsDir = opts.outputsDir;
  std::string fwdDir = outputsDir + "/fwd", bwdDir = outputsDir + "/bwd";
  fs::create_directories(fwdDir, ec);
  fs::create_directories(bwdDir, ec);
  size_t numResults = 0;
  for (size_t i = 0; i < fwd.numResults; ++i) {
    const te_module_tensor *r = fwd.result(i);
    std::string what = fwd.name + ": result" + std::to_string(i);
    if (auto state = roleOf(r, TE_MODULE_ROLE_STATE))
      writeResult(fwdDir, "state." + *state, out[i], r, what);
    else if (!roleOf(r, TE_MODULE_ROLE_SAVED))
      writeResult(fwdDir, "result" + std::to_string(numResults++), out[i], r,
                  what);
  }
  // The wgrad entry's gradients beside the backward's, by the same names;
  // the backward's stashes by their names (stashK).
  auto writeGrads = [&](const Entry &e, const std::vector<Tensor> &results) {
    for (size_t i = 0; i < results.size(); ++i) {
      const te_module_tensor *r = e.result(i);
      std::string what = e.name + ": result" + std::to_string(i);
      if (auto of = roleOf(r, TE_MODULE_ROLE_GRAD_OF))
        writeResult(bwdDir, "grad_arg" + of->substr(of->find(':') + 1),
                    results[i], r, what);
      else if (auto state = roleOf(r, TE_MODULE_ROLE_STATE))
        writeResult(bwdDir, "state." + *state, results[i], r, what);
      else if (auto stash = roleOf(r, TE_MODULE_ROLE_WGRAD_STASH))
        writeResult(bwdDir, *stash, results[i], r, what);
      else
        writeResult(bwdDir, "result" + std::to_string(i), results[i], r, what);
    }
  };
  writeGrads(bwd, grads);
  if (wgrad)
    writeGrads(*wgrad, wgrads);
}

/// --step NAME: a training step: forward, then backward on the saved
/// bundle.
void runStep(Session &s, Runner &runner) {
  const std::string &stepName = opts.step;
  unsigned bench = opts.bench;
  const Entry *fwdEntry = s.find(stepName + "_fwd"),
              *bwdEntry = s.find(stepName + "_bwd");
  te_module_step *step = nullptr;
  if (!fwdEntry || !bwdEntry)
    die("--step " + stepName + ": the library has no " + stepName +
        "_fwd/_bwd (compile with te-compile --train)");
  if (te_module_step_create(s.module, stepName.c_str(), &step) != 0)
    die(std::string("--step: ") + te_rt_last_error());
  const Entry &fwd = *fwdEntry, &bwd = *bwdEntry;
  // te-split-wgrad's entry, run after the backward (backward_dw()).
  const te_module_entry *w = te_module_step_wgrad(step);
  const Entry *wgrad = w ? s.find(te_module_entry_name(w)) : nullptr;
  std::vector<double> fwdTimes, bwdTimes, wgradTimes;
  auto [in, out] = runEntry(runner, fwd, bench, fwdTimes);
  std::vector<Tensor> bwdIn = backwardInputs(step, bwd, in, out);
  std::vector<Tensor> grads = *runner.run(bwd, bwdIn, bench, bwdTimes);
  std::vector<Tensor> wgrads;
  if (wgrad)
    wgrads = *runner.run(*wgrad, backwardInputs(step, *wgrad, in, out, &grads),
                         bench, wgradTimes);
  te_module_step_destroy(step);
  if (!opts.outputsDir.empty())
    writeStepResults(fwd, bwd, out, grads, wgrad, wgrads);
  if (printingRank())
    std::cout << "te-run: step " << stepName << ": " << fwd.name << " ("
              << out.size() << " results) and " << bwd.name << " ("
              << grads.size() << " results)"
              << (wgrad ? " then " + wgrad->name + " (" +
                              std::to_string(wgrads.size()) + " results)"
                        : std::string())
              << " on " << te_rt_backend_name(te_rt_context_backend(s.ctx))
              << s.tpText << "\n";
  report(fwd.name, fwdTimes);
  report(bwd.name, bwdTimes);
  if (wgrad)
    report(wgrad->name, wgradTimes);
}

/// One entry, `name`.
void runOne(Session &s, Runner &runner, const std::string &name) {
  const Entry *entry = s.find(name);
  std::vector<double> times;
  std::vector<Tensor> out = runEntry(runner, *entry, opts.bench, times).second;
  if (!opts.outputsDir.empty())
    for (size_t i = 0; i < out.size(); ++i)
      writeResult(opts.outputsDir, "result" + std::to_string(i), out[i],
                  entry->result(i), name + ": result" + std::to_string(i));
  if (printingRank())
    std::cout << "te-run: " << name << ": " << out.size() << " results on "
              << te_rt_backend_name(te_rt_context_backend(s.ctx)) << s.tpText
              << "\n";
  report(name, times);
}

} // namespace

int runTERun(int argc, char **argv) {
  parseArguments(argc, argv);
  if (opts.tp)
    startTP(argc, argv);

  // The module client checks the file before dlopen and validates the
  // module info before anything reads it.
  Session s;
  check(te_module_open(opts.library.c_str(), &s.module));
  for (int64_t i = 0; i < te_module_num_entries(s.module); ++i)
    s.order.emplace_back(te_module_entry_at(s.module, i));

  if (opts.list) {
    if (printingRank())
      printList(s.order);
    return 0;
  }

  std::string name = chooseEntry(s);
  createContext(s, name);
  Runner runner(s.ctx);
  std::error_code ec;
  const std::string &outputsDir = opts.outputsDir;
  if (!outputsDir.empty() && (fs::create_directories(outputsDir, ec), ec))
    die("cannot create '" + outputsDir + "': " + ec.message());

  if (!opts.step.empty())
    runStep(s, runner);
  else
    runOne(s, runner, name);
  s.finish();
  return 0;
}

} // namespace te::run
