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
// Nothing read is trusted: the library file is checked before dlopen
// (Elf.h), its module info is validated before use (ModuleInfo.h), .npy
// files are parsed strictly (Npy.h), dim expressions are evaluated with
// overflow checks (DimExpr.h) and host buffers are sized with checked
// arithmetic and refused beyond the machine's memory: bad input is an
// error naming the file and the field, never a crash.
//
//===----------------------------------------------------------------------===//

#include "DimExpr.h"
#include "Elf.h"
#include "Json.h"
#include "ModuleInfo.h"
#include "Npy.h"
#include "te/Runtime/TERuntime.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
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
using te::json::Array;
using te::json::Object;
using te::json::Value;

namespace {

/// Command-line options (see usage()).
struct Options {
  std::string library, entry, step, inputsDir, gradsDir, outputsDir, backend;
  std::vector<std::string> inputs;
  int64_t randomSeed = -1;
  uint64_t rngSeed = 0; ///< the context's seed (NVFP4 stochastic rounding)
  unsigned bench = 0;
  bool list = false, graph = false;
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

using EntryFn = int32_t (*)(te_rt_context *, void *const *, void *const *,
                            const int64_t *);

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

/// One entry of the library, from te_module_info().
struct Entry {
  std::string name, symbol;
  const Object *info = nullptr;
  const Array *args = nullptr, *results = nullptr, *dims = nullptr;
  EntryFn fn = nullptr;

  std::string argLabel(size_t i) const {
    std::string label = "arg" + std::to_string(i);
    const Object *a = (*args)[i].getAsObject();
    for (const char *key :
         {"te.saved", "te.grad_of", "te.state", "te.cached_weight"})
      if (auto s = a->getString(key))
        label += std::string(" (") + key + "=" + *s + ")";
    return label;
  }
};

/// The values of the dims symbols `d<k>` from the inputs, checked.
std::vector<int64_t> bindDims(const Entry &e, const std::vector<Tensor> &in) {
  std::vector<int64_t> dims(e.dims->size(), -1);
  for (size_t i = 0; i < e.args->size(); ++i) {
    const Object *a = (*e.args)[i].getAsObject();
    const Array *shape = a->getArray("shape");
    std::string dtype = *a->getString("dtype");
    if (in[i].dtype != dtype)
      die(e.name + ": " + e.argLabel(i) + " must be " + dtype + ", got " +
          in[i].dtype);
    if (dtype == "qtensor" && in[i].shape.empty())
      continue; // raw bytes from a file: sized after the dims are bound
    if (in[i].shape.size() != shape->size())
      die(e.name + ": " + e.argLabel(i) + " must have rank " +
          str(shape->size()) + ", got " + shapeString(in[i].shape));
    for (size_t d = 0; d < shape->size(); ++d) {
      int64_t got = in[i].shape[d];
      if (auto n = (*shape)[d].getAsInteger()) {
        if (*n != got)
          die(e.name + ": " + e.argLabel(i) + " dim " + str(d) + " must be " +
              str(*n) + ", got " + shapeString(in[i].shape));
        continue;
      }
      std::string sym = *(*shape)[d].getAsString();
      std::optional<uint64_t> k =
          sym.size() > 1 ? parseUnsigned(std::string_view(sym).substr(1))
                         : std::nullopt;
      if (!k || *k >= dims.size())
        die(e.name + ": malformed dim symbol '" + sym + "'");
      if (dims[*k] >= 0 && dims[*k] != got)
        die(e.name + ": " + e.argLabel(i) + " dim " + str(d) + " is " +
            str(got) + " but " + sym + " = " + str(dims[*k]) +
            " from an earlier argument (these dims must be equal)");
      dims[*k] = got;
    }
  }
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k] < 0)
      die(e.name + ": the dim symbol d" + str(int64_t(k)) +
          " is not bound: no argument with it was given as a tensor "
          "(quantized tensors read from files carry no shape)");
  return dims;
}

/// The value of the dim expression `expr` (see DimExpr.h) at `dims`; dies
/// with the expression and what went wrong, or when it is negative.
int64_t evaluateDim(const std::string &expr, const std::vector<int64_t> &dims) {
  te::dimexpr::Failure failure;
  std::optional<int64_t> v = te::dimexpr::evaluate(expr, dims, failure);
  if (!v)
    die(failure.message);
  if (*v < 0)
    die("dim expression '" + expr + "' is " + str(*v) +
        " at these dims (a dim must be >= 0)");
  return *v;
}

std::vector<int64_t> resultShape(const Object *r,
                                 const std::vector<int64_t> &dims) {
  std::vector<int64_t> shape;
  for (const Value &d : *r->getArray("shape")) {
    if (auto n = d.getAsInteger())
      shape.push_back(*n);
    else if (auto expr = d.getAsString())
      shape.push_back(evaluateDim(*expr, dims));
    else
      die("malformed module info: a dim that is neither a number nor a "
          "string");
  }
  return shape;
}

/// The bytes of a buffer described by `o` (an argument or result) at
/// `dims`: elements times element size, or for a quantized tensor the sum of
/// its inner tensors, each padded to the alignment.
int64_t bufferBytes(const Object *o, const std::vector<int64_t> &dims) {
  const std::string what = "a buffer of the module info";
  auto count = [&](const Object *t) {
    return elementCount(resultShape(t, dims), what);
  };
  if (*o->getString("dtype") != "qtensor")
    return byteCount(count(o), elementBytes(*o->getString("dtype")), what);
  // validate() checked: a power-of-two alignment and the inner tensors.
  int64_t align = o->getInteger("alignment").value_or(256), total = 0;
  for (const Value &v : *o->getArray("inner")) {
    const Object *t = v.getAsObject();
    int64_t bytes =
        byteCount(count(t), *t->getString("dtype") == "float32" ? 4 : 1, what);
    int64_t padded;
    if (__builtin_add_overflow(bytes, align - 1, &padded) ||
        __builtin_add_overflow(total, padded / align * align, &total))
      die(what + ": a quantized tensor's size overflows int64");
  }
  return total;
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

/// TE's initial recipe state (§4.1) for a te.state argument: amax
/// histories zero, scales one; nullopt for other arguments.
std::optional<Tensor> initialState(const Object *a,
                                   const std::vector<int64_t> &shape) {
  auto name = a->getString("te.state");
  if (!name || *a->getString("dtype") != "float32")
    return std::nullopt;
  std::string what = "the initial recipe state '" + *name + "'";
  int64_t n = elementCount(shape, what);
  float v = name->find("scales") != std::string::npos ? 1.0f : 0.0f;
  Tensor t{"float32", shape, hostBuffer(byteCount(n, 4, what), what)};
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(t.data.data() + 4 * i, &v, 4);
  return t;
}

Tensor randomTensor(const Object *a, unsigned seed,
                    const std::vector<int64_t> &shape) {
  Tensor t{*a->getString("dtype"), shape, {}};
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

/// How many values an alias "input:N" / "output:N" may index.
size_t kind_limit(const std::string &ref, const std::vector<Tensor> &in,
                  const std::vector<Tensor> &out) {
  return ref.rfind("input:", 0) == 0 ? in.size() : out.size();
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
      const Object *a = (*e.args)[i].getAsObject();
      if (in[i].dtype == "qtensor" &&
          int64_t(in[i].data.size()) != bufferBytes(a, dims))
        die(e.name + ": " + e.argLabel(i) + " (" + *a->getString("type") +
            ") must be " + str(bufferBytes(a, dims)) + " bytes, got " +
            str(in[i].data.size()));
    }
    std::vector<Tensor> out;
    for (size_t i = 0; i < e.results->size(); ++i) {
      const Object *o = (*e.results)[i].getAsObject();
      Tensor t{*o->getString("dtype"), resultShape(o, dims), {}};
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
    auto call = [&] {
      if (e.fn(ctx, args.data(), results.data(), dims.data()) != 0)
        die(e.name + " failed: " + te_rt_last_error());
      if (te_rt_synchronize(ctx) != 0)
        die(te_rt_last_error());
    };
    if (e.fn(ctx, args.data(), results.data(), dims.data()) != 0) {
      std::string error = te_rt_last_error();
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
      if (e.fn(ctx, args.data(), results.data(), dims.data()) != 0) {
        std::string error = te_rt_last_error();
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
  size_t n = e.args->size();
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
      for (const char *key :
           {"te.saved", "te.grad_of", "te.state", "te.cached_weight"})
        if (auto s = (*e.args)[i].getAsObject()->getString(key);
            s && *s == name)
          index = i;
    if (!index || *index >= n)
      die("--input " + name + ": " + e.name + " has no such argument (" +
          str(n) + " arguments; see --list)");
    preset[*index] =
        loadNpy(file, *(*e.args)[*index].getAsObject()->getString("dtype"));
    have[*index] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (have[i] || opts.inputsDir.empty())
      continue;
    std::string path = findNpy(opts.inputsDir, "arg" + std::to_string(i));
    if (path.empty())
      continue;
    preset[i] = loadNpy(path, *(*e.args)[i].getAsObject()->getString("dtype"));
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
  size_t numDims = e.dims->size();
  std::vector<int64_t> dims(numDims, -1);
  for (size_t i = 0; i < e.args->size(); ++i) {
    const Array *shape = (*e.args)[i].getAsObject()->getArray("shape");
    if (given[i].dtype.empty() || given[i].shape.size() != shape->size())
      continue; // not given, raw qtensor bytes, or a rank bindDims reports
    for (size_t d = 0; d < shape->size(); ++d)
      if (auto sym = (*shape)[d].getAsString())
        if (auto k = te::dimexpr::symbolIndex(*sym); k && dims[*k] < 0)
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
  auto collect = [&](const Array *list) {
    for (const Value &v : *list)
      if (const Array *inner = v.getAsObject()->getArray("inner"))
        for (const Value &p : *inner)
          for (const Value &d : *p.getAsObject()->getArray("shape"))
            if (auto s = d.getAsString())
              exprs.push_back(*s);
  };
  collect(e.args);
  collect(e.results);
  for (int round = 0; round < 16; ++round) {
    bool raised = false;
    for (const std::string &x : exprs) {
      te::dimexpr::Failure failure;
      if (te::dimexpr::evaluate(x, dims, failure) ||
          failure.kind != te::dimexpr::Failure::Inexact)
        continue; // fine, or an error reported where the shape is used
      for (size_t k : symbolsOf(x))
        if (chosen[k] && choice[k] < (int64_t(1) << 20)) {
          choice[k] = dims[k] = std::lcm(choice[k], failure.divisor);
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
    const Object *a = (*e.args)[i].getAsObject();
    std::vector<int64_t> shape;
    for (const Value &d : *a->getArray("shape"))
      shape.push_back(d.getAsInteger()
                          ? *d.getAsInteger()
                          : dims[*te::dimexpr::symbolIndex(*d.getAsString())]);
    // Recipe state not given starts as TE initializes it.
    if (std::optional<Tensor> state = initialState(a, shape)) {
      preset[i] = std::move(*state);
      continue;
    }
    if (opts.randomSeed < 0)
      die(e.name + ": no value for " + e.argLabel(i) +
          " (use --input, --inputs or --random)");
    if (*a->getString("dtype") == "qtensor") {
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
  std::vector<int64_t> choice(e.dims->size(), 8);
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

void printList(const std::vector<std::string> &order,
               std::map<std::string, Entry> &entries) {
  for (const std::string &name : order) {
    const Entry &e = entries[name];
    std::cout << name << "\n";
    for (size_t i = 0; i < e.args->size(); ++i) {
      const Object *a = (*e.args)[i].getAsObject();
      std::cout << "  " << e.argLabel(i) << ": " << *a->getString("dtype")
                << " " << a->get("shape")->str() << "\n";
    }
    for (size_t i = 0; i < e.results->size(); ++i) {
      const Object *r = (*e.results)[i].getAsObject();
      std::cout << "  -> result" << i << ": " << *r->getString("dtype") << " "
                << r->get("shape")->str();
      for (const char *key :
           {"te.saved", "te.grad_of", "te.state", "te.cached_weight"})
        if (auto s = r->getString(key))
          std::cout << " (" << key << "=" << *s << ")";
      std::cout << "\n";
    }
    std::cout << "  arena: " << e.info->get("arena_bytes")->str() << " bytes\n";
  }
}

} // namespace

int run(int argc, char **argv) {
  parseArguments(argc, argv);
  const std::string &library = opts.library;

  // dlopen searches the library path for names without a slash.
  std::error_code ec;
  fs::path path = fs::absolute(library, ec);
  // dlopen trusts the file's headers (a truncated library dies with SIGBUS
  // inside it): check the file first.
  std::string elfError;
  if (ec || !te::elf::checkLibrary(path.string(), elfError))
    die("cannot load '" + library + "': " + (ec ? ec.message() : elfError));
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    die("cannot load '" + library + "': " + dlerror());
  auto infoFn =
      reinterpret_cast<const char *(*)()>(dlsym(handle, "te_module_info"));
  if (!infoFn)
    die("'" + library + "' is not a te-compile library (no te_module_info)");
  const char *infoText = infoFn();
  if (!infoText)
    die("'" + library +
        "': malformed module info: te_module_info() "
        "returned NULL");
  std::string parseError;
  std::optional<Value> info = te::json::parse(infoText, parseError);
  if (!info)
    die("'" + library + "': malformed module info: " + parseError);
  if (!te::moduleinfo::validate(*info, library, parseError))
    die(parseError);
  const Object *module = info->getAsObject();

  std::map<std::string, Entry> entries;
  std::vector<std::string> order;
  for (const Value &v : *module->getArray("entries")) {
    const Object *o = v.getAsObject();
    Entry e;
    e.name = o->getString("name").value_or("");
    e.symbol = o->getString("symbol").value_or("");
    e.info = o;
    e.args = o->getArray("args");
    e.results = o->getArray("results");
    e.dims = o->getArray("dims");
    e.fn = e.symbol.empty()
               ? nullptr
               : reinterpret_cast<EntryFn>(dlsym(handle, e.symbol.c_str()));
    if (!e.fn)
      die("'" + library + "' lacks the entry symbol " + e.symbol);
    order.push_back(e.name);
    entries[e.name] = e;
  }

  if (opts.list) {
    printList(order, entries);
    return 0;
  }

  std::string backend = opts.backend;
  if (backend.empty())
    backend = module->getString("target").value_or("auto");
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
    auto fwdIt = entries.find(stepName + "_fwd");
    auto bwdIt = entries.find(stepName + "_bwd");
    if (fwdIt == entries.end() || bwdIt == entries.end())
      die("--step " + stepName + ": the library has no " + stepName +
          "_fwd/_bwd (compile with te-compile --train)");
    const Entry &fwd = fwdIt->second, &bwd = bwdIt->second;
    std::vector<double> fwdTimes, bwdTimes;
    auto [in, out] = runEntry(runner, fwd, bench, fwdTimes);
    std::vector<Tensor> bwdIn(bwd.args->size());
    std::map<std::string, size_t> savedResult;
    for (size_t i = 0; i < fwd.results->size(); ++i)
      if (auto s = (*fwd.results)[i].getAsObject()->getString("te.saved"))
        savedResult[*s] = i;
    for (size_t i = 0; i < bwd.args->size(); ++i) {
      const Object *a = (*bwd.args)[i].getAsObject();
      // "input:N" / "output:N": the kind and N.
      auto refOf = [&](const std::string &ref, size_t limit) {
        size_t colon = ref.find(':');
        std::optional<uint64_t> n =
            colon == std::string::npos
                ? std::nullopt
                : parseUnsigned(std::string_view(ref).substr(colon + 1));
        if (!n || *n >= limit)
          die("--step: malformed reference '" + ref + "' in " + bwd.name);
        return std::make_pair(ref.substr(0, colon), size_t(*n));
      };
      if (auto alias = a->getString("te.alias")) {
        auto [kind, k] = refOf(*alias, kind_limit(*alias, in, out));
        bwdIn[i] = kind == "input" ? in[k] : out[k];
      } else if (auto saved = a->getString("te.saved")) {
        auto it = savedResult.find(*saved);
        if (it == savedResult.end())
          die("--step: " + fwd.name + " does not return the saved tensor '" +
              *saved + "'");
        bwdIn[i] = out[it->second];
      } else if (auto of = a->getString("te.grad_of")) {
        size_t k = refOf(*of, out.size()).second;
        std::string path =
            opts.gradsDir.empty()
                ? ""
                : findNpy(opts.gradsDir, "result" + std::to_string(k));
        if (path.empty() && opts.randomSeed < 0)
          die("--step: no gradient for forward result " + str(k) +
              " (give --grads DIR with result" + str(k) + ".npy, or --random)");
        bwdIn[i] = path.empty()
                       ? randomTensor(a, unsigned(opts.randomSeed) + 1000u + k,
                                      out[k].shape)
                       : loadNpy(path, *a->getString("dtype"));
      } else {
        // The backward's recipe state starts as TE initializes it.
        std::optional<Tensor> state;
        if (a->getString("te.state"))
          state = initialState(a, resultShape(a, {}));
        if (!state)
          die("--step: cannot feed " + bwd.argLabel(i));
        bwdIn[i] = std::move(*state);
      }
    }
    std::vector<Tensor> grads = *runner.run(bwd, bwdIn, bench, bwdTimes);
    if (!outputsDir.empty()) {
      std::string fwdDir = outputsDir + "/fwd", bwdDir = outputsDir + "/bwd";
      fs::create_directories(fwdDir, ec);
      fs::create_directories(bwdDir, ec);
      size_t numResults = 0;
      for (size_t i = 0; i < fwd.results->size(); ++i) {
        const Object *r = (*fwd.results)[i].getAsObject();
        if (auto state = r->getString("te.state"))
          saveNpy(fwdDir, "state." + *state, out[i]);
        else if (!r->getString("te.saved"))
          saveNpy(fwdDir, "result" + std::to_string(numResults++), out[i]);
      }
      for (size_t i = 0; i < grads.size(); ++i) {
        const Object *r = (*bwd.results)[i].getAsObject();
        if (auto of = r->getString("te.grad_of"))
          saveNpy(bwdDir, "grad_arg" + of->substr(of->find(':') + 1), grads[i]);
        else if (auto state = r->getString("te.state"))
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
    return 0;
  }

  std::string name = opts.entry;
  if (name.empty()) {
    if (order.size() != 1)
      die("the library has " + str(order.size()) +
          " entries; choose one with --entry (see --list)");
    name = order.front();
  }
  auto it = entries.find(name);
  if (it == entries.end())
    die("no entry '" + name + "' (see --list)");
  std::vector<double> times;
  std::vector<Tensor> out = runEntry(runner, it->second, bench, times).second;
  if (!outputsDir.empty())
    for (size_t i = 0; i < out.size(); ++i)
      saveNpy(outputsDir, "result" + std::to_string(i), out[i]);
  std::cout << "te-run: " << name << ": " << out.size() << " results on "
            << te_rt_backend_name(te_rt_context_backend(ctx)) << "\n";
  report(name, times);
  te_rt_context_destroy(ctx);
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
