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

namespace fs = std::filesystem;

namespace {

/// Command-line options (see usage()).
struct Options {
  std::string library, entry, step, inputsDir, gradsDir, outputsDir, backend;
  std::vector<std::string> inputs;
  int64_t randomSeed = -1;
  uint64_t rngSeed = 0; ///< the context's seed (NVFP4 stochastic rounding)
  unsigned bench = 0;
  bool list = false, graph = false, callerMemory = false;
} opts;

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
bf16 tensors are uint16 .npy files named *.bf16.npy; a quantized tensor
(!te.qtensor) is its buffer's bytes as a 1-D uint8 .npy. Delayed-scaling
state arguments not given start as TE's (amax histories 0, scales 1).
)";

[[noreturn]] void die(const std::string &message) {
  std::cerr << "te-run: error: " << message << "\n";
  std::exit(1);
}

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
    preset[*index] = loadNpy(file, dtypeOf(e.arg(*index)));
    have[*index] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (have[i] || opts.inputsDir.empty())
      continue;
    std::string path = findNpy(opts.inputsDir, "arg" + std::to_string(i));
    if (path.empty())
      continue;
    preset[i] = loadNpy(path, dtypeOf(e.arg(i)));
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
  chosen.assign(numDims, false);
  for (size_t k = 0; k < numDims; ++k)
    if (dims[k] < 0)
      chosen[k] = true, dims[k] = choice[k];
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
          choice[k] = dims[k] = std::lcm(choice[k], divisor);
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
    preset[i] =
        randomTensor(a, unsigned(opts.randomSeed) * 7919u + unsigned(i), shape);
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
    choice[*k] = std::lcm(choice[*k], refusal.multiple);
    std::cerr << "te-run: note: " << e.name << ": generating inputs with d"
              << *k << " = " << choice[*k] << " (" << refusal.message << ")\n";
  }
}

void report(std::string what, std::vector<double> times) {
  if (times.empty())
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

void printList(const std::vector<Entry> &entries) {
  for (const Entry &e : entries) {
    std::cout << e.name << "\n";
    for (size_t i = 0; i < e.numArgs; ++i)
      std::cout << "  " << e.argLabel(i) << ": " << dtypeOf(e.arg(i)) << " "
                << te_module_tensor_shape_text(e.arg(i)) << "\n";
    for (size_t i = 0; i < e.numResults; ++i) {
      const te_module_tensor *r = e.result(i);
      std::cout << "  -> result" << i << ": " << dtypeOf(r) << " "
                << te_module_tensor_shape_text(r);
      for (auto [role, key] : kNamingRoles)
        if (auto s = roleOf(r, role))
          std::cout << " (" << key << "=" << *s << ")";
      std::cout << "\n";
    }
    std::cout << "  arena: " << te_module_entry_arena_text(e.entry)
              << " bytes\n";
  }
}

} // namespace

int run(int argc, char **argv) {
  parseArguments(argc, argv);
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
    printList(order);
    return 0;
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
        bwdIn[i] = path.empty()
                       ? randomTensor(a,
                                      unsigned(opts.randomSeed) + 1000u +
                                          unsigned(k),
                                      out[size_t(k)].shape)
                       : loadNpy(path, dtypeOf(a));
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
        if (auto state = roleOf(r, TE_MODULE_ROLE_STATE))
          saveNpy(fwdDir, "state." + *state, out[i]);
        else if (!roleOf(r, TE_MODULE_ROLE_SAVED))
          saveNpy(fwdDir, "result" + std::to_string(numResults++), out[i]);
      }
      for (size_t i = 0; i < grads.size(); ++i) {
        const te_module_tensor *r = bwd.result(i);
        if (auto of = roleOf(r, TE_MODULE_ROLE_GRAD_OF))
          saveNpy(bwdDir, "grad_arg" + of->substr(of->find(':') + 1), grads[i]);
        else if (auto state = roleOf(r, TE_MODULE_ROLE_STATE))
          saveNpy(bwdDir, "state." + *state, grads[i]);
        else
          saveNpy(bwdDir, "result" + std::to_string(i), grads[i]);
      }
    }
    std::cout << "te-run: step " << stepName << ": " << fwd.name << " ("
              << out.size() << " results) and " << bwd.name << " ("
              << grads.size() << " results) on "
              << te_rt_backend_name(te_rt_context_backend(ctx)) << "\n";
    report(fwd.name, fwdTimes);
    report(bwd.name, bwdTimes);
    te_rt_context_destroy(ctx);
    te_module_close(module);
    return 0;
  }

  std::string name = opts.entry;
  if (name.empty()) {
    if (order.size() != 1)
      die("the library has " + str(order.size()) +
          " entries; choose one with --entry (see --list)");
    name = order.front().name;
  }
  const Entry *entry = find(name);
  if (!entry)
    die("no entry '" + name + "' (see --list)");
  std::vector<double> times;
  std::vector<Tensor> out = runEntry(runner, *entry, bench, times).second;
  if (!outputsDir.empty())
    for (size_t i = 0; i < out.size(); ++i)
      saveNpy(outputsDir, "result" + std::to_string(i), out[i]);
  std::cout << "te-run: " << name << ": " << out.size() << " results on "
            << te_rt_backend_name(te_rt_context_backend(ctx)) << "\n";
  report(name, times);
  te_rt_context_destroy(ctx);
  te_module_close(module);
  return 0;
}

int main(int argc, char **argv) {
  // Sizes are checked before anything is allocated (hostBuffer); an
  // allocation that still fails is reported, not an abort.
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc &) {
    die("out of host memory");
  } catch (const std::length_error &) {
    die("out of host memory (a size too large for the C++ library)");
  }
}
