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
//===----------------------------------------------------------------------===//

#include "Json.h"
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
#include <optional>
#include <random>
#include <string>
#include <string_view>
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
                         (quantized tensors: all-zero bytes)
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
/// A non-negative decimal integer, or nullopt.
std::optional<uint64_t> parseUnsigned(std::string_view s) {
  if (s.empty() || s.size() > 18)
    return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

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

/// One entry of the library, from te_module_info().
struct Entry {
  std::string name, symbol;
  const Object *info = nullptr;
  const Array *args = nullptr, *results = nullptr,
                          *dims = nullptr;
  EntryFn fn = nullptr;

  std::string argLabel(size_t i) const {
    std::string label = "arg" + std::to_string(i);
    const Object *a = (*args)[i].getAsObject();
    for (const char *key : {"te.saved", "te.grad_of", "te.state", "te.cached_weight"})
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
          die(e.name + ": " + e.argLabel(i) + " dim " + str(d) +
              " must be " + str(*n) + ", got " +
              shapeString(in[i].shape));
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
  return dims;
}

/// Evaluates a dim expression of the module info at the values of the dims
/// symbols. The grammar te-lower-to-runtime emits:
///   expr   := term (('+' | '-') term)*
///   term   := factor (('*' | '/') factor)*      ('/' divides exactly)
///   factor := INTEGER | 'd' INTEGER | '(' expr ')'
///           | ('ceildiv' | 'roundup') '(' expr ',' expr ')'
/// Anything else dies naming the expression and where it went wrong.
class DimExpr {
public:
  DimExpr(const std::string &text, const std::vector<int64_t> &dims)
      : text(text), dims(dims) {}

  int64_t evaluate() {
    int64_t v = expr();
    skipSpaces();
    if (pos != text.size())
      fail("unexpected '" + text.substr(pos, 1) + "'");
    return v;
  }

private:
  [[noreturn]] void fail(const std::string &why) {
    die("malformed dim expression '" + text + "' at column " +
        str(int64_t(pos) + 1) + ": " + why);
  }
  void skipSpaces() {
    while (pos < text.size() && text[pos] == ' ')
      ++pos;
  }
  bool consume(char c) {
    skipSpaces();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c))
      fail(std::string("expected '") + c + "'");
  }
  /// A positive divisor, or dies.
  int64_t divisor(int64_t v, const char *op) {
    if (v <= 0)
      fail(std::string(op) + " by " + str(v));
    return v;
  }
  int64_t expr() {
    int64_t v = term();
    while (true) {
      if (consume('+'))
        v += term();
      else if (consume('-'))
        v -= term();
      else
        return v;
    }
  }
  int64_t term() {
    int64_t v = factor();
    while (true) {
      if (consume('*')) {
        v *= factor();
      } else if (consume('/')) {
        int64_t d = divisor(factor(), "division");
        if (v % d != 0)
          die("dim expression '" + text + "': " + str(v) +
              " is not divisible by " + str(d) +
              " (the recipe needs a multiple of " + str(d) + " there)");
        v /= d;
      } else {
        return v;
      }
    }
  }
  int64_t factor() {
    skipSpaces();
    if (consume('(')) {
      int64_t v = expr();
      expect(')');
      return v;
    }
    size_t begin = pos;
    while (pos < text.size() &&
           std::isalnum(static_cast<unsigned char>(text[pos])))
      ++pos;
    std::string word = text.substr(begin, pos - begin);
    if (word.empty())
      fail(pos < text.size() ? "unexpected '" + text.substr(pos, 1) + "'"
                             : "unexpected end");
    if (std::optional<uint64_t> n = parseUnsigned(word))
      return int64_t(*n);
    if (word[0] == 'd') {
      std::optional<uint64_t> k =
          parseUnsigned(std::string_view(word).substr(1));
      if (!k || *k >= dims.size())
        fail("unknown dim symbol '" + word + "' (the entry has " +
             str(dims.size()) + " dim symbols)");
      return dims[*k];
    }
    if (word == "ceildiv" || word == "roundup") {
      expect('(');
      int64_t a = expr();
      expect(',');
      int64_t b = divisor(expr(), word.c_str());
      expect(')');
      int64_t q = (a + b - 1) / b;
      return word == "ceildiv" ? q : q * b;
    }
    pos = begin;
    fail("unknown word '" + word + "'");
  }

  const std::string &text;
  const std::vector<int64_t> &dims;
  size_t pos = 0;
};

std::vector<int64_t> resultShape(const Object *r,
                                 const std::vector<int64_t> &dims) {
  std::vector<int64_t> shape;
  for (const Value &d : *r->getArray("shape")) {
    if (auto n = d.getAsInteger())
      shape.push_back(*n);
    else if (auto expr = d.getAsString())
      shape.push_back(DimExpr(*expr, dims).evaluate());
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
  auto count = [&](const Object *t) {
    int64_t n = 1;
    for (int64_t d : resultShape(t, dims))
      n *= d;
    return n;
  };
  if (*o->getString("dtype") != "qtensor")
    return count(o) * elementBytes(*o->getString("dtype"));
  int64_t align = o->getInteger("alignment").value_or(256), total = 0;
  const Array *inner = o->getArray("inner");
  if (!inner)
    die("malformed module info: a qtensor without inner tensors");
  for (const Value &v : *inner) {
    const Object *t = v.getAsObject();
    int64_t bytes = count(t) * (*t->getString("dtype") == "float32" ? 4 : 1);
    total += (bytes + align - 1) / align * align;
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
      die("'" + path + "' must hold a quantized tensor's bytes (a 1-D uint8 "
          "array, as te-run --outputs writes), got " + a.descr + " " +
          shapeString(a.shape));
    return Tensor{dtype, {}, std::move(a.data)};
  }
  if (a.descr != expected || (dtype == "bfloat16") != bf16File)
    die("'" + path + "' holds " +
        (a.descr == "<u2" ? std::string(bf16File ? "bfloat16" : "uint16")
         : a.descr == "<f4" ? std::string("float32")
                            : std::string("float16")) +
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

void saveNpy(const std::string &dir, const std::string &stem,
             const Tensor &t) {
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
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  float v = name->find("scales") != std::string::npos ? 1.0f : 0.0f;
  Tensor t{"float32", shape, std::vector<char>(n * 4)};
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(t.data.data() + 4 * i, &v, 4);
  return t;
}

Tensor randomTensor(const Object *a, unsigned seed,
                    const std::vector<int64_t> &shape) {
  Tensor t{*a->getString("dtype"), shape, {}};
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  t.data.resize(n * elementBytes(t.dtype));
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

class Runner {
public:
  Runner(te_rt_context *ctx) : ctx(ctx) {}

  /// Runs `e` on host tensors; returns the results of a first call (and the
  /// times of `repeats` extra timed calls in `times`, or with --graph of
  /// `repeats` launches of a CUDA graph captured from one more call).
  std::vector<Tensor> run(const Entry &e, const std::vector<Tensor> &in,
                          unsigned repeats, std::vector<double> &times) {
    std::vector<int64_t> dims = bindDims(e, in);
    for (size_t i = 0; i < in.size(); ++i) {
      const Object *a = (*e.args)[i].getAsObject();
      if (in[i].dtype == "qtensor" &&
          int64_t(in[i].data.size()) != bufferBytes(a, dims))
        die(e.name + ": " + e.argLabel(i) + " (" + *a->getString("type") +
            ") must be " + str(bufferBytes(a, dims)) + " bytes, got " +
            str(in[i].data.size()));
    }
    std::vector<void *> args, results;
    for (const Tensor &t : in)
      args.push_back(upload(t));
    std::vector<Tensor> out;
    for (const Value &r : *e.results) {
      const Object *o = r.getAsObject();
      Tensor t{*o->getString("dtype"), resultShape(o, dims), {}};
      t.data.resize(bufferBytes(o, dims));
      results.push_back(alloc(t.data.size()));
      out.push_back(std::move(t));
    }
    auto call = [&] {
      if (e.fn(ctx, args.data(), results.data(), dims.data()) != 0)
        die(e.name + " failed: " + te_rt_last_error());
      if (te_rt_synchronize(ctx) != 0)
        die(te_rt_last_error());
    };
    call();
    for (size_t i = 0; i < out.size(); ++i)
      if (te_rt_copy_to_host(ctx, out[i].data.data(), results[i],
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
    for (void *p : args)
      te_rt_free(ctx, p);
    for (void *p : results)
      te_rt_free(ctx, p);
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
    if (te_rt_copy_to_backend(ctx, p, t.data.data(), t.data.size()) != 0)
      die(te_rt_last_error());
    return p;
  }
  te_rt_context *ctx;
};

/// The inputs of `e`: --input, then --inputs DIR, then --random.
std::vector<Tensor> gatherInputs(const Entry &e,
                                 std::vector<Tensor> preset = {}) {
  size_t n = e.args->size();
  preset.resize(n);
  std::vector<bool> have(n);
  for (size_t i = 0; i < n; ++i)
    have[i] = !preset[i].dtype.empty();
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
      for (const char *key : {"te.saved", "te.grad_of", "te.state", "te.cached_weight"})
        if (auto s = (*e.args)[i].getAsObject()->getString(key);
            s && *s == name)
          index = i;
    if (!index || *index >= n)
      die("--input " + name + ": " + e.name + " has no such argument (" +
          str(n) + " arguments; see --list)");
    preset[*index] = loadNpy(file, *(*e.args)[*index].getAsObject()
                                               ->getString("dtype"));
    have[*index] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (have[i] || opts.inputsDir.empty())
      continue;
    std::string path = findNpy(opts.inputsDir, "arg" + std::to_string(i));
    if (path.empty())
      continue;
    preset[i] =
        loadNpy(path, *(*e.args)[i].getAsObject()->getString("dtype"));
    have[i] = true;
  }
  // Random values need concrete shapes: dynamic dims take the values bound
  // by the given inputs, else 8.
  for (size_t i = 0; i < n; ++i) {
    if (have[i])
      continue;
    const Object *a = (*e.args)[i].getAsObject();
    std::vector<int64_t> shape;
    for (const Value &d : *a->getArray("shape"))
      shape.push_back(d.getAsInteger() ? *d.getAsInteger() : 8);
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
      std::vector<int64_t> dims(e.dims->size(), 8);
      preset[i] = Tensor{"qtensor", shape,
                         std::vector<char>(bufferBytes(a, dims), 0)};
      continue;
    }
    preset[i] = randomTensor(a, unsigned(opts.randomSeed) * 7919u + unsigned(i),
                             shape);
  }
  return preset;
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
      die("more than one library given ('" + opts.library + "', '" + a +
          "')");
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
      for (const char *key : {"te.saved", "te.grad_of", "te.state", "te.cached_weight"})
        if (auto s = r->getString(key))
          std::cout << " (" << key << "=" << *s << ")";
      std::cout << "\n";
    }
    std::cout << "  arena: " << e.info->get("arena_bytes")->str()
              << " bytes\n";
  }
}

} // namespace

int main(int argc, char **argv) {
  parseArguments(argc, argv);
  const std::string &library = opts.library;

  // dlopen searches the library path for names without a slash.
  std::error_code ec;
  fs::path path = fs::absolute(library, ec);
  if (ec || !fs::exists(path))
    die("cannot load '" + library + "': no such file");
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    die("cannot load '" + library + "': " + dlerror());
  auto infoFn = reinterpret_cast<const char *(*)()>(
      dlsym(handle, "te_module_info"));
  if (!infoFn)
    die("'" + library + "' is not a te-compile library (no te_module_info)");
  std::string parseError;
  std::optional<Value> info = te::json::parse(infoFn(), parseError);
  const Object *module = info ? info->getAsObject() : nullptr;
  if (!module || !module->getArray("entries"))
    die("'" + library + "': malformed module info: " + parseError);

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
    e.fn = reinterpret_cast<EntryFn>(dlsym(handle, e.symbol.c_str()));
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
  if (!outputsDir.empty() &&
      (fs::create_directories(outputsDir, ec), ec))
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
    std::vector<Tensor> in = gatherInputs(fwd);
    std::vector<Tensor> out = runner.run(fwd, in, bench, fwdTimes);
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
            opts.gradsDir.empty() ? "" : findNpy(opts.gradsDir, "result" + std::to_string(k));
        if (path.empty() && opts.randomSeed < 0)
          die("--step: no gradient for forward result " + str(k) +
              " (give --grads DIR with result" + str(k) +
              ".npy, or --random)");
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
    std::vector<Tensor> grads = runner.run(bwd, bwdIn, bench, bwdTimes);
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
  std::vector<Tensor> out =
      runner.run(it->second, gatherInputs(it->second), bench, times);
  if (!outputsDir.empty())
    for (size_t i = 0; i < out.size(); ++i)
      saveNpy(outputsDir, "result" + std::to_string(i), out[i]);
  std::cout << "te-run: " << name << ": " << out.size() << " results on "
               << te_rt_backend_name(te_rt_context_backend(ctx)) << "\n";
  report(name, times);
  te_rt_context_destroy(ctx);
  return 0;
}
