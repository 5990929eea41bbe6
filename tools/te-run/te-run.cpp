//===- te-run.cpp - runs te-compile'd libraries -----------------*- C++ -*-===//
//
// te-run LIB.so: loads a library made by te-compile, lists its entries
// (--list), feeds .npy inputs (--input NAME=FILE, --inputs DIR) or seeded
// random ones (--random SEED), checks their shapes and dtypes against the
// entry's signature, runs it on a backend (--backend cpu|cuda|auto) and
// writes one .npy per result (--outputs DIR). --step NAME runs a training
// step: NAME_fwd, then NAME_bwd fed with the saved bundle (aliases from the
// forward's own inputs and outputs) and the output gradients (--grads DIR).
// --bench N reports the median and spread of N timed calls (--graph: N
// launches of a CUDA graph captured from one call).
//
// --tp N runs a tensor-parallel library (te-compile --tp N: its entries say
// "te.tp" = N, its arguments and results "te.tp_shard") under
// `mpirun -np N`: each rank sets its runtime communicator (MPI on the cpu
// backend, NCCL from a unique id broadcast over MPI on cuda, one GPU per
// local rank), reads the same GLOBAL inputs and keeps its part by each
// argument's shard (TP.h), and rank 0 writes GLOBAL results (split ones
// gathered, replicated ones checked identical on every rank, partial ones
// summed in fp32): the files of a tp=1 run of the same model, for
// tools/compare_npy.py. An error on any rank stops the whole job
// (MPI_Abort) with a message naming the rank.
//
// Nothing read is trusted: the library is opened, checked and described by
// the module client (te/Runtime/TEModule.h: the file checked before
// dlopen, the module info validated before use, dim expressions evaluated
// with overflow checks), .npy files are parsed strictly (Npy.h) and host
// buffers are sized with checked arithmetic and refused beyond the
// machine's memory: bad input is an error naming the file and the field,
// never a crash.
//
//===----------------------------------------------------------------------===//

#include "DimExpr.h"
#include "Npy.h"
#include "TP.h"
#include "te/Runtime/TEModule.h"
#include "te/Runtime/TERuntime.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <new>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <sys/sysinfo.h>
#include <vector>

#ifdef TE_RUN_HAVE_MPI
// MPI's C API only (Open MPI's and MPICH's mpi.h would pull in their
// deprecated C++ bindings, which MPI::MPI_C does not link).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif


namespace fs = std::filesystem;

namespace {

/// Command-line options (see usage()).
struct Options {
  std::string library, entry, step, inputsDir, gradsDir, outputsDir, backend;
  std::vector<std::string> inputs;
  int64_t randomSeed = -1;
  uint64_t rngSeed = 0; ///< the context's seed (NVFP4 stochastic rounding)
  unsigned bench = 0;
  int64_t tp = 0; ///< --tp N (0: not a tensor-parallel run)
  bool list = false, graph = false, callerMemory = false;
} opts;

/// The MPI job of --tp: this process's rank of `size` (active once MPI is
/// initialized).
struct TPJob {
  bool active = false;
  int rank = 0, size = 1;
} tpJob;

using te::tp::Shard;

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
  --grads DIR            --step: resultN.npy, the gradient of forward result N
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

[[noreturn]] void die(const std::string &message) {
#ifdef TE_RUN_HAVE_MPI
  if (tpJob.active) {
    // One rank's error stops every rank (no rank waits in a collective).
    // One write, so that the ranks' lines do not interleave.
    std::string line = "te-run: error: rank " + std::to_string(tpJob.rank) +
                       " of " + std::to_string(tpJob.size) + ": " + message +
                       "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
#endif
  std::cerr << "te-run: error: " << message << "\n";
  std::exit(1);
}

/// Rank 0 prints (stdout, notes) for the job; the other ranks stay quiet.
bool printingRank() { return tpJob.rank == 0; }

std::string str(int64_t v) { return std::to_string(v); }
bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
using te::dimexpr::parseUnsigned;

struct Tensor {
  std::string dtype; ///< float32 / bfloat16 / float16 / qtensor
  /// The (logical) shape; empty for a quantized tensor read from a file,
  /// whose bytes are checked once the dims are known.
  std::vector<int64_t> shape;
  std::vector<char> data;
};

int64_t elementBytes(const std::string &dtype) {
  return dtype == "float32" ? 4 : dtype == "qtensor" ? 1 : 2;
}
std::string descrOf(const std::string &dtype) {
  return dtype == "float32"    ? "<f4"
         : dtype == "bfloat16" ? "<u2"
         : dtype == "qtensor"  ? "|u1"
                               : "<f2";
}
std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

/// The bytes of this machine's memory (RAM and swap): no host buffer of
/// te-run may be larger, whatever a library's module info asks for.
int64_t hostMemoryBytes() {
  struct sysinfo info;
  if (sysinfo(&info) != 0)
    return int64_t(1) << 40;
  unsigned __int128 total =
      (unsigned __int128)(info.totalram + info.totalswap) * info.mem_unit;
  return total > (unsigned __int128)INT64_MAX ? INT64_MAX : int64_t(total);
}

/// The elements of `shape`, checked for overflow; `what` names the tensor.
int64_t elementCount(const std::vector<int64_t> &shape,
                     const std::string &what) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      die(what + ": shape " + shapeString(shape) +
          (d < 0 ? " has a negative dim"
                 : " has more elements than fit in int64"));
  return n;
}

/// n * size bytes, checked.
int64_t byteCount(int64_t n, int64_t size, const std::string &what) {
  int64_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes))
    die(what + ": " + std::to_string(n) + " elements of " +
        std::to_string(size) + " bytes do not fit in int64 bytes");
  return bytes;
}

/// A zeroed host buffer of `bytes` for `what`: refused (clearly) when it
/// cannot exist on this machine, and allocation failure is reported.
std::vector<char> hostBuffer(int64_t bytes, const std::string &what) {
  static const int64_t limit = hostMemoryBytes();
  if (bytes < 0)
    die(what + ": negative size " + std::to_string(bytes) + " bytes");
  if (bytes > limit)
    die(what + " needs " + std::to_string(bytes) +
        " bytes, more than this machine's memory (" + std::to_string(limit) +
        " bytes of RAM and swap)");
  try {
    return std::vector<char>(static_cast<size_t>(bytes));
  } catch (const std::bad_alloc &) {
    die("out of host memory allocating " + std::to_string(bytes) +
        " bytes for " + what);
  }
}

/// Dies with the module client's message when `rc` is a failure.
void check(int32_t rc) {
  if (rc != 0)
    die(te_rt_last_error());
}

/// A role of an argument or result (TE_MODULE_ROLE_*), if it has it.
std::optional<std::string> roleOf(const te_module_tensor *t, int32_t role) {
  const char *v = te_module_tensor_role(t, role);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

/// The roles that name an argument (--input NAME) or mark a result.
const std::pair<int32_t, const char *> kNamingRoles[] = {
    {TE_MODULE_ROLE_SAVED, "te.saved"},
    {TE_MODULE_ROLE_GRAD_OF, "te.grad_of"},
    {TE_MODULE_ROLE_STATE, "te.state"},
    {TE_MODULE_ROLE_CACHED_WEIGHT, "te.cached_weight"}};

/// One entry of the library (te_module_entry) with its counts.
struct Entry {
  const te_module_entry *entry = nullptr;
  std::string name;
  size_t numArgs = 0, numResults = 0, numDims = 0;

  explicit Entry(const te_module_entry *e)
      : entry(e), name(te_module_entry_name(e)),
        numArgs(size_t(te_module_entry_num_args(e))),
        numResults(size_t(te_module_entry_num_results(e))),
        numDims(size_t(te_module_entry_num_dims(e))) {}
  const te_module_tensor *arg(size_t i) const {
    return te_module_entry_arg(entry, int64_t(i));
  }
  const te_module_tensor *result(size_t i) const {
    return te_module_entry_result(entry, int64_t(i));
  }
  std::string argLabel(size_t i) const { return te_module_tensor_label(arg(i)); }
};

std::string dtypeOf(const te_module_tensor *t) {
  return te_module_tensor_dtype(t);
}

/// The te.tp_shard of an argument or result (`what`) under --tp;
/// Shard::None without --tp or without the field (a per-rank tensor).
Shard shardOf(const te_module_tensor *t, const std::string &what, bool isArg) {
  if (opts.tp == 0)
    return Shard::None;
  const char *text = te_module_tensor_get(t, "te.tp_shard");
  // reference/tensor-parallel.md §9 item 4 tags partial gradients
  // te.partial = "tp"; te.tp_shard, where present, says it.
  if (const char *partial = te_module_tensor_get(t, "te.partial");
      !text && !isArg && partial && std::string_view(partial) == "tp")
    text = "partial";
  std::optional<Shard> shard = te::tp::parseShard(text);
  if (!shard)
    die(what + ": unknown te.tp_shard '" + text +
        "' (rows, cols, gated_rows, replicated or partial)");
  if (isArg && *shard == Shard::Partial)
    die(what + ": te.tp_shard 'partial' marks results (partial gradient "
               "sums), not arguments");
  return *shard;
}

/// This rank's part of the GLOBAL value `t` of an argument (`what`) with
/// te.tp_shard `shard`: its block for the split shards, all of it else.
Tensor localPart(Tensor t, Shard shard, const std::string &what) {
  if (!te::tp::isSplit(shard))
    return t;
  if (t.dtype == "qtensor")
    die(what + ": te-run --tp cannot slice a quantized tensor's bytes "
               "(te.tp_shard " +
        te::tp::shardName(shard) + "); let --random make it (all-zero)");
  std::vector<int64_t> local;
  std::vector<char> data;
  std::string error;
  if (!te::tp::localShape(t.shape, shard, opts.tp, local, error) ||
      !te::tp::slice(t.data, t.shape, elementBytes(t.dtype), shard, opts.tp,
                     tpJob.rank, data, error))
    die(what + ": " + error);
  return Tensor{t.dtype, local, std::move(data)};
}

/// The GLOBAL shape of a local one of a tensor (`what`) with `shard`.
std::vector<int64_t> globalShapeOf(const std::vector<int64_t> &local,
                                   Shard shard, const std::string &what) {
  std::vector<int64_t> global;
  std::string error;
  if (!te::tp::globalShape(local, shard, std::max<int64_t>(opts.tp, 1),
                           global, error))
    die(what + ": " + error);
  return global;
}

/// The values of the dims symbols `d<k>` from the inputs, checked.
std::vector<int64_t> bindDims(const Entry &e, const std::vector<Tensor> &in) {
  std::vector<const char *> dtypes;
  std::vector<const int64_t *> shapes;
  std::vector<int64_t> ranks;
  for (const Tensor &t : in) {
    dtypes.push_back(t.dtype.c_str());
    shapes.push_back(t.shape.data());
    // A quantized tensor's raw bytes from a file carry no shape.
    ranks.push_back(t.dtype == "qtensor" && t.shape.empty()
                        ? -1
                        : int64_t(t.shape.size()));
  }
  std::vector<int64_t> dims(e.numDims);
  check(te_module_bind_dims(e.entry, dtypes.data(), shapes.data(),
                            ranks.data(), dims.data()));
  return dims;
}

/// The shape of `t` at `dims` (null: a shape without dim symbols).
std::vector<int64_t> shapeOf(const te_module_tensor *t, const int64_t *dims) {
  std::vector<int64_t> shape(size_t(te_module_tensor_rank(t)));
  check(te_module_tensor_shape(t, dims, shape.data()));
  return shape;
}

/// The bytes of the buffer of `t` at `dims`.
int64_t bufferBytes(const te_module_tensor *t,
                    const std::vector<int64_t> &dims) {
  int64_t bytes;
  check(te_module_tensor_bytes(t, dims.data(), &bytes));
  return bytes;
}

Tensor loadNpy(const std::string &path, const std::string &dtype) {
  te::npy::Array a;
  std::string error;
  if (!te::npy::read(path, a, error))
    die(error);
  bool bf16File = endsWith(path, ".bf16.npy");
  std::string expected = descrOf(dtype);
  if (dtype == "qtensor") {
    if (a.descr != expected || a.shape.size() != 1)
      die("'" + path +
          "' must hold a quantized tensor's bytes (a 1-D uint8 "
          "array, as te-run --outputs writes), got " +
          a.descr + " " + shapeString(a.shape));
    return Tensor{dtype, {}, std::move(a.data)};
  }
  if (a.descr != expected || (dtype == "bfloat16") != bf16File)
    die("'" + path + "' holds " +
        (a.descr == "<u2" && bf16File ? std::string("bfloat16")
         : a.descr == "|u1" ? std::string("uint8 (a quantized tensor's bytes)")
                            : te::npy::dtypeName(a.descr)) +
        " but the argument is " + dtype +
        (dtype == "bfloat16" ? " (bf16 files are uint16 named *.bf16.npy)"
                             : ""));
  return Tensor{dtype, a.shape, std::move(a.data)};
}

std::string findNpy(const std::string &dir, const std::string &stem) {
  for (const char *suffix : {".npy", ".bf16.npy"}) {
    std::string p = dir + "/" + stem + suffix;
    if (fs::exists(p))
      return p;
  }
  return "";
}

void saveNpy(const std::string &dir, const std::string &stem, const Tensor &t) {
  std::string path =
      dir + "/" + stem + (t.dtype == "bfloat16" ? ".bf16.npy" : ".npy");
  // A quantized tensor is written as its buffer's bytes.
  std::vector<int64_t> shape =
      t.dtype == "qtensor" ? std::vector<int64_t>{int64_t(t.data.size())}
                           : t.shape;
  te::npy::Array a{descrOf(t.dtype), shape, t.data};
  std::string error;
  if (!te::npy::write(path, a, error))
    die(error);
}

/// --tp: every rank's `local` bytes, in rank order, on rank 0 (empty on
/// the others); every rank calls it. The ranks' sizes must agree.
std::vector<char> gatherBytes(const std::vector<char> &local,
                              const std::string &what) {
#ifdef TE_RUN_HAVE_MPI
  int64_t bytes = int64_t(local.size());
  std::vector<int64_t> sizes(size_t(tpJob.size));
  MPI_Allgather(&bytes, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T,
                MPI_COMM_WORLD);
  for (int r = 0; r < tpJob.size; ++r)
    if (sizes[size_t(r)] != bytes)
      die(what + ": rank " + std::to_string(r) + " has " +
          str(sizes[size_t(r)]) + " bytes, this rank " + str(bytes));
  if (bytes > INT32_MAX)
    die(what + ": " + str(bytes) +
        " bytes per rank, more than one MPI_Gather moves (2^31 - 1)");
  int64_t total = byteCount(bytes, tpJob.size, what + " of every rank");
  std::vector<char> all;
  if (tpJob.rank == 0)
    all = hostBuffer(total, what + " of every rank");
  MPI_Gather(local.data(), int(bytes), MPI_BYTE, all.data(), int(bytes),
             MPI_BYTE, 0, MPI_COMM_WORLD);
  return all;
#else
  (void)local;
  die(what + ": te-run was built without MPI");
#endif
}

/// Writes result `t` (`what`) as `stem` in `dir`. Under --tp its GLOBAL
/// value by its te.tp_shard `r`, on rank 0 (every rank takes part).
void writeResult(const std::string &dir, const std::string &stem,
                 const Tensor &t, const te_module_tensor *r,
                 const std::string &what) {
  if (opts.tp == 0)
    return saveNpy(dir, stem, t);
  Shard shard = shardOf(r, what, false);
  auto skip = [&](const std::string &why) {
    if (printingRank())
      std::cerr << "te-run: note: --tp: " << stem << " (" << what
                << ") not written: " << why << "\n";
  };
  if (shard == Shard::None)
    return skip("per-rank (no te.tp_shard)");
  if (t.dtype == "qtensor" && shard != Shard::Replicated)
    return skip(std::string("a quantized tensor with te.tp_shard ") +
                te::tp::shardName(shard));
  std::vector<char> all = gatherBytes(t.data, what);
  if (!printingRank())
    return;
  Tensor global{t.dtype, t.shape, {}};
  std::string error;
  int64_t bytes = int64_t(t.data.size());
  std::optional<te::tp::DType> dtype = te::tp::dtypeFromName(t.dtype);
  if (te::tp::isSplit(shard)) {
    global.shape = globalShapeOf(t.shape, shard, what);
    if (!te::tp::gather(all, t.shape, elementBytes(t.dtype), shard, opts.tp,
                        global.data, error))
      die(what + ": " + error);
  } else if (shard == Shard::Replicated) {
    // Every rank must hold the same bits.
    for (int64_t k = 1; k < opts.tp; ++k)
      if (bytes && std::memcmp(all.data() + k * bytes, all.data(),
                               size_t(bytes)) != 0)
        die(what + ": te.tp_shard replicated, but rank " + str(k) +
            "'s value differs from rank 0's" +
            (dtype ? " (max abs difference " +
                         std::to_string(te::tp::maxAbsDifference(
                             all.data() + k * bytes, all.data(),
                             bytes / te::tp::dtypeBytes(*dtype), *dtype)) +
                         ")"
                   : std::string(" (its bytes)")));
    all.resize(size_t(bytes));
    global.data = std::move(all);
  } else { // partial
    if (!dtype)
      die(what + ": te.tp_shard partial on a " + t.dtype + " result");
    if (!te::tp::sumPartial(all, elementCount(t.shape, what), *dtype, opts.tp,
                            global.data, error))
      die(what + ": " + error);
  }
  saveNpy(dir, stem, global);
}

/// TE's initial recipe state (§4.1) for a te.state argument, as the module
/// client gives it (amax histories zero, scales one); nullopt for other
/// arguments.
std::optional<Tensor> initialState(const te_module_tensor *a,
                                   const std::vector<int64_t> &shape) {
  float v;
  if (te_module_tensor_initial_state(a, &v) != 0)
    return std::nullopt;
  std::string what =
      "the initial recipe state '" + *roleOf(a, TE_MODULE_ROLE_STATE) + "'";
  int64_t n = elementCount(shape, what);
  Tensor t{"float32", shape, hostBuffer(byteCount(n, 4, what), what)};
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(t.data.data() + 4 * i, &v, 4);
  return t;
}

Tensor randomTensor(const te_module_tensor *a, unsigned seed,
                    const std::vector<int64_t> &shape) {
  Tensor t{dtypeOf(a), shape, {}};
  const std::string what = "a random " + t.dtype + " " + shapeString(shape);
  int64_t n = elementCount(shape, what);
  t.data = hostBuffer(byteCount(n, elementBytes(t.dtype), what), what);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) {
    float v = dist(gen);
    if (t.dtype == "float32") {
      std::memcpy(t.data.data() + 4 * i, &v, 4);
    } else {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      uint16_t h;
      if (t.dtype == "bfloat16") {
        h = uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
      } else {
        _Float16 f = static_cast<_Float16>(v);
        std::memcpy(&h, &f, 2);
      }
      std::memcpy(t.data.data() + 2 * i, &h, 2);
    }
  }
  return t;
}

/// A compiled entry's refusal of a dim by its recipe's alignment check
/// (te_rt_check_multiple: "<entry>: recipe R needs d0 % 32 == 0, got 8"):
/// the symbols of the checked product and the multiple.
struct AlignmentRefusal {
  std::vector<size_t> symbols;
  int64_t multiple = 0;
  std::string message; ///< te_rt_last_error() of the refused call
};

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

class Runner {
public:
  Runner(te_rt_context *ctx) : ctx(ctx) {}

  /// Runs `e` on host tensors; returns the results of a first call (and the
  /// times of `repeats` extra timed calls in `times`, or with --graph of
  /// `repeats` launches of a CUDA graph captured from one more call). With
  /// `refused`, a first call the entry refuses by its alignment check
  /// returns nullopt and the refusal there instead of dying (nothing ran).
  std::optional<std::vector<Tensor>>
  run(const Entry &e, const std::vector<Tensor> &in, unsigned repeats,
      std::vector<double> &times, AlignmentRefusal *refused = nullptr) {
    std::vector<int64_t> dims = bindDims(e, in);
    for (size_t i = 0; i < in.size(); ++i) {
      const te_module_tensor *a = e.arg(i);
      if (in[i].dtype == "qtensor" &&
          int64_t(in[i].data.size()) != bufferBytes(a, dims))
        die(e.name + ": " + e.argLabel(i) + " (" +
            te_module_tensor_get(a, "type") + ") must be " +
            str(bufferBytes(a, dims)) + " bytes, got " +
            str(in[i].data.size()));
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
    if (opts.callerMemory) {
      if (te_module_entry_arena_bytes(e.entry, dims.data(), &arenaBytes) != 0)
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
      int32_t rc = te_module_run(e.entry, ctx, args.data(), results.data(),
                                 dims.data());
      if (rc != 0 && opts.callerMemory) {
        if (int64_t needed = te_rt_context_workspace_needed(ctx);
            needed > workspaceBytes) {
          te_rt_synchronize(ctx);
          te_rt_free(ctx, workspace);
          workspaceBytes = needed;
          workspace = alloc(workspaceBytes);
          bindMemory();
          rc = te_module_run(e.entry, ctx, args.data(), results.data(),
                             dims.data());
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

private:
  void *alloc(int64_t bytes) {
    void *p = te_rt_alloc(ctx, bytes);
    if (!p)
      die(te_rt_last_error());
    return p;
  }
  void *upload(const Tensor &t) {
    void *p = alloc(t.data.size());
    // An empty tensor (a zero dim) has nothing to copy (and no host data).
    if (!t.data.empty() &&
        te_rt_copy_to_backend(ctx, p, t.data.data(), t.data.size()) != 0)
      die(te_rt_last_error());
    return p;
  }
  te_rt_context *ctx;
};

/// The inputs of `e` given as files: --input, then --inputs DIR (others
/// are left empty).
std::vector<Tensor> givenInputs(const Entry &e) {
  size_t n = e.numArgs;
  std::vector<Tensor> preset(n);
  std::vector<bool> have(n);
  for (const std::string &spec : opts.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq + 1 == spec.size())
      die("--input expects NAME=FILE, got '" + spec + "'");
    std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    std::optional<size_t> index;
    std::string_view digits = name;
    if (digits.substr(0, 3) == "arg")
      digits.remove_prefix(3);
    if (std::optional<uint64_t> k = parseUnsigned(digits))
      index = *k;
    for (size_t i = 0; !index && i < n; ++i)
      for (auto [role, key] : kNamingRoles)
        if (auto s = roleOf(e.arg(i), role); s && *s == name)
          index = i;
    if (!index || *index >= n)
      die("--input " + name + ": " + e.name + " has no such argument (" +
          str(n) + " arguments; see --list)");
    std::string what = e.name + ": " + e.argLabel(*index) + " ('" + file + "')";
    preset[*index] =
        localPart(loadNpy(file, dtypeOf(e.arg(*index))),
                  shardOf(e.arg(*index), what, true), what);
    have[*index] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (have[i] || opts.inputsDir.empty())
      continue;
    std::string path = findNpy(opts.inputsDir, "arg" + std::to_string(i));
    if (path.empty())
      continue;
    std::string what = e.name + ": " + e.argLabel(i) + " ('" + path + "')";
    preset[i] = localPart(loadNpy(path, dtypeOf(e.arg(i))),
                          shardOf(e.arg(i), what, true), what);
    have[i] = true;
  }
  return preset;
}

/// The dim symbols of `text` (a dim expression).
std::vector<size_t> symbolsOf(const std::string &text) {
  std::vector<size_t> symbols;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != 'd' ||
        (i && std::isalnum(static_cast<unsigned char>(text[i - 1]))))
      continue;
    size_t j = i + 1;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])))
      ++j;
    if (std::optional<size_t> k =
            te::dimexpr::symbolIndex(text.substr(i, j - i)))
      symbols.push_back(*k);
  }
  return symbols;
}

/// --tp: the factor between the global and the local value of each dim
/// symbol: N for the symbol of a split argument's sharded dim (its value
/// in the signature is local; te-run chooses the global one), else 1.
/// `where` names such an argument.
std::vector<int64_t> dimScales(const Entry &e,
                               std::vector<std::string> *where = nullptr) {
  std::vector<int64_t> scale(e.numDims, 1);
  if (where)
    where->assign(e.numDims, "");
  if (opts.tp <= 1)
    return scale;
  for (size_t i = 0; i < e.numArgs; ++i) {
    const te_module_tensor *a = e.arg(i);
    Shard shard = shardOf(a, e.name + ": " + e.argLabel(i), true);
    int64_t d = te::tp::shardedDim(shard, size_t(te_module_tensor_rank(a)));
    if (d < 0)
      continue;
    if (auto k = te::dimexpr::symbolIndex(te_module_tensor_dim(a, d));
        k && *k < e.numDims && scale[*k] == 1) {
      scale[*k] = opts.tp;
      if (where)
        (*where)[*k] = e.argLabel(i) + " (te.tp_shard " +
                       te::tp::shardName(shard) + ", dim " + str(d) + ")";
    }
  }
  return scale;
}

/// The dim values of the inputs te-run generates. Dims bound by the given
/// inputs keep their values; the others (`chosen`) start at `choice` (8
/// unless a recipe asked for more) and are raised until the dim expressions
/// of its quantized tensors' layouts divide exactly (MXFP8's
/// `roundup(d0/32, 4)` needs d0 % 32 == 0): the alignment the module info
/// states.
std::vector<int64_t> generatedDims(const Entry &e,
                                   const std::vector<Tensor> &given,
                                   std::vector<int64_t> &choice,
                                   std::vector<bool> &chosen) {
  size_t numDims = e.numDims;
  std::vector<int64_t> dims(numDims, -1);
  for (size_t i = 0; i < e.numArgs; ++i) {
    const te_module_tensor *a = e.arg(i);
    size_t rank = size_t(te_module_tensor_rank(a));
    if (given[i].dtype.empty() || given[i].shape.size() != rank)
      continue; // not given, raw qtensor bytes, or a rank bindDims reports
    for (size_t d = 0; d < rank; ++d)
      if (auto k = te::dimexpr::symbolIndex(te_module_tensor_dim(a, d));
          k && dims[*k] < 0)
        dims[*k] = given[i].shape[d];
  }
  // Under --tp a choice is global: a sharded dim's local value is 1/N.
  std::vector<std::string> where;
  std::vector<int64_t> scale = dimScales(e, &where);
  chosen.assign(numDims, false);
  for (size_t k = 0; k < numDims; ++k)
    if (dims[k] < 0) {
      if (choice[k] % scale[k] != 0)
        die(e.name + ": " + where[k] + ": its global value of d" + str(k) +
            " = " + str(choice[k]) + " is not a multiple of --tp " +
            str(opts.tp) + " (give the input with --input or --inputs)");
      chosen[k] = true, dims[k] = choice[k] / scale[k];
    }
  // The expressions of the quantized tensors' inner shapes: their exact
  // divisions are the recipe's alignment (a plain result's shape that does
  // not divide is an error, reported where it is evaluated).
  std::vector<std::string> exprs;
  auto collect = [&](const te_module_tensor *t) {
    for (int64_t p = 0; p < te_module_tensor_num_inner(t); ++p)
      for (int64_t d = 0; d < te_module_tensor_inner_rank(t, p); ++d)
        if (std::string x = te_module_tensor_inner_dim(t, p, d);
            !parseUnsigned(x))
          exprs.push_back(x);
  };
  for (size_t i = 0; i < e.numArgs; ++i)
    collect(e.arg(i));
  for (size_t i = 0; i < e.numResults; ++i)
    collect(e.result(i));
  for (int round = 0; round < 16; ++round) {
    bool raised = false;
    for (const std::string &x : exprs) {
      int64_t value, divisor;
      if (te_module_eval_dim(x.c_str(), dims.data(), int64_t(numDims), &value,
                             &divisor) == 0 ||
          divisor == 0)
        continue; // fine, or an error reported where the shape is used
      for (size_t k : symbolsOf(x))
        if (chosen[k] && choice[k] < (int64_t(1) << 20)) {
          int64_t multiple; // the global multiple (local x --tp's N)
          if (divisor < 0 || divisor > (int64_t(1) << 30) ||
              __builtin_mul_overflow(divisor, scale[k], &multiple))
            continue; // no such dim: reported where the shape is used
          choice[k] = std::lcm(choice[k], multiple);
          dims[k] = choice[k] / scale[k];
          raised = true;
          break;
        }
    }
    if (!raised)
      break;
  }
  return dims;
}

/// The inputs of `e`: the given ones, then TE's initial recipe state, then
/// --random values at `dims` (the generated dims).
std::vector<Tensor> completeInputs(const Entry &e, std::vector<Tensor> preset,
                                   const std::vector<int64_t> &dims) {
  for (size_t i = 0; i < preset.size(); ++i) {
    if (!preset[i].dtype.empty())
      continue;
    const te_module_tensor *a = e.arg(i);
    std::vector<int64_t> shape = shapeOf(a, dims.data());
    // Recipe state not given starts as TE initializes it.
    if (std::optional<Tensor> state = initialState(a, shape)) {
      preset[i] = std::move(*state);
      continue;
    }
    if (opts.randomSeed < 0)
      die(e.name + ": no value for " + e.argLabel(i) +
          " (use --input, --inputs or --random)");
    if (dtypeOf(a) == "qtensor") {
      // FP8 bytes are not random data: all-zero is a valid value.
      std::string what = e.name + ": " + e.argLabel(i);
      preset[i] =
          Tensor{"qtensor", shape, hostBuffer(bufferBytes(a, dims), what)};
      continue;
    }
    // Under --tp the values are those of the GLOBAL tensor (the tp=1
    // library's, same seed), and this rank keeps its part.
    std::string what = e.name + ": " + e.argLabel(i);
    Shard shard = shardOf(a, what, true);
    preset[i] = localPart(
        randomTensor(a, unsigned(opts.randomSeed) * 7919u + unsigned(i),
                     globalShapeOf(shape, shard, what)),
        shard, what + " (--random)");
  }
  return preset;
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
    } else if (is("--tp")) {
      uint64_t n = number("--tp", value(i, "--tp"));
      if (n < 1 || n > 1u << 20)
        die("--tp expects the number of ranks (1 or more), got " + str(int64_t(n)));
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
  if (opts.graph && opts.bench == 0)
    die("--graph times graph launches: give --bench N (N > 0) too");
}

/// --tp: joins the MPI job (one GPU per local rank on cuda), which must
/// have --tp's number of ranks.
void startTP(int &argc, char **&argv) {
#ifndef TE_RUN_HAVE_MPI
  (void)argc, (void)argv;
  die("--tp " + str(opts.tp) +
      ": te-run was built without MPI (install Open MPI or MPICH and "
      "reconfigure)");
#else
  // Before anything may touch CUDA: each rank of a node gets its own GPU.
  if (!std::getenv("CUDA_VISIBLE_DEVICES")) {
    const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (!local)
      local = std::getenv("LOCAL_RANK");
    if (local && parseUnsigned(local))
      setenv("CUDA_VISIBLE_DEVICES", local, 1);
  }
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
    die("--tp: MPI_Init failed");
  MPI_Comm_rank(MPI_COMM_WORLD, &tpJob.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &tpJob.size);
  tpJob.active = true;
  if (tpJob.size != opts.tp)
    die("te-run --tp " + str(opts.tp) + " needs " + str(opts.tp) +
        " MPI ranks, but the job has " + str(tpJob.size) +
        (tpJob.size == 1 ? " (start it with mpirun -np " + str(opts.tp) + ")"
                         : " (mpirun -np " + str(opts.tp) + ")"));
#endif
}

/// The library's te.tp on `e` (the entry run) against --tp.
void checkTP(const Entry &e) {
  const std::string &library = opts.library;
  const char *tp = te_module_entry_get(e.entry, "te.tp");
  std::optional<uint64_t> n = tp ? parseUnsigned(tp) : std::nullopt;
  if (tp && (!n || *n < 1))
    die(library + ": " + e.name + ": te.tp '" + tp +
        "' is not a number of ranks");
  if (opts.tp == 0) {
    if (n && *n > 1)
      die(library + " was compiled for tp=" + tp + " (" + e.name +
          "): run it as mpirun -np " + tp + " te-run " + library + " --tp " +
          tp);
    return;
  }
  if (!tp)
    die(library + " is not compiled for tensor parallelism (te-compile --tp; " +
        e.name + " has no te.tp), but te-run --tp " + str(opts.tp) +
        " was given");
  if (int64_t(*n) != opts.tp)
    die(library + " was compiled for tp=" + tp + ", te-run --tp " +
        str(opts.tp));
}

/// --tp: the context's TP communicator: MPI's (MPI_COMM_WORLD) on the cpu
/// backend, NCCL's on cuda (rank 0's unique id broadcast over MPI).
te_rt_comm *setUpComm(te_rt_context *ctx) {
#ifndef TE_RUN_HAVE_MPI
  (void)ctx;
  die("te-run was built without MPI");
#else
  bool cuda = te_rt_context_backend(ctx) == TE_RT_BACKEND_CUDA;
  if (!te_rt_comm_available(cuda ? TE_RT_COMM_NCCL : TE_RT_COMM_MPI))
    die(cuda ? "--tp on cuda: the runtime cannot make NCCL communicators "
               "(libnccl.so.2 not loadable?)"
             : "--tp on cpu: the runtime was built without MPI (its cpu "
               "backend has no communicator)");
  te_rt_comm *comm = nullptr;
  if (cuda) {
    char id[128] = {};
    if (tpJob.rank == 0 && te_rt_nccl_unique_id(id) != 0)
      die(std::string("--tp: NCCL's unique id: ") + te_rt_last_error());
    MPI_Bcast(id, 128, MPI_BYTE, 0, MPI_COMM_WORLD);
    comm = te_rt_comm_create_nccl(ctx, id, int32_t(opts.tp),
                                  int32_t(tpJob.rank));
  } else {
    comm = te_rt_comm_wrap_mpi(ctx, nullptr);
  }
  if (!comm)
    die(std::string("--tp: the communicator: ") + te_rt_last_error());
  if (te_rt_comm_size(comm) != opts.tp)
    die("--tp " + str(opts.tp) + ": the communicator has " +
        str(te_rt_comm_size(comm)) + " ranks");
  if (te_rt_context_set_comm(ctx, TE_RT_GROUP_TP, comm) != 0)
    die(std::string("--tp: ") + te_rt_last_error());
  return comm;
#endif
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
                << "\n";
    for (size_t i = 0; i < e.numResults; ++i) {
      const te_module_tensor *r = e.result(i);
      std::cout << "  -> result" << i << ": " << dtypeOf(r) << " "
                << te_module_tensor_shape_text(r);
      for (auto [role, key] : kNamingRoles)
        if (auto s = roleOf(r, role))
          std::cout << " (" << key << "=" << *s << ")";
      std::cout << tpField("te.tp_shard", te_module_tensor_get(r, "te.tp_shard"))
                << "\n";
    }
    std::cout << "  arena: " << te_module_entry_arena_text(e.entry)
              << " bytes\n";
  }
}

} // namespace

int run(int argc, char **argv) {
  parseArguments(argc, argv);
  if (opts.tp)
    startTP(argc, argv);
  const std::string &library = opts.library;

  // The module client checks the file before dlopen and validates the
  // module info before anything reads it.
  te_module *module = nullptr;
  check(te_module_open(library.c_str(), &module));
  std::error_code ec;
  std::vector<Entry> order;
  for (int64_t i = 0; i < te_module_num_entries(module); ++i)
    order.emplace_back(te_module_entry_at(module, i));
  auto find = [&](const std::string &name) -> const Entry * {
    for (const Entry &e : order)
      if (e.name == name)
        return &e;
    return nullptr;
  };

  if (opts.list) {
    if (printingRank())
      printList(order);
    return 0;
  }

  // The entry run (--step: NAME_fwd) says which tensor parallelism the
  // library was compiled for; it must be --tp's.
  std::string name = opts.entry;
  if (opts.step.empty()) {
    if (name.empty()) {
      if (order.size() != 1)
        die("the library has " + str(order.size()) +
            " entries; choose one with --entry (see --list)");
      name = order.front().name;
    }
    if (!find(name))
      die("no entry '" + name + "' (see --list)");
    checkTP(*find(name));
  } else if (const Entry *fwd = find(opts.step + "_fwd")) {
    checkTP(*fwd);
  }

  std::string backend = opts.backend;
  if (backend.empty())
    backend = te_module_get(module, "target") ? te_module_get(module, "target")
                                               : "auto";
  int32_t requested = te_rt_backend_from_name(backend.c_str());
  if (requested == TE_RT_BACKEND_INVALID)
    die("--backend must be cpu, cuda or auto, got '" + backend + "'");
  te_rt_context *ctx = te_rt_context_create(requested);
  if (!ctx)
    die(te_rt_last_error());
  if (te_rt_context_set_seed(ctx, opts.rngSeed) != 0)
    die(te_rt_last_error());
  if (opts.graph && te_rt_context_backend(ctx) != TE_RT_BACKEND_CUDA)
    die(std::string("--graph: CUDA graphs need the cuda backend (this "
                    "context runs on ") +
        te_rt_backend_name(te_rt_context_backend(ctx)) +
        "; use --backend cuda)");
  te_rt_comm *comm = opts.tp ? setUpComm(ctx) : nullptr;
  std::string tpText;
  if (opts.tp) {
    const Entry *e = opts.step.empty() ? find(name) : find(opts.step + "_fwd");
    const char *sp =
        e ? te_module_entry_get(e->entry, "te.sequence_parallel") : nullptr;
    tpText = ", tp=" + str(opts.tp) +
             (sp && std::string_view(sp) == "true" ? " (sequence parallel)"
                                                   : "");
  }
  auto finish = [&] {
    if (comm) {
      te_rt_synchronize(ctx);
      te_rt_context_set_comm(ctx, TE_RT_GROUP_TP, nullptr);
      te_rt_comm_destroy(comm);
    }
    te_rt_context_destroy(ctx);
    te_module_close(module);
  };
  Runner runner(ctx);
  const std::string &outputsDir = opts.outputsDir;
  if (!outputsDir.empty() && (fs::create_directories(outputsDir, ec), ec))
    die("cannot create '" + outputsDir + "': " + ec.message());
  const std::string &stepName = opts.step;
  unsigned bench = opts.bench;

  if (!stepName.empty()) {
    // A training step: forward, then backward on the saved bundle.
    const Entry *fwdEntry = find(stepName + "_fwd"),
                *bwdEntry = find(stepName + "_bwd");
    te_module_step *step = nullptr;
    if (!fwdEntry || !bwdEntry)
      die("--step " + stepName + ": the library has no " + stepName +
          "_fwd/_bwd (compile with te-compile --train)");
    if (te_module_step_create(module, stepName.c_str(), &step) != 0)
      die(std::string("--step: ") + te_rt_last_error());
    const Entry &fwd = *fwdEntry, &bwd = *bwdEntry;
    std::vector<double> fwdTimes, bwdTimes;
    auto [in, out] = runEntry(runner, fwd, bench, fwdTimes);
    std::vector<Tensor> bwdIn(bwd.numArgs);
    for (size_t i = 0; i < bwd.numArgs; ++i) {
      const te_module_tensor *a = bwd.arg(i);
      int32_t kind;
      int64_t k;
      check(te_module_step_feed(step, int64_t(i), &kind, &k));
      if (kind == TE_MODULE_FEED_INPUT) {
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
                ? randomTensor(a, unsigned(opts.randomSeed) + 1000u +
                                      unsigned(k),
                               globalShapeOf(out[size_t(k)].shape, shard, what))
                : loadNpy(path, dtypeOf(a)),
            shard, what);
      } else {
        // The backward's recipe state starts as TE initializes it.
        bwdIn[i] = std::move(*initialState(a, shapeOf(a, nullptr)));
      }
    }
    te_module_step_destroy(step);
    std::vector<Tensor> grads = *runner.run(bwd, bwdIn, bench, bwdTimes);
    if (!outputsDir.empty()) {
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
          writeResult(fwdDir, "result" + std::to_string(numResults++), out[i],
                      r, what);
      }
      for (size_t i = 0; i < grads.size(); ++i) {
        const te_module_tensor *r = bwd.result(i);
        std::string what = bwd.name + ": result" + std::to_string(i);
        if (auto of = roleOf(r, TE_MODULE_ROLE_GRAD_OF))
          writeResult(bwdDir, "grad_arg" + of->substr(of->find(':') + 1),
                      grads[i], r, what);
        else if (auto state = roleOf(r, TE_MODULE_ROLE_STATE))
          writeResult(bwdDir, "state." + *state, grads[i], r, what);
        else
          writeResult(bwdDir, "result" + std::to_string(i), grads[i], r, what);
      }
    }
    if (printingRank())
      std::cout << "te-run: step " << stepName << ": " << fwd.name << " ("
                << out.size() << " results) and " << bwd.name << " ("
                << grads.size() << " results) on "
                << te_rt_backend_name(te_rt_context_backend(ctx)) << tpText
                << "\n";
    report(fwd.name, fwdTimes);
    report(bwd.name, bwdTimes);
    finish();
    return 0;
  }

  const Entry *entry = find(name);
  std::vector<double> times;
  std::vector<Tensor> out = runEntry(runner, *entry, bench, times).second;
  if (!outputsDir.empty())
    for (size_t i = 0; i < out.size(); ++i)
      writeResult(outputsDir, "result" + std::to_string(i), out[i],
                  entry->result(i), name + ": result" + std::to_string(i));
  if (printingRank())
    std::cout << "te-run: " << name << ": " << out.size() << " results on "
              << te_rt_backend_name(te_rt_context_backend(ctx)) << tpText
              << "\n";
  report(name, times);
  finish();
  return 0;
}

int main(int argc, char **argv) {
  // Sizes are checked before anything is allocated (hostBuffer); an
  // allocation that still fails is reported, not an abort.
  try {
    int rc = run(argc, argv);
#ifdef TE_RUN_HAVE_MPI
    if (tpJob.active)
      MPI_Finalize();
#endif
    return rc;
  } catch (const std::bad_alloc &) {
    die("out of host memory");
  } catch (const std::length_error &) {
    die("out of host memory (a size too large for the C++ library)");
  }
}
