//===- Args.cpp - te-run's command line -------------------------*- C++ -*-===//
//
// te-run's options and usage (--help); the parse fills `opts`.
//
//===----------------------------------------------------------------------===//

#include "DimExpr.h"
#include "Driver.h"

#include <filesystem>
#include <iostream>

namespace te::run {

Options opts;

using te::dimexpr::parseUnsigned;

namespace {
const char *const kUsage = R"(usage: te-run LIBRARY.so [options]
Runs a library made by te-compile.
  --list                 list the entries (arguments, results, arena) and exit
  --entry NAME           the entry to run (needed when there are several)
  --step NAME            a training step: NAME_fwd, then NAME_bwd on its
                         saved bundle and the output gradients
  --input NAME=FILE      an argument from a .npy file, by index (argN or N)
                         or by its te.saved / te.grad_of / te.state /
                         te.cached_weight name
  --inputs DIR           argN.npy (or argN.bf16.npy) for the others
  --grads DIR            --step: resultN.npy, the gradient of forward result N;
                         main_grad_argN.npy, the fp32 main_grad of forward
                         argument N (te.main_grad; zeros when absent)
  --random SEED          seeded uniform [-1, 1) values for arguments not given
                         (quantized tensors: all-zero bytes); their dynamic
                         dims are those of the given inputs, else 8, raised
                         to the recipe's alignment (MXFP8 32, NVFP4 16)
  --rng-seed N           the runtime context's seed for stochastic rounding
                         (NVFP4 gradients; te_rt_context_set_seed; default 0)
  --outputs DIR          write resultN.npy (--step: fwd/resultN, bwd/grad_argN,
                         and state.NAME for delayed-scaling state)
  --backend B            cpu, cuda or auto (default: the library's target)
  --bench N              time N calls after one warm-up (the results are
                         the warm-up's)
  --graph                with --bench, on the cuda backend: capture the
                         entry (--step: each of NAME_fwd and NAME_bwd) into
                         a CUDA graph after the warm-up and time N graph
                         launches instead of N calls
  --caller-memory        give each entry its arena and workspace from te-run
                         (te_rt_context_set_arena / _set_workspace, sized by
                         te_module_entry_arena_bytes at the bound dims), as
                         a PyTorch op does, instead of letting it allocate
  --donate               hand every donatable argument's buffer (te-run's
                         upload: the saved bundle of a backward) over to
                         the entry (te_module_run_donated; the arena sized
                         by te_module_entry_arena_bytes_donated); the
                         results are the same bits. Not with --bench
  --tp N                 run a tensor-parallel library (te-compile --tp N)
                         under `mpirun -np N te-run LIB.so --tp N ...`: the
                         entry (--step: NAME_fwd) must say te.tp = N. Each
                         rank uses the runtime communicator (cpu: MPI; cuda:
                         NCCL, one GPU per local rank unless
                         CUDA_VISIBLE_DEVICES is set). Inputs, --grads and
                         --random values are GLOBAL (the tp=1 shapes and,
                         for --random, the tp=1 values; the default dynamic
                         dim 8 is global too); each rank keeps its part by
                         the argument's te.tp_shard (rows: a block of dim 0;
                         cols: of the last dim; gated_rows: a block of each
                         half of dim 0; replicated: all of it). Rank 0
                         prints and writes GLOBAL results under the tp=1
                         names: rows/cols/gated_rows gathered, replicated
                         ones checked bitwise identical on every rank,
                         partial ones summed over the ranks in fp32 and
                         rounded once. Arguments and results without
                         te.tp_shard (the saved bundle, recipe state) are
                         per-rank: never sliced, and not written, nor are
                         split quantized results. An error on any rank ends
                         the whole job (MPI_Abort). Needs te-run built with
                         MPI (else --tp is an error).
bf16 tensors are uint16 .npy files named *.bf16.npy; a quantized tensor
(!te.qtensor) is its buffer's bytes as a 1-D uint8 .npy. Delayed-scaling
state arguments not given start as TE's (amax histories 0, scales 1).
)";
} // namespace

/// Parses argv into `opts`; exits with the usage on errors.
void parseArguments(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto value = [&](size_t &i, const std::string &flag) -> std::string {
    const std::string &a = args[i];
    if (a.size() > flag.size() && a[flag.size()] == '=')
      return a.substr(flag.size() + 1);
    if (i + 1 >= args.size())
      die(flag + " needs a value (see --help)");
    return args[++i];
  };
  auto number = [&](const std::string &flag, const std::string &v) {
    std::optional<uint64_t> n = parseUnsigned(v);
    if (!n)
      die(flag + " expects a non-negative integer, got '" + v + "'");
    return *n;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    auto is = [&](const char *flag) {
      return a == flag || (a.rfind(std::string(flag) + "=", 0) == 0);
    };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "--list") {
      opts.list = true;
    } else if (is("--entry")) {
      opts.entry = value(i, "--entry");
    } else if (is("--step")) {
      opts.step = value(i, "--step");
    } else if (is("--input")) {
      opts.inputs.push_back(value(i, "--input"));
    } else if (is("--inputs")) {
      opts.inputsDir = value(i, "--inputs");
    } else if (is("--grads")) {
      opts.gradsDir = value(i, "--grads");
    } else if (is("--outputs")) {
      opts.outputsDir = value(i, "--outputs");
    } else if (is("--backend")) {
      opts.backend = value(i, "--backend");
    } else if (is("--random")) {
      opts.randomSeed = int64_t(number("--random", value(i, "--random")));
    } else if (is("--rng-seed")) {
      opts.rngSeed = number("--rng-seed", value(i, "--rng-seed"));
    } else if (is("--bench")) {
      opts.bench = unsigned(number("--bench", value(i, "--bench")));
    } else if (a == "--graph") {
      opts.graph = true;
    } else if (a == "--caller-memory") {
      opts.callerMemory = true;
    } else if (a == "--donate") {
      opts.donate = true;
    } else if (is("--tp")) {
      uint64_t n = number("--tp", value(i, "--tp"));
      if (n < 1 || n > 1u << 20)
        die("--tp expects the number of ranks (1 or more), got " +
            str(int64_t(n)));
      opts.tp = int64_t(n);
    } else if (!a.empty() && a[0] == '-') {
      die("unknown option '" + a + "' (see --help)");
    } else if (opts.library.empty()) {
      opts.library = a;
    } else {
      die("more than one library given ('" + opts.library + "', '" + a + "')");
    }
  }
  if (opts.library.empty())
    die("no library given\n" + std::string(kUsage));
  // Directories read from must exist: a missing one would leave every value
  // to --random, or fail later as "no value for arg0".
  for (auto [flag, dir] : {std::pair<const char *, const std::string *>{
                               "--inputs", &opts.inputsDir},
                           {"--grads", &opts.gradsDir}}) {
    if (dir->empty())
      continue;
    std::error_code ec;
    if (!std::filesystem::exists(*dir, ec))
      die(std::string(flag) + ": no such directory '" + *dir + "'");
    if (!std::filesystem::is_directory(*dir, ec))
      die(std::string(flag) + ": '" + *dir + "' is not a directory");
  }
  if (!opts.gradsDir.empty() && opts.step.empty())
    die("--grads gives a training step's output gradients: it needs --step "
        "(with --entry or --list it would be ignored)");
  if (opts.donate && opts.bench)
    die("--donate: a donated call overwrites its donated arguments, so it "
        "cannot be repeated (drop --bench)");
  if (opts.graph && opts.bench == 0)
    die("--graph times graph launches: give --bench N (N > 0) too");
}

} // namespace te::run
