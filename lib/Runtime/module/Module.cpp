//===- Module.cpp - te-mlir module client (te_module_*) ---------*- C++ -*-===//
//
// The client of te-compile'd libraries declared in te/Runtime/TEModule.h:
// the library file checked before dlopen (Elf.h), te_module_info() parsed
// (Json.h) and validated (ModuleInfo.h) once, every shape evaluated with
// overflow checks (DimExpr.h), and entries and training steps run on the
// caller's buffers, the padding of their quantized results zeroed after
// them (Padding.h; the ranges cached per entry and dims; one
// te_rt_zero_ranges call, one kernel launch on cuda, per 128 ranges).
// Errors go to te_rt_last_error().
//
//===----------------------------------------------------------------------===//

#include "te/Runtime/TEModule.h"

#include "DimExpr.h"
#include "Elf.h"
#include "Json.h"
#include "ModuleInfo.h"
#include "Padding.h"
#include "RuntimeInternal.h"

#include <algorithm>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using te::json::Array;
using te::json::Object;
using te::json::Value;

namespace {

using EntryFn = int32_t (*)(te_rt_context *, void *const *, void *const *,
                            const int64_t *);

/// The keys of the roles, in TE_MODULE_ROLE_* order.
const char *const kRoleKeys[] = {"te.saved", "te.grad_of", "te.state",
                                 "te.cached_weight", "te.alias"};
/// The roles an argument's or result's label names (not te.alias).
constexpr int kLabelRoles = 4;

int32_t fail(const std::string &message) {
  te_rt_internal_set_error(message);
  return 1;
}

std::string str(int64_t v) { return std::to_string(v); }

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

/// One dim of a validated shape: an integer, or a symbol or expression.
struct Dim {
  std::string text;
  std::optional<int64_t> value;
};

std::vector<Dim> dimsOfShape(const Array &shape) {
  std::vector<Dim> out;
  for (const Value &d : shape)
    out.push_back(d.getAsInteger()
                      ? Dim{std::to_string(*d.getAsInteger()), d.getAsInteger()}
                      : Dim{d.getAsString().value_or(""), std::nullopt});
  return out;
}

/// The value of dim expression `expr` at `dims`, which must be >= 0.
bool evaluateDim(const std::string &expr, const std::vector<int64_t> &dims,
                 int64_t &out, int64_t *inexactDivisor = nullptr) {
  te::dimexpr::Failure failure;
  std::optional<int64_t> v = te::dimexpr::evaluate(expr, dims, failure);
  if (inexactDivisor)
    *inexactDivisor =
        !v && failure.kind == te::dimexpr::Failure::Inexact ? failure.divisor
                                                            : 0;
  if (!v)
    return fail(failure.message), false;
  if (*v < 0)
    return fail("dim expression '" + expr + "' is " + str(*v) +
                " at these dims (a dim must be >= 0)"),
           false;
  out = *v;
  return true;
}

/// A shape at `dims`.
bool evaluateShape(const std::vector<Dim> &shapeDims,
                   const std::vector<int64_t> &dims,
                   std::vector<int64_t> &shape) {
  shape.clear();
  for (const Dim &d : shapeDims) {
    int64_t v;
    if (d.value)
      v = *d.value;
    else if (!evaluateDim(d.text, dims, v))
      return false;
    shape.push_back(v);
  }
  return true;
}

/// What the size messages call a buffer of the module info.
const char *const kBufferWhat = "a buffer of the module info";

/// The elements of `shape` times `size` bytes, checked for overflow.
bool byteCount(const std::vector<int64_t> &shape, int64_t size,
               int64_t &bytes) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return fail(std::string(kBufferWhat) + ": shape " + shapeString(shape) +
                  (d < 0 ? " has a negative dim"
                         : " has more elements than fit in int64")),
             false;
  if (__builtin_mul_overflow(n, size, &bytes))
    return fail(std::string(kBufferWhat) + ": " + std::to_string(n) +
                " elements of " + std::to_string(size) +
                " bytes do not fit in int64 bytes"),
           false;
  return true;
}

int64_t elementBytes(const std::string &dtype) {
  return dtype == "float32" ? 4 : dtype == "qtensor" || dtype == "uint8" ? 1
                                                                         : 2;
}

} // namespace

struct te_module_tensor {
  struct Inner {
    std::string name, dtype;
    std::vector<Dim> dims;
  };
  const te_module_entry *entry = nullptr;
  const Object *info = nullptr;
  std::string dtype, label, shapeText;
  std::vector<Dim> dims;
  std::optional<std::string> roles[5];
  int64_t alignment = 0;
  std::vector<Inner> inner;

  /// The entry's dims as a vector (null: none, as for a state's shape).
  std::vector<int64_t> dimsOf(const int64_t *values) const;
  bool layout(const std::vector<int64_t> &dims, std::vector<int64_t> *offsets,
              std::vector<int64_t> *sizes, int64_t &total) const;
};

struct te_module_entry {
  const te_module *module = nullptr;
  const Object *info = nullptr;
  std::string name, symbol, arenaText;
  std::optional<int64_t> arena; ///< nullopt: "dynamic"
  size_t numDims = 0;
  std::vector<te_module_tensor> args, results;
  EntryFn fn = nullptr;
  /// te_arena_bytes_<fn> (module info's arena_symbol; null in libraries
  /// older than it).
  int64_t (*arenaFn)(const int64_t *) = nullptr;
  /// The qtensor results: te_module_run zeroes their padding.
  std::vector<size_t> quantizedResults;

  using Padding = std::shared_ptr<const std::vector<te::padding::Range>>;
  /// The padding of the quantized results at the dims of the last runs,
  /// most recent first (at most kPaddingCacheSize): a run at dims seen
  /// before neither evaluates a shape nor allocates. Runs on several
  /// threads (one context each) share it under the mutex.
  static constexpr size_t kPaddingCacheSize = 8;
  mutable std::mutex paddingMutex;
  mutable std::vector<std::pair<std::vector<int64_t>, Padding>> paddingCache;

  /// The padding ranges of the quantized results at `dims` (numDims
  /// values), from the cache or computed (null, with the last error, when a
  /// layout cannot be evaluated there).
  Padding padding(const int64_t *dims) const;
};

struct te_module {
  std::string path;
  void *handle = nullptr;
  std::string infoText;
  Value info;
  std::vector<std::unique_ptr<te_module_entry>> entries;
  std::map<std::string, const te_module_entry *> byName;
};

struct te_module_step {
  const te_module_entry *fwd = nullptr, *bwd = nullptr;
  /// Per backward argument: TE_MODULE_FEED_* and the index.
  std::vector<std::pair<int32_t, int64_t>> feed;
};

std::vector<int64_t> te_module_tensor::dimsOf(const int64_t *values) const {
  if (!values)
    return {};
  return std::vector<int64_t>(values, values + entry->numDims);
}

/// The byte layout of the tensor's buffer at `dims`: each inner tensor's
/// offset and size (a qtensor), and the total.
bool te_module_tensor::layout(const std::vector<int64_t> &d,
                              std::vector<int64_t> *offsets,
                              std::vector<int64_t> *sizes,
                              int64_t &total) const {
  std::vector<int64_t> shape;
  if (dtype != "qtensor")
    return evaluateShape(dims, d, shape) &&
           byteCount(shape, elementBytes(dtype), total);
  // validate() checked: a power-of-two alignment and the inner tensors.
  total = 0;
  for (const Inner &t : inner) {
    int64_t bytes, padded;
    if (!evaluateShape(t.dims, d, shape) ||
        !byteCount(shape, elementBytes(t.dtype), bytes))
      return false;
    if (offsets)
      offsets->push_back(total);
    if (sizes)
      sizes->push_back(bytes);
    if (__builtin_add_overflow(bytes, alignment - 1, &padded) ||
        __builtin_add_overflow(total, padded / alignment * alignment, &total))
      return fail(std::string(kBufferWhat) +
                  ": a quantized tensor's size overflows int64"),
             false;
  }
  return true;
}

namespace {

/// The description of argument or result `index` of `entry`.
te_module_tensor makeTensor(const te_module_entry *entry, const Object *o,
                            bool isArg, size_t index) {
  te_module_tensor t;
  t.entry = entry;
  t.info = o;
  t.dtype = o->getString("dtype").value_or("");
  t.label = (isArg ? "arg" : "result") + std::to_string(index);
  for (int r = 0; r < 5; ++r) {
    t.roles[r] = o->getString(kRoleKeys[r]);
    if (r < kLabelRoles && t.roles[r])
      t.label += std::string(" (") + kRoleKeys[r] + "=" + *t.roles[r] + ")";
  }
  const Value *shape = o->get("shape");
  t.shapeText = shape->str();
  t.dims = dimsOfShape(*shape->getAsArray());
  if (t.dtype == "qtensor") {
    t.alignment = o->getInteger("alignment").value_or(256);
    for (const Value &v : *o->getArray("inner")) {
      const Object *p = v.getAsObject();
      t.inner.push_back({p->getString("name").value_or(""),
                         p->getString("dtype").value_or(""),
                         dimsOfShape(*p->getArray("shape"))});
    }
  }
  return t;
}

/// "input:N" / "output:N": the kind and N < limit.
bool parseRef(const std::string &ref, size_t limit, std::string &kind,
              int64_t &n) {
  size_t colon = ref.find(':');
  std::optional<uint64_t> k =
      colon == std::string::npos
          ? std::nullopt
          : te::dimexpr::parseUnsigned(std::string_view(ref).substr(colon + 1));
  if (!k || *k >= limit)
    return false;
  kind = ref.substr(0, colon);
  n = int64_t(*k);
  return true;
}

bool isFloatState(const te_module_tensor &t) {
  return t.roles[TE_MODULE_ROLE_STATE] && t.dtype == "float32";
}

/// Zeroes the padding of `entry`'s quantized results in `results` at
/// `dims`: one te_rt_zero_ranges call (one kernel launch on cuda) per
/// TE_RT_ZERO_RANGES_PER_LAUNCH ranges, their pointers on the stack.
bool zeroPadding(const te_module_entry &entry, te_rt_context *ctx,
                 void *const *results, const int64_t *dims) {
  te_module_entry::Padding padding = entry.padding(dims);
  if (!padding)
    return false;
  void *ptrs[TE_RT_ZERO_RANGES_PER_LAUNCH];
  int64_t bytes[TE_RT_ZERO_RANGES_PER_LAUNCH];
  int64_t n = 0;
  auto flush = [&] {
    bool ok = te_rt_zero_ranges(ctx, ptrs, bytes, n) == 0;
    n = 0;
    return ok ? true
              : (fail(std::string("zeroing the padding of its quantized "
                                  "results: ") +
                      te_rt_last_error()),
                 false);
  };
  for (const te::padding::Range &r : *padding) {
    void *base = results[r.result];
    if (!base)
      return fail(entry.results[size_t(r.result)].label +
                  " is NULL (a quantized result's buffer, whose padding is "
                  "zeroed after the entry)"),
             false;
    ptrs[n] = static_cast<char *>(base) + r.offset;
    bytes[n] = r.bytes;
    if (++n == TE_RT_ZERO_RANGES_PER_LAUNCH && !flush())
      return false;
  }
  return n == 0 || flush();
}

} // namespace

te_module_entry::Padding te_module_entry::padding(const int64_t *dims) const {
  {
    std::lock_guard<std::mutex> lock(paddingMutex);
    for (auto it = paddingCache.begin(); it != paddingCache.end(); ++it)
      if (std::equal(it->first.begin(), it->first.end(), dims)) {
        std::rotate(paddingCache.begin(), it, it + 1); // most recent first
        return paddingCache.front().second;
      }
  }
  // Not seen: the layouts at these dims (outside the lock; another thread
  // may compute the same, which is harmless).
  try {
    std::vector<int64_t> key(dims, dims + numDims);
    auto ranges = std::make_shared<std::vector<te::padding::Range>>();
    for (size_t i : quantizedResults) {
      const te_module_tensor &t = results[i];
      std::vector<int64_t> offsets, sizes;
      int64_t total;
      std::string error;
      if (!t.layout(key, &offsets, &sizes, total))
        return fail(t.label + ": " + te_rt_last_error()), nullptr;
      if (!te::padding::append(int64_t(i), offsets, sizes, total, *ranges,
                               error))
        return fail(t.label + ": " + error), nullptr;
    }
    std::lock_guard<std::mutex> lock(paddingMutex);
    paddingCache.insert(paddingCache.begin(), {std::move(key), ranges});
    if (paddingCache.size() > kPaddingCacheSize)
      paddingCache.pop_back();
    return ranges;
  } catch (const std::bad_alloc &) {
    return fail("out of host memory"), nullptr;
  }
}

extern "C" {

//===----------------------------------------------------------------------===//
// Modules
//===----------------------------------------------------------------------===//

int32_t te_module_open(const char *path, te_module **module) {
  if (!module)
    return fail("te_module_open: module is NULL");
  *module = nullptr;
  if (!path)
    return fail("te_module_open: path is NULL");
  const std::string library = path;
  namespace fs = std::filesystem;
  // dlopen searches the library path for names without a slash.
  std::error_code ec;
  fs::path absolute = fs::absolute(library, ec);
  // dlopen trusts the file's headers (a truncated library dies with SIGBUS
  // inside it): check the file first.
  std::string elfError;
  if (ec || !te::elf::checkLibrary(absolute.string(), elfError))
    return fail("cannot load '" + library +
                "': " + (ec ? ec.message() : elfError));
  auto m = std::make_unique<te_module>();
  m->path = library;
  m->handle = dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m->handle)
    return fail("cannot load '" + library + "': " + dlerror());
  struct Closer {
    te_module *m;
    ~Closer() {
      if (m && m->handle)
        dlclose(m->handle);
    }
  } closer{m.get()};
  auto infoFn =
      reinterpret_cast<const char *(*)()>(dlsym(m->handle, "te_module_info"));
  if (!infoFn)
    return fail("'" + library +
                "' is not a te-compile library (no te_module_info)");
  const char *infoText = infoFn();
  if (!infoText)
    return fail("'" + library +
                "': malformed module info: te_module_info() returned NULL");
  m->infoText = infoText;
  std::string error;
  std::optional<Value> info = te::json::parse(m->infoText, error);
  if (!info)
    return fail("'" + library + "': malformed module info: " + error);
  if (!te::moduleinfo::validate(*info, library, error))
    return fail(error);
  m->info = std::move(*info);
  for (const Value &v : *m->info.getAsObject()->getArray("entries")) {
    const Object *o = v.getAsObject();
    auto e = std::make_unique<te_module_entry>();
    e->module = m.get();
    e->info = o;
    e->name = o->getString("name").value_or("");
    e->symbol = o->getString("symbol").value_or("");
    const Value *arena = o->get("arena_bytes");
    e->arenaText = arena->str();
    e->arena = arena->getAsInteger();
    e->numDims = o->getArray("dims")->size();
    e->fn = e->symbol.empty() ? nullptr
                              : reinterpret_cast<EntryFn>(
                                    dlsym(m->handle, e->symbol.c_str()));
    if (!e->fn)
      return fail("'" + library + "' lacks the entry symbol " + e->symbol);
    if (std::optional<std::string> arenaSymbol =
            o->getString("arena_symbol")) {
      const std::string &sym = *arenaSymbol;
      e->arenaFn = reinterpret_cast<int64_t (*)(const int64_t *)>(
          dlsym(m->handle, sym.c_str()));
      if (!e->arenaFn)
        return fail("'" + library + "' lacks the arena symbol " + sym);
    }
    const Array *args = o->getArray("args"), *results = o->getArray("results");
    for (size_t i = 0; i < args->size(); ++i)
      e->args.push_back(
          makeTensor(e.get(), (*args)[i].getAsObject(), true, i));
    for (size_t i = 0; i < results->size(); ++i) {
      e->results.push_back(
          makeTensor(e.get(), (*results)[i].getAsObject(), false, i));
      if (e->results.back().dtype == "qtensor")
        e->quantizedResults.push_back(i);
    }
    m->byName[e->name] = e.get();
    m->entries.push_back(std::move(e));
  }
  closer.m = nullptr;
  *module = m.release();
  return 0;
}

void te_module_close(te_module *module) {
  if (!module)
    return;
  if (module->handle)
    dlclose(module->handle);
  delete module;
}

const char *te_module_path(const te_module *module) {
  return module ? module->path.c_str() : nullptr;
}

const char *te_module_info_text(const te_module *module) {
  return module ? module->infoText.c_str() : nullptr;
}

const char *te_module_get(const te_module *module, const char *key) {
  if (!module || !key)
    return nullptr;
  const Value *v = module->info.getAsObject()->get(key);
  return v && v->kind == Value::String ? v->string.c_str() : nullptr;
}

int64_t te_module_num_entries(const te_module *module) {
  return module ? int64_t(module->entries.size()) : 0;
}

const te_module_entry *te_module_entry_at(const te_module *module,
                                          int64_t index) {
  if (!module || index < 0 || index >= int64_t(module->entries.size()))
    return nullptr;
  return module->entries[size_t(index)].get();
}

const te_module_entry *te_module_find_entry(const te_module *module,
                                            const char *name) {
  if (!module || !name)
    return fail("te_module_find_entry: module or name is NULL"), nullptr;
  auto it = module->byName.find(name);
  if (it == module->byName.end())
    return fail("'" + module->path + "': no entry '" + name + "'"), nullptr;
  return it->second;
}

//===----------------------------------------------------------------------===//
// Entries
//===----------------------------------------------------------------------===//

const char *te_module_entry_name(const te_module_entry *entry) {
  return entry ? entry->name.c_str() : nullptr;
}

const char *te_module_entry_symbol(const te_module_entry *entry) {
  return entry ? entry->symbol.c_str() : nullptr;
}

const char *te_module_entry_get(const te_module_entry *entry,
                                const char *key) {
  if (!entry || !key)
    return nullptr;
  const Value *v = entry->info->get(key);
  return v && v->kind == Value::String ? v->string.c_str() : nullptr;
}

int64_t te_module_entry_num_args(const te_module_entry *entry) {
  return entry ? int64_t(entry->args.size()) : 0;
}

int64_t te_module_entry_num_results(const te_module_entry *entry) {
  return entry ? int64_t(entry->results.size()) : 0;
}

int64_t te_module_entry_num_dims(const te_module_entry *entry) {
  return entry ? int64_t(entry->numDims) : 0;
}

const te_module_tensor *te_module_entry_arg(const te_module_entry *entry,
                                            int64_t index) {
  if (!entry || index < 0 || index >= int64_t(entry->args.size()))
    return nullptr;
  return &entry->args[size_t(index)];
}

const te_module_tensor *te_module_entry_result(const te_module_entry *entry,
                                               int64_t index) {
  if (!entry || index < 0 || index >= int64_t(entry->results.size()))
    return nullptr;
  return &entry->results[size_t(index)];
}

const char *te_module_entry_arena_text(const te_module_entry *entry) {
  return entry ? entry->arenaText.c_str() : nullptr;
}

int32_t te_module_entry_arena_bytes(const te_module_entry *entry,
                                    const int64_t *dims, int64_t *bytes) {
  if (!entry || !bytes)
    return fail("te_module_entry_arena_bytes: entry or bytes is NULL");
  if (entry->arena) {
    *bytes = *entry->arena;
    return 0;
  }
  // "dynamic": the library's te_arena_bytes_<fn> at the dims (older
  // libraries have none: -1, the entry sizes its own arena).
  if (!entry->arenaFn) {
    *bytes = -1;
    return 0;
  }
  if (entry->numDims && !dims)
    return fail("te_module_entry_arena_bytes: " + entry->name +
                " has dynamic dims and dims is NULL");
  int64_t n = entry->arenaFn(dims);
  if (n < 0)
    return fail("te_module_entry_arena_bytes: " + entry->name +
                ": a dim or an element count is out of range at these dims");
  *bytes = n;
  return 0;
}

int64_t te_module_entry_state_result(const te_module_entry *entry,
                                     int64_t arg_index) {
  const te_module_tensor *a = te_module_entry_arg(entry, arg_index);
  if (!a || !a->roles[TE_MODULE_ROLE_STATE])
    return -1;
  for (size_t i = 0; i < entry->results.size(); ++i)
    if (entry->results[i].roles[TE_MODULE_ROLE_STATE] ==
        a->roles[TE_MODULE_ROLE_STATE])
      return int64_t(i);
  return -1;
}

int32_t te_module_bind_dims(const te_module_entry *entry,
                            const char *const *dtypes,
                            const int64_t *const *shapes, const int64_t *ranks,
                            int64_t *dims) {
  if (!entry)
    return fail("te_module_bind_dims: entry is NULL");
  const std::string &name = entry->name;
  if ((!entry->args.empty() && (!shapes || !ranks)) ||
      (entry->numDims && !dims))
    return fail(name + ": te_module_bind_dims: shapes, ranks or dims is NULL");
  std::vector<int64_t> bound(entry->numDims, -1);
  struct Deferred {
    size_t arg, dim;
    int64_t got;
  };
  std::vector<Deferred> deferred;
  for (size_t i = 0; i < entry->args.size(); ++i) {
    const te_module_tensor &a = entry->args[i];
    if (dtypes && dtypes[i] && a.dtype != dtypes[i])
      return fail(name + ": " + a.label + " must be " + a.dtype + ", got " +
                  dtypes[i]);
    if (ranks[i] < 0)
      continue; // raw bytes (a quantized tensor from a file): no shape
    std::vector<int64_t> got(shapes[i], shapes[i] + ranks[i]);
    if (got.size() != a.dims.size())
      return fail(name + ": " + a.label + " must have rank " +
                  str(a.dims.size()) + ", got " + shapeString(got));
    for (size_t d = 0; d < a.dims.size(); ++d) {
      const std::string &sym = a.dims[d].text;
      if (std::optional<int64_t> n = a.dims[d].value) {
        if (*n != got[d])
          return fail(name + ": " + a.label + " dim " + str(d) + " must be " +
                      str(*n) + ", got " + shapeString(got));
        continue;
      }
      std::optional<size_t> k = te::dimexpr::symbolIndex(sym);
      if (!k) {
        deferred.push_back({i, d, got[d]}); // an expression: checked below
        continue;
      }
      if (*k >= bound.size())
        return fail(name + ": malformed dim symbol '" + sym + "'");
      if (bound[*k] >= 0 && bound[*k] != got[d])
        return fail(name + ": " + a.label + " dim " + str(d) + " is " +
                    str(got[d]) + " but " + sym + " = " + str(bound[*k]) +
                    " from an earlier argument (these dims must be equal)");
      bound[*k] = got[d];
    }
  }
  for (size_t k = 0; k < bound.size(); ++k)
    if (bound[k] < 0)
      return fail(name + ": the dim symbol d" + str(int64_t(k)) +
                  " is not bound: no argument with it was given as a tensor "
                  "(quantized tensors read from files carry no shape)");
  // Argument dims that are expressions of the others (`2*d0`) must have
  // their value.
  for (const Deferred &x : deferred) {
    const te_module_tensor &a = entry->args[x.arg];
    const std::string &expr = a.dims[x.dim].text;
    int64_t want = 0;
    if (te_module_eval_dim(expr.c_str(), bound.data(),
                           int64_t(bound.size()), &want, nullptr) != 0)
      return fail(name + ": " + a.label + " dim " + str(x.dim) + " (" +
                  expr + "): " + te_rt_last_error());
    if (want != x.got)
      return fail(name + ": " + a.label + " dim " + str(x.dim) + " must be " +
                  expr + " = " + str(want) + ", got " + str(x.got));
  }
  std::copy(bound.begin(), bound.end(), dims);
  return 0;
}

int32_t te_module_run(const te_module_entry *entry, te_rt_context *ctx,
                      void *const *args, void *const *results,
                      const int64_t *dims) {
  if (!entry)
    return fail("te_module_run: entry is NULL");
  const std::string &name = entry->name;
  if (!ctx)
    return fail(name + " failed: the context is NULL");
  if (!args && !entry->args.empty())
    return fail(name + " failed: args is NULL (" + str(entry->args.size()) +
                " arguments)");
  if (!results && !entry->results.empty())
    return fail(name + " failed: results is NULL (" +
                str(entry->results.size()) + " results)");
  if (!dims && entry->numDims)
    return fail(name + " failed: dims is NULL (" + str(entry->numDims) +
                " dim symbols)");
  if (entry->fn(ctx, args, results, dims) != 0)
    return fail(name + " failed: " + te_rt_last_error());
  // After the entry: it may copy into a result's padding (a prefix view of
  // its own buffer, padding included), and its checks of the dims come
  // first.
  if (!entry->quantizedResults.empty() &&
      !zeroPadding(*entry, ctx, results, dims))
    return fail(name + " failed: " + te_rt_last_error());
  return 0;
}

//===----------------------------------------------------------------------===//
// Arguments and results
//===----------------------------------------------------------------------===//

const char *te_module_tensor_dtype(const te_module_tensor *tensor) {
  return tensor ? tensor->dtype.c_str() : nullptr;
}

const char *te_module_tensor_label(const te_module_tensor *tensor) {
  return tensor ? tensor->label.c_str() : nullptr;
}

int64_t te_module_tensor_rank(const te_module_tensor *tensor) {
  return tensor ? int64_t(tensor->dims.size()) : 0;
}

const char *te_module_tensor_dim(const te_module_tensor *tensor, int64_t d) {
  if (!tensor || d < 0 || d >= int64_t(tensor->dims.size()))
    return nullptr;
  return tensor->dims[size_t(d)].text.c_str();
}

const char *te_module_tensor_shape_text(const te_module_tensor *tensor) {
  return tensor ? tensor->shapeText.c_str() : nullptr;
}

const char *te_module_tensor_role(const te_module_tensor *tensor,
                                  int32_t role) {
  if (!tensor || role < 0 || role > TE_MODULE_ROLE_ALIAS ||
      !tensor->roles[role])
    return nullptr;
  return tensor->roles[role]->c_str();
}

const char *te_module_tensor_get(const te_module_tensor *tensor,
                                 const char *key) {
  if (!tensor || !key)
    return nullptr;
  const Value *v = tensor->info->get(key);
  return v && v->kind == Value::String ? v->string.c_str() : nullptr;
}

int64_t te_module_tensor_alignment(const te_module_tensor *tensor) {
  return tensor ? tensor->alignment : 0;
}

int64_t te_module_tensor_num_inner(const te_module_tensor *tensor) {
  return tensor ? int64_t(tensor->inner.size()) : 0;
}

const char *te_module_tensor_inner_name(const te_module_tensor *tensor,
                                        int64_t index) {
  if (!tensor || index < 0 || index >= int64_t(tensor->inner.size()))
    return nullptr;
  return tensor->inner[size_t(index)].name.c_str();
}

const char *te_module_tensor_inner_dtype(const te_module_tensor *tensor,
                                         int64_t index) {
  if (!tensor || index < 0 || index >= int64_t(tensor->inner.size()))
    return nullptr;
  return tensor->inner[size_t(index)].dtype.c_str();
}

int64_t te_module_tensor_inner_rank(const te_module_tensor *tensor,
                                    int64_t index) {
  if (!tensor || index < 0 || index >= int64_t(tensor->inner.size()))
    return 0;
  return int64_t(tensor->inner[size_t(index)].dims.size());
}

const char *te_module_tensor_inner_dim(const te_module_tensor *tensor,
                                       int64_t index, int64_t d) {
  if (!tensor || index < 0 || index >= int64_t(tensor->inner.size()))
    return nullptr;
  const auto &dims = tensor->inner[size_t(index)].dims;
  return d < 0 || d >= int64_t(dims.size()) ? nullptr
                                            : dims[size_t(d)].text.c_str();
}

int32_t te_module_tensor_inner_layout(const te_module_tensor *tensor,
                                      int64_t index, const int64_t *dims,
                                      int64_t *offset, int64_t *bytes) {
  if (!tensor || index < 0 || index >= int64_t(tensor->inner.size()))
    return fail("te_module_tensor_inner_layout: no inner tensor " +
                str(index) + (tensor ? " of " + tensor->label : ""));
  std::vector<int64_t> offsets, sizes;
  int64_t total;
  if (!tensor->layout(tensor->dimsOf(dims), &offsets, &sizes, total))
    return 1;
  if (offset)
    *offset = offsets[size_t(index)];
  if (bytes)
    *bytes = sizes[size_t(index)];
  return 0;
}

int32_t te_module_tensor_shape(const te_module_tensor *tensor,
                               const int64_t *dims, int64_t *shape) {
  if (!tensor || (!shape && !tensor->dims.empty()))
    return fail("te_module_tensor_shape: tensor or shape is NULL");
  std::vector<int64_t> out;
  if (!evaluateShape(tensor->dims, tensor->dimsOf(dims), out))
    return 1;
  std::copy(out.begin(), out.end(), shape);
  return 0;
}

int32_t te_module_tensor_bytes(const te_module_tensor *tensor,
                               const int64_t *dims, int64_t *bytes) {
  if (!tensor || !bytes)
    return fail("te_module_tensor_bytes: tensor or bytes is NULL");
  return tensor->layout(tensor->dimsOf(dims), nullptr, nullptr, *bytes) ? 0
                                                                        : 1;
}

int32_t te_module_tensor_initial_state(const te_module_tensor *tensor,
                                       float *value) {
  if (!tensor || !value)
    return fail("te_module_tensor_initial_state: tensor or value is NULL");
  if (!isFloatState(*tensor))
    return fail(tensor->entry->name + ": " + tensor->label +
                " is not float32 recipe state (te.state)");
  // TE's initial recipe state (§4.1): amax histories zero, scales one.
  *value = tensor->roles[TE_MODULE_ROLE_STATE]->find("scales") !=
                   std::string::npos
               ? 1.0f
               : 0.0f;
  return 0;
}

int32_t te_module_tensor_alloc(const te_module_tensor *tensor,
                               te_rt_context *ctx, const int64_t *dims,
                               void **ptr, int64_t *bytes) {
  if (!tensor || !ptr)
    return fail("te_module_tensor_alloc: tensor or ptr is NULL");
  *ptr = nullptr;
  int64_t n;
  if (te_module_tensor_bytes(tensor, dims, &n) != 0)
    return 1;
  void *p = te_rt_alloc(ctx, n);
  if (!p)
    return fail(tensor->entry->name + ": " + tensor->label + ": " +
                te_rt_last_error());
  *ptr = p;
  if (bytes)
    *bytes = n;
  return 0;
}

int32_t te_module_eval_dim(const char *expr, const int64_t *dims,
                           int64_t num_dims, int64_t *value,
                           int64_t *inexact_divisor) {
  if (inexact_divisor)
    *inexact_divisor = 0;
  if (!expr || !value || num_dims < 0 || (num_dims && !dims))
    return fail("te_module_eval_dim: expr, value or dims is NULL");
  std::vector<int64_t> d(dims, dims + num_dims);
  return evaluateDim(expr, d, *value, inexact_divisor) ? 0 : 1;
}

//===----------------------------------------------------------------------===//
// Training steps
//===----------------------------------------------------------------------===//

int32_t te_module_step_create(const te_module *module, const char *name,
                              te_module_step **step) {
  if (!module || !step)
    return fail("te_module_step_create: module or step is NULL");
  *step = nullptr;
  auto s = std::make_unique<te_module_step>();
  if (name) {
    auto fwd = module->byName.find(std::string(name) + "_fwd");
    auto bwd = module->byName.find(std::string(name) + "_bwd");
    if (fwd == module->byName.end() || bwd == module->byName.end())
      return fail(std::string("the library has no ") + name + "_fwd/_bwd " +
                  "(compile with te-compile --train)");
    s->fwd = fwd->second;
    s->bwd = bwd->second;
  } else {
    for (const auto &e : module->entries) {
      const char *of = te_module_entry_get(e.get(), "te.forward_of");
      if (!of)
        continue;
      if (s->fwd)
        return fail("'" + module->path +
                    "' has several training steps; name one");
      s->fwd = e.get();
      for (const auto &b : module->entries)
        if (const char *bof = te_module_entry_get(b.get(), "te.backward_of");
            bof && std::strcmp(bof, of) == 0)
          s->bwd = b.get();
      if (!s->bwd)
        return fail("'" + module->path + "': " + e->name +
                    " has no backward (te.backward_of '" + of + "')");
    }
    if (!s->fwd)
      return fail("'" + module->path +
                  "' has no training step (compile with te-compile --train)");
  }
  const te_module_entry &fwd = *s->fwd, &bwd = *s->bwd;
  std::map<std::string, int64_t> savedResult;
  for (size_t i = 0; i < fwd.results.size(); ++i)
    if (const auto &saved = fwd.results[i].roles[TE_MODULE_ROLE_SAVED])
      savedResult[*saved] = int64_t(i);
  for (const te_module_tensor &a : bwd.args) {
    std::string kind;
    int64_t k;
    if (const auto &alias = a.roles[TE_MODULE_ROLE_ALIAS]) {
      size_t limit = alias->rfind("input:", 0) == 0 ? fwd.args.size()
                                                    : fwd.results.size();
      if (!parseRef(*alias, limit, kind, k))
        return fail("malformed reference '" + *alias + "' in " + bwd.name);
      s->feed.push_back(
          {kind == "input" ? TE_MODULE_FEED_INPUT : TE_MODULE_FEED_RESULT, k});
    } else if (const auto &saved = a.roles[TE_MODULE_ROLE_SAVED]) {
      auto it = savedResult.find(*saved);
      if (it == savedResult.end())
        return fail(fwd.name + " does not return the saved tensor '" + *saved +
                    "'");
      s->feed.push_back({TE_MODULE_FEED_RESULT, it->second});
    } else if (const auto &of = a.roles[TE_MODULE_ROLE_GRAD_OF]) {
      if (!parseRef(*of, fwd.results.size(), kind, k))
        return fail("malformed reference '" + *of + "' in " + bwd.name);
      s->feed.push_back({TE_MODULE_FEED_GRAD, k});
    } else if (isFloatState(a)) {
      // The backward's recipe state: TE's initial value, or carried.
      s->feed.push_back({TE_MODULE_FEED_STATE, -1});
    } else {
      return fail("cannot feed " + a.label);
    }
  }
  *step = s.release();
  return 0;
}

void te_module_step_destroy(te_module_step *step) { delete step; }

const te_module_entry *te_module_step_fwd(const te_module_step *step) {
  return step ? step->fwd : nullptr;
}

const te_module_entry *te_module_step_bwd(const te_module_step *step) {
  return step ? step->bwd : nullptr;
}

int32_t te_module_step_feed(const te_module_step *step, int64_t bwd_arg,
                            int32_t *kind, int64_t *index) {
  if (!step || !kind || !index)
    return fail("te_module_step_feed: step, kind or index is NULL");
  if (bwd_arg < 0 || bwd_arg >= int64_t(step->feed.size()))
    return fail(step->bwd->name + " has no argument " + str(bwd_arg));
  *kind = step->feed[size_t(bwd_arg)].first;
  *index = step->feed[size_t(bwd_arg)].second;
  return 0;
}

int32_t te_module_step_bwd_args(const te_module_step *step,
                                void *const *fwd_args,
                                void *const *fwd_results, void *const *grads,
                                void **bwd_args) {
  if (!step || !bwd_args)
    return fail("te_module_step_bwd_args: step or bwd_args is NULL");
  for (size_t i = 0; i < step->feed.size(); ++i) {
    auto [kind, k] = step->feed[i];
    void *const *from = kind == TE_MODULE_FEED_INPUT    ? fwd_args
                        : kind == TE_MODULE_FEED_RESULT ? fwd_results
                        : kind == TE_MODULE_FEED_GRAD   ? grads
                                                        : nullptr;
    if (kind == TE_MODULE_FEED_STATE)
      continue;
    if (!from || !from[k])
      return fail(step->bwd->name + ": no buffer for " +
                  step->bwd->args[i].label +
                  (kind == TE_MODULE_FEED_GRAD
                       ? " (the gradient of forward result " + str(k) + ")"
                       : std::string(" (forward ") +
                             (kind == TE_MODULE_FEED_INPUT ? "argument "
                                                           : "result ") +
                             str(k) + ")"));
    bwd_args[i] = from[k];
  }
  return 0;
}

int32_t te_module_step_bwd_dims(const te_module_step *step,
                                const int64_t *fwd_dims, int64_t *bwd_dims) {
  if (!step || (!bwd_dims && step->bwd->numDims) ||
      (!fwd_dims && step->fwd->numDims))
    return fail("te_module_step_bwd_dims: step or dims is NULL");
  const te_module_entry &fwd = *step->fwd, &bwd = *step->bwd;
  const Array *dims = bwd.info->getArray("dims");
  for (size_t k = 0; k < dims->size(); ++k) {
    const Object *d = (*dims)[k].getAsObject();
    size_t arg = size_t(*d->getInteger("arg")), dim = size_t(*d->getInteger("dim"));
    auto [kind, i] = step->feed[arg];
    const te_module_tensor *from =
        kind == TE_MODULE_FEED_INPUT ? &fwd.args[size_t(i)]
        : kind == TE_MODULE_FEED_STATE ? &bwd.args[arg]
                                       : &fwd.results[size_t(i)];
    std::vector<int64_t> shape;
    if (!evaluateShape(from->dims,
                       kind == TE_MODULE_FEED_STATE ? std::vector<int64_t>{}
                                                    : from->dimsOf(fwd_dims),
                       shape))
      return 1;
    if (dim >= shape.size())
      return fail(bwd.name + ": " + bwd.args[arg].label + " has rank " +
                  str(bwd.args[arg].dims.size()) + " but its source " +
                  from->entry->name + " " + from->label + " has rank " +
                  str(shape.size()));
    bwd_dims[k] = shape[dim];
  }
  return 0;
}

int32_t te_module_step_run(const te_module_step *step, te_rt_context *ctx,
                           void *const *fwd_args, void *const *fwd_results,
                           void *const *grads, void **bwd_args,
                           void *const *bwd_results, const int64_t *fwd_dims) {
  if (!step)
    return fail("te_module_step_run: step is NULL");
  std::vector<int64_t> bwdDims(step->bwd->numDims);
  if (te_module_step_bwd_args(step, fwd_args, fwd_results, grads, bwd_args) ||
      te_module_step_bwd_dims(step, fwd_dims, bwdDims.data()) ||
      te_module_run(step->fwd, ctx, fwd_args, fwd_results, fwd_dims) ||
      te_module_run(step->bwd, ctx, bwd_args, bwd_results, bwdDims.data()))
    return 1;
  return 0;
}

} // extern "C"
