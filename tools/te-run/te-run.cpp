//===- te-run.cpp - runs te-compile'd libraries -----------------*- C++ -*-===//
//
// te-run LIB.so: loads a library made by te-compile, lists its entries
// (--list), feeds .npy inputs (--input NAME=FILE, --inputs DIR) or seeded
// random ones (--random SEED), checks their shapes and dtypes against the
// entry's signature, runs it on a backend (--backend cpu|cuda|auto) and
// writes one .npy per result (--outputs DIR). --step NAME runs a training
// step: NAME_fwd, then NAME_bwd fed with the saved bundle (aliases from the
// forward's own inputs and outputs) and the output gradients (--grads DIR).
// --bench N reports the median and spread of N timed calls.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"
#include "te/Runtime/TERuntime.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <dlfcn.h>
#include <random>

namespace cl = llvm::cl;
using llvm::StringRef;

static cl::OptionCategory category("te-run options");
static cl::opt<std::string> library(cl::Positional, cl::desc("<library.so>"),
                                    cl::Required, cl::cat(category));
static cl::opt<bool> list("list", cl::desc("List the entries and exit"),
                          cl::cat(category));
static cl::opt<std::string> entryName("entry", cl::desc("Entry to run"),
                                      cl::cat(category));
static cl::opt<std::string>
    stepName("step",
             cl::desc("Run a training step of NAME: NAME_fwd then NAME_bwd"),
             cl::cat(category));
static cl::list<std::string>
    inputSpecs("input",
               cl::desc("NAME=FILE.npy: an argument, by index (argN or N) or "
                        "by its te.saved / te.grad_of / te.state name"),
               cl::cat(category));
static cl::opt<std::string>
    inputsDir("inputs",
              cl::desc("Directory with argN.npy (or argN.bf16.npy) per "
                       "argument not given by --input"),
              cl::cat(category));
static cl::opt<std::string>
    gradsDir("grads",
             cl::desc("--step: directory with resultN.npy, the gradient of "
                      "forward result N"),
             cl::cat(category));
static cl::opt<int64_t>
    randomSeed("random",
               cl::desc("Fill arguments not given otherwise with seeded "
                        "uniform values in [-1, 1)"),
               cl::init(-1), cl::cat(category));
static cl::opt<std::string> outputsDir("outputs",
                                       cl::desc("Write resultN.npy here"),
                                       cl::cat(category));
static cl::opt<std::string>
    backendName("backend",
                cl::desc("cpu, cuda or auto (default: the library's target)"),
                cl::cat(category));
static cl::opt<unsigned> bench("bench",
                               cl::desc("Time N calls (after one warm-up)"),
                               cl::init(0), cl::cat(category));

namespace {

[[noreturn]] void die(const llvm::Twine &message) {
  llvm::errs() << "te-run: error: " << message << "\n";
  std::exit(1);
}

using EntryFn = int32_t (*)(te_rt_context *, void *const *, void *const *,
                            const int64_t *);

struct Tensor {
  std::string dtype; ///< float32 / bfloat16 / float16
  std::vector<int64_t> shape;
  std::vector<char> data;
};

int64_t elementBytes(StringRef dtype) { return dtype == "float32" ? 4 : 2; }
std::string descrOf(StringRef dtype) {
  return dtype == "float32" ? "<f4" : dtype == "bfloat16" ? "<u2" : "<f2";
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
  const llvm::json::Object *info = nullptr;
  const llvm::json::Array *args = nullptr, *results = nullptr,
                          *dims = nullptr;
  EntryFn fn = nullptr;

  std::string argLabel(size_t i) const {
    std::string label = "arg" + std::to_string(i);
    const llvm::json::Object *a = (*args)[i].getAsObject();
    for (StringRef key : {"te.saved", "te.grad_of", "te.state"})
      if (auto s = a->getString(key))
        label += " (" + key.str() + "=" + s->str() + ")";
    return label;
  }
};

/// The values of the dims symbols `d<k>` from the inputs, checked.
std::vector<int64_t> bindDims(const Entry &e, const std::vector<Tensor> &in) {
  std::vector<int64_t> dims(e.dims->size(), -1);
  for (size_t i = 0; i < e.args->size(); ++i) {
    const llvm::json::Object *a = (*e.args)[i].getAsObject();
    const llvm::json::Array *shape = a->getArray("shape");
    StringRef dtype = *a->getString("dtype");
    if (in[i].dtype != dtype)
      die(e.name + ": " + e.argLabel(i) + " must be " + dtype + ", got " +
          in[i].dtype);
    if (in[i].shape.size() != shape->size())
      die(e.name + ": " + e.argLabel(i) + " must have rank " +
          llvm::Twine(shape->size()) + ", got " + shapeString(in[i].shape));
    for (size_t d = 0; d < shape->size(); ++d) {
      int64_t got = in[i].shape[d];
      if (auto n = (*shape)[d].getAsInteger()) {
        if (*n != got)
          die(e.name + ": " + e.argLabel(i) + " dim " + llvm::Twine(d) +
              " must be " + llvm::Twine(*n) + ", got " +
              shapeString(in[i].shape));
        continue;
      }
      StringRef sym = *(*shape)[d].getAsString();
      unsigned k = 0;
      sym.drop_front().getAsInteger(10, k);
      if (dims[k] >= 0 && dims[k] != got)
        die(e.name + ": " + e.argLabel(i) + " dim " + llvm::Twine(d) + " is " +
            llvm::Twine(got) + " but " + sym + " = " + llvm::Twine(dims[k]) +
            " from an earlier argument (these dims must be equal)");
      dims[k] = got;
    }
  }
  return dims;
}

std::vector<int64_t> resultShape(const llvm::json::Object *r,
                                 const std::vector<int64_t> &dims) {
  std::vector<int64_t> shape;
  for (const llvm::json::Value &d : *r->getArray("shape")) {
    if (auto n = d.getAsInteger()) {
      shape.push_back(*n);
      continue;
    }
    // Products of integers and d<k>.
    int64_t v = 1;
    llvm::SmallVector<StringRef> factors;
    d.getAsString()->split(factors, '*');
    for (StringRef f : factors) {
      f = f.trim();
      uint64_t x = 0;
      if (f.starts_with("d") && !f.drop_front().getAsInteger(10, x))
        v *= dims[x];
      else if (!f.getAsInteger(10, x))
        v *= x;
      else
        die("unsupported dim expression '" + *d.getAsString() + "'");
    }
    shape.push_back(v);
  }
  return shape;
}

Tensor loadNpy(const std::string &path, StringRef dtype) {
  te::npy::Array a;
  std::string error;
  if (!te::npy::read(path, a, error))
    die(error);
  bool bf16File = StringRef(path).ends_with(".bf16.npy");
  std::string expected = descrOf(dtype);
  if (a.descr != expected || (dtype == "bfloat16") != bf16File)
    die("'" + path + "' holds " +
        (a.descr == "<u2" ? std::string(bf16File ? "bfloat16" : "uint16")
         : a.descr == "<f4" ? std::string("float32")
                            : std::string("float16")) +
        " but the argument is " + dtype +
        (dtype == "bfloat16" ? " (bf16 files are uint16 named *.bf16.npy)"
                             : ""));
  return Tensor{dtype.str(), a.shape, std::move(a.data)};
}

std::string findNpy(const std::string &dir, const std::string &stem) {
  for (const char *suffix : {".npy", ".bf16.npy"}) {
    std::string p = dir + "/" + stem + suffix;
    if (llvm::sys::fs::exists(p))
      return p;
  }
  return "";
}

void saveNpy(const std::string &dir, const std::string &stem,
             const Tensor &t) {
  std::string path =
      dir + "/" + stem + (t.dtype == "bfloat16" ? ".bf16.npy" : ".npy");
  te::npy::Array a{descrOf(t.dtype), t.shape, t.data};
  std::string error;
  if (!te::npy::write(path, a, error))
    die(error);
}

Tensor randomTensor(const llvm::json::Object *a, unsigned seed,
                    const std::vector<int64_t> &shape) {
  Tensor t{a->getString("dtype")->str(), shape, {}};
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

class Runner {
public:
  Runner(te_rt_context *ctx) : ctx(ctx) {}

  /// Runs `e` on host tensors; returns the results (and the median time of
  /// `repeats` extra timed calls in `times`).
  std::vector<Tensor> run(const Entry &e, const std::vector<Tensor> &in,
                          unsigned repeats, std::vector<double> &times) {
    std::vector<int64_t> dims = bindDims(e, in);
    std::vector<void *> args, results;
    for (const Tensor &t : in)
      args.push_back(upload(t));
    std::vector<Tensor> out;
    for (const llvm::json::Value &r : *e.results) {
      const llvm::json::Object *o = r.getAsObject();
      Tensor t{o->getString("dtype")->str(), resultShape(o, dims), {}};
      int64_t n = 1;
      for (int64_t d : t.shape)
        n *= d;
      t.data.resize(n * elementBytes(t.dtype));
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
    for (unsigned i = 0; i < repeats; ++i) {
      auto start = std::chrono::steady_clock::now();
      call();
      times.push_back(std::chrono::duration<double, std::micro>(
                          std::chrono::steady_clock::now() - start)
                          .count());
    }
    for (size_t i = 0; i < out.size(); ++i)
      if (te_rt_copy_to_host(ctx, out[i].data.data(), results[i],
                             out[i].data.size()) != 0)
        die(te_rt_last_error());
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
  for (const std::string &spec : inputSpecs) {
    auto [name, file] = StringRef(spec).split('=');
    if (file.empty())
      die("--input expects NAME=FILE, got '" + spec + "'");
    std::optional<size_t> index;
    unsigned k;
    StringRef digits = name.starts_with("arg") ? name.drop_front(3) : name;
    if (!digits.getAsInteger(10, k))
      index = k;
    for (size_t i = 0; !index && i < n; ++i)
      for (StringRef key : {"te.saved", "te.grad_of", "te.state"})
        if (auto s = (*e.args)[i].getAsObject()->getString(key);
            s && *s == name)
          index = i;
    if (!index || *index >= n)
      die("--input " + name + ": " + e.name + " has no such argument (" +
          llvm::Twine(n) + " arguments; see --list)");
    preset[*index] = loadNpy(file.str(), *(*e.args)[*index].getAsObject()
                                               ->getString("dtype"));
    have[*index] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (have[i] || inputsDir.empty())
      continue;
    std::string path = findNpy(inputsDir, "arg" + std::to_string(i));
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
    if (randomSeed < 0)
      die(e.name + ": no value for " + e.argLabel(i) +
          " (use --input, --inputs or --random)");
    std::vector<int64_t> shape;
    for (const llvm::json::Value &d :
         *(*e.args)[i].getAsObject()->getArray("shape"))
      shape.push_back(d.getAsInteger() ? *d.getAsInteger() : 8);
    preset[i] = randomTensor((*e.args)[i].getAsObject(),
                             unsigned(randomSeed) * 7919u + unsigned(i), shape);
  }
  return preset;
}

void report(StringRef what, std::vector<double> times) {
  if (times.empty())
    return;
  std::sort(times.begin(), times.end());
  auto at = [&](double q) {
    return times[std::min(times.size() - 1, size_t(q * times.size()))];
  };
  llvm::outs() << llvm::formatv(
      "bench {0}: {1} calls, median {2:f1} us, p10 {3:f1} us, p90 {4:f1} us, "
      "min {5:f1} us\n",
      what, times.size(), at(0.5), at(0.1), at(0.9), times.front());
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "te-run: run a te-compile'd library\n");

  // dlopen searches the library path for names without a slash.
  llvm::SmallString<256> path(library);
  if (std::error_code ec = llvm::sys::fs::make_absolute(path))
    die("cannot resolve '" + library + "': " + ec.message());
  if (!llvm::sys::fs::exists(path))
    die("cannot load '" + library + "': no such file");
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    die("cannot load '" + library + "': " + dlerror());
  auto infoFn = reinterpret_cast<const char *(*)()>(
      dlsym(handle, "te_module_info"));
  if (!infoFn)
    die("'" + library + "' is not a te-compile library (no te_module_info)");
  llvm::Expected<llvm::json::Value> info = llvm::json::parse(infoFn());
  if (!info)
    die("'" + library + "': malformed module info: " +
        llvm::toString(info.takeError()));
  const llvm::json::Object *module = info->getAsObject();

  llvm::StringMap<Entry> entries;
  std::vector<std::string> order;
  for (const llvm::json::Value &v : *module->getArray("entries")) {
    const llvm::json::Object *o = v.getAsObject();
    Entry e;
    e.name = o->getString("name")->str();
    e.symbol = o->getString("symbol")->str();
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

  if (list) {
    for (const std::string &name : order) {
      const Entry &e = entries[name];
      llvm::outs() << name << "\n";
      for (size_t i = 0; i < e.args->size(); ++i) {
        const llvm::json::Object *a = (*e.args)[i].getAsObject();
        llvm::outs() << "  " << e.argLabel(i) << ": " << *a->getString("dtype")
                     << " " << *a->get("shape") << "\n";
      }
      for (size_t i = 0; i < e.results->size(); ++i) {
        const llvm::json::Object *r = (*e.results)[i].getAsObject();
        llvm::outs() << "  -> result" << i << ": " << *r->getString("dtype")
                     << " " << *r->get("shape");
        for (StringRef key : {"te.saved", "te.grad_of", "te.state"})
          if (auto s = r->getString(key))
            llvm::outs() << " (" << key << "=" << *s << ")";
        llvm::outs() << "\n";
      }
      llvm::outs() << "  arena: " << *e.info->get("arena_bytes") << " bytes\n";
    }
    return 0;
  }

  std::string backend = backendName;
  if (backend.empty())
    backend = module->getString("target").value_or("auto").str();
  int32_t requested = te_rt_backend_from_name(backend.c_str());
  if (requested == TE_RT_BACKEND_INVALID)
    die("--backend must be cpu, cuda or auto, got '" + backend + "'");
  te_rt_context *ctx = te_rt_context_create(requested);
  if (!ctx)
    die(te_rt_last_error());
  Runner runner(ctx);
  if (!outputsDir.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(outputsDir))
      die("cannot create '" + outputsDir + "': " + ec.message());

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
    llvm::StringMap<size_t> savedResult;
    for (size_t i = 0; i < fwd.results->size(); ++i)
      if (auto s = (*fwd.results)[i].getAsObject()->getString("te.saved"))
        savedResult[*s] = i;
    for (size_t i = 0; i < bwd.args->size(); ++i) {
      const llvm::json::Object *a = (*bwd.args)[i].getAsObject();
      unsigned k = 0;
      if (auto alias = a->getString("te.alias")) {
        auto [kind, index] = alias->split(':');
        index.getAsInteger(10, k);
        bwdIn[i] = kind == "input" ? in[k] : out[k];
      } else if (auto saved = a->getString("te.saved")) {
        bwdIn[i] = out[savedResult.lookup(*saved)];
      } else if (auto of = a->getString("te.grad_of")) {
        of->split(':').second.getAsInteger(10, k);
        std::string path =
            gradsDir.empty() ? "" : findNpy(gradsDir, "result" + std::to_string(k));
        if (path.empty() && randomSeed < 0)
          die("--step: no gradient for forward result " + llvm::Twine(k) +
              " (give --grads DIR with result" + llvm::Twine(k) +
              ".npy, or --random)");
        bwdIn[i] = path.empty()
                       ? randomTensor(a, unsigned(randomSeed) + 1000u + k,
                                      out[k].shape)
                       : loadNpy(path, *a->getString("dtype"));
      } else {
        die("--step: cannot feed " + bwd.argLabel(i));
      }
    }
    std::vector<Tensor> grads = runner.run(bwd, bwdIn, bench, bwdTimes);
    if (!outputsDir.empty()) {
      std::string fwdDir = outputsDir + "/fwd", bwdDir = outputsDir + "/bwd";
      llvm::sys::fs::create_directories(fwdDir);
      llvm::sys::fs::create_directories(bwdDir);
      size_t numResults = 0;
      for (size_t i = 0; i < fwd.results->size(); ++i)
        if (!(*fwd.results)[i].getAsObject()->getString("te.saved") &&
            !(*fwd.results)[i].getAsObject()->getString("te.state"))
          saveNpy(fwdDir, "result" + std::to_string(numResults++), out[i]);
      for (size_t i = 0; i < grads.size(); ++i) {
        const llvm::json::Object *r = (*bwd.results)[i].getAsObject();
        if (auto of = r->getString("te.grad_of"))
          saveNpy(bwdDir, "grad_arg" + of->split(':').second.str(), grads[i]);
        else
          saveNpy(bwdDir, "state" + std::to_string(i), grads[i]);
      }
    }
    llvm::outs() << "te-run: step " << stepName << ": " << fwd.name << " ("
                 << out.size() << " results) and " << bwd.name << " ("
                 << grads.size() << " results) on "
                 << te_rt_backend_name(te_rt_context_backend(ctx)) << "\n";
    report(fwd.name, fwdTimes);
    report(bwd.name, bwdTimes);
    te_rt_context_destroy(ctx);
    return 0;
  }

  std::string name = entryName;
  if (name.empty()) {
    if (order.size() != 1)
      die("the library has " + llvm::Twine(order.size()) +
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
  llvm::outs() << "te-run: " << name << ": " << out.size() << " results on "
               << te_rt_backend_name(te_rt_context_backend(ctx)) << "\n";
  report(name, times);
  te_rt_context_destroy(ctx);
  return 0;
}
