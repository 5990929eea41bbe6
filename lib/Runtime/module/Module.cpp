//===- Module.cpp - te-mlir module client: loading --------------*- C++ -*-===//
//
// The client of te-compile'd libraries declared in te/Runtime/TEModule.h:
// the library file checked before dlopen (Elf.h), te_module_info() parsed
// (Json.h) and validated (ModuleInfo.h) once, every shape evaluated with
// overflow checks (DimExpr.h), and entries and training steps run on the
// caller's buffers (ModuleRun.cpp). This half loads a library and answers
// the questions about its entries and their arguments and results; the
// objects behind the handles are in ModuleImpl.h. Errors go to
// te_rt_last_error().
//
//===----------------------------------------------------------------------===//

#include "ModuleImpl.h"

#include "DimExpr.h"
#include "Elf.h"
#include "Json.h"
#include "ModuleInfo.h"
#include "RuntimeInternal.h"
#include "te/Runtime/ModuleInfoDigest.h"

#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <iterator>
#include <link.h>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

using te::json::Array;
using te::json::Object;
using te::json::Value;
using namespace te::module;

//===----------------------------------------------------------------------===//
// Helpers shared with ModuleRun.cpp (ModuleImpl.h)
//===----------------------------------------------------------------------===//

namespace te::module {

int32_t fail(const std::string &message) {
  te_rt_internal_set_error(message);
  return 1;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

bool evaluateDim(const std::string &expr, const std::vector<int64_t> &dims,
                 int64_t &out, int64_t *inexactDivisor) {
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

} // namespace te::module

namespace {

/// The keys of the roles, in TE_MODULE_ROLE_* order.
const char *const kRoleKeys[] = {
    "te.saved", "te.grad_of",      "te.state",      "te.cached_weight",
    "te.alias", "te.main_grad_of", "te.wgrad_stash"};
constexpr int kNumRoles = int(std::size(kRoleKeys));
static_assert(kNumRoles == TE_MODULE_ROLE_WGRAD_STASH + 1 &&
                  kNumRoles == std::extent_v<decltype(te_module_tensor::roles)>,
              "one key per TE_MODULE_ROLE_*");
/// Whether an argument's or result's label names role `r` (not te.alias).
constexpr bool labelRole(int r) { return r != TE_MODULE_ROLE_ALIAS; }

std::vector<Dim> dimsOfShape(const Array &shape) {
  std::vector<Dim> out;
  for (const Value &d : shape)
    out.push_back(d.getAsInteger()
                      ? Dim{std::to_string(*d.getAsInteger()), d.getAsInteger()}
                      : Dim{d.getAsString().value_or(""), std::nullopt});
  return out;
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
  for (int r = 0; r < kNumRoles; ++r) {
    t.roles[r] = o->getString(kRoleKeys[r]);
    if (labelRole(r) && t.roles[r])
      t.label += std::string(" (") + kRoleKeys[r] + "=" + *t.roles[r] + ")";
  }
  if (const Value *d = o->get("te.donatable"))
    t.donatable = d->boolean;
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

} // namespace

namespace te::module {
bool checkDonated(const te_module_entry *entry, const uint8_t *donated,
                  const char *what) {
  if (!donated)
    return true;
  for (size_t i = 0; i < entry->args.size(); ++i)
    if (donated[i] && !entry->args[i].donatable)
      return fail(std::string(what) + ": " + entry->name + " " +
                  entry->args[i].label +
                  " is not donatable (te_module_tensor_donatable)"),
             false;
  return true;
}

/// *bytes := what the library's arena function (te_arena_bytes[_donated]_<fn>)
/// reports, through `call`, after the dims check; its -1 (a dim or an element
/// count out of range) is an error of `what`.
template <typename Call>
static int32_t arenaFromLibrary(const te_module_entry *entry, const char *what,
                                const int64_t *dims, int64_t *bytes,
                                Call call) {
  if (entry->numDims && !dims)
    return fail(std::string(what) + ": " + entry->name +
                " has dynamic dims and dims is NULL");
  int64_t n = call();
  if (n < 0)
    return fail(std::string(what) + ": " + entry->name +
                ": a dim or an element count is out of range at these dims");
  *bytes = n;
  return 0;
}
} // namespace te::module

extern "C" {

//===----------------------------------------------------------------------===//
// Modules
//===----------------------------------------------------------------------===//

namespace {

/// The executable address ranges of the library behind `handle` (its PT_LOAD
/// segments with PF_X, as the loader mapped them), empty if the loader does
/// not list it.
std::vector<std::pair<uintptr_t, uintptr_t>> codeRanges(void *handle) {
  struct Search {
    const link_map *map = nullptr;
    std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  } search;
  link_map *map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map)
    return {};
  search.map = map;
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) -> int {
        auto *s = static_cast<Search *>(data);
        if (info->dlpi_addr != s->map->l_addr || !info->dlpi_name ||
            !s->map->l_name || std::strcmp(info->dlpi_name, s->map->l_name))
          return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
            s->ranges.push_back({info->dlpi_addr + ph.p_vaddr,
                                 info->dlpi_addr + ph.p_vaddr + ph.p_memsz});
        }
        return 1;
      },
      &search);
  return search.ranges;
}

std::string outsideCode(const std::string &library, const std::string &sym) {
  return "'" + library + "': its symbol " + sym +
         " points outside the library's code (a damaged symbol table?); "
         "compile it again";
}

} // namespace

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
  std::string badSymbol;
  // Every function the runtime calls must lie in the library's own code: a
  // damaged symbol table (one byte of a symbol's value) would otherwise send
  // the call anywhere (a segfault in the caller's process).
  const auto code = codeRanges(m->handle);
  auto lookup = [&](const std::string &name) -> void * {
    void *p = dlsym(m->handle, name.c_str());
    if (!p || code.empty()) // (a loader that lists no segments: unchecked)
      return p;
    auto at = reinterpret_cast<uintptr_t>(p);
    for (const auto &[begin, end] : code)
      if (at >= begin && at < end)
        return p;
    badSymbol = name;
    return nullptr;
  };
  auto infoFn =
      reinterpret_cast<const char *(*)()>(lookup("te_module_info"));
  if (!badSymbol.empty())
    return fail(outsideCode(library, badSymbol));
  if (!infoFn)
    return fail("'" + library +
                "' is not a te-compile library (no te_module_info)");
  const char *infoText = infoFn();
  if (!infoText)
    return fail("'" + library +
                "': malformed module info: te_module_info() returned NULL");
  m->infoText = infoText;
  // te-compile records the info's digest beside it (te_module_info_digest); a
  // mismatch means the text was edited or damaged after compilation. Hand-made
  // libraries (tests, fixtures) may have no digest.
  auto digestFn =
      reinterpret_cast<uint64_t (*)()>(lookup("te_module_info_digest"));
  if (!badSymbol.empty())
    return fail(outsideCode(library, badSymbol));
  if (digestFn) {
    uint64_t want = digestFn(),
             got = te_module_info_digest_of(m->infoText.data(), m->infoText.size());
    if (want != got)
      return fail("'" + library +
                  "': its module info does not match the digest te-compile "
                  "recorded (edited or damaged after compilation: digest " +
                  te::moduleinfo::hex(got) + ", recorded " +
                  te::moduleinfo::hex(want) + "); compile it again");
  }
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
    if (const Value *donated = o->get("arena_bytes_donated"))
      e->arenaDonatedText = donated->str();
    e->arena = arena->getAsInteger();
    e->numDims = o->getArray("dims")->size();
    e->fn = e->symbol.empty() ? nullptr
                              : reinterpret_cast<EntryFn>(lookup(e->symbol));
    if (!badSymbol.empty())
      return fail(outsideCode(library, badSymbol));
    if (!e->fn)
      return fail("'" + library + "' lacks the entry symbol " + e->symbol);
    if (std::optional<std::string> arenaSymbol =
            o->getString("arena_symbol")) {
      const std::string &sym = *arenaSymbol;
      e->arenaFn =
          reinterpret_cast<int64_t (*)(const int64_t *)>(lookup(sym));
      if (!badSymbol.empty())
        return fail(outsideCode(library, badSymbol));
      if (!e->arenaFn)
        return fail("'" + library + "' lacks the arena symbol " + sym);
    }
    if (std::optional<std::string> sym = o->getString("arena_donated_symbol")) {
      e->arenaDonatedFn =
          reinterpret_cast<int64_t (*)(const int64_t *, const uint8_t *)>(
              lookup(*sym));
      if (!badSymbol.empty())
        return fail(outsideCode(library, badSymbol));
      if (!e->arenaDonatedFn)
        return fail("'" + library + "' lacks the arena symbol " + *sym);
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
    // (Checked by the module info's validation: distinct result indices.)
    if (const Array *written = o->getArray("padding_written")) {
      e->paddingWritten.assign(results->size(), false);
      for (const Value &r : *written)
        e->paddingWritten[size_t(*r.getAsInteger())] = true;
    } else {
      e->paddingWritten.assign(results->size(), true);
    }
    // (Checked too: pairs of a te.state result and its argument.)
    e->stateInPlace.assign(results->size(), -1);
    if (const Array *pairs = o->getArray("state_in_place"))
      for (const Value &p : *pairs) {
        const Array &pair = *p.getAsArray();
        e->stateInPlace[size_t(*pair[0].getAsInteger())] =
            *pair[1].getAsInteger();
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
  return te::module::arenaFromLibrary(entry, "te_module_entry_arena_bytes",
                                      dims, bytes,
                                      [&] { return entry->arenaFn(dims); });
}


const char *te_module_entry_arena_donated_text(const te_module_entry *entry) {
  return entry && !entry->arenaDonatedText.empty()
             ? entry->arenaDonatedText.c_str()
             : nullptr;
}

int32_t te_module_entry_arena_bytes_donated(const te_module_entry *entry,
                                            const int64_t *dims,
                                            const uint8_t *donated,
                                            int64_t *bytes) {
  const char *what = "te_module_entry_arena_bytes_donated";
  if (!entry || !bytes)
    return fail(std::string(what) + ": entry or bytes is NULL");
  if (!te::module::checkDonated(entry, donated, what))
    return 1;
  if (!donated || !entry->arenaDonatedFn)
    return te_module_entry_arena_bytes(entry, dims, bytes);
  static const int64_t none = 0;
  return te::module::arenaFromLibrary(entry, what, dims, bytes, [&] {
    return entry->arenaDonatedFn(entry->numDims ? dims : &none, donated);
  });
}

int32_t te_module_tensor_donatable(const te_module_tensor *tensor) {
  return tensor && tensor->donatable ? 1 : 0;
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

int32_t te_module_entry_result_padding_written(const te_module_entry *entry,
                                               int64_t index) {
  if (!entry || index < 0 || index >= int64_t(entry->results.size()))
    return -1;
  return entry->paddingWritten[size_t(index)] ? 1 : 0;
}

int64_t te_module_entry_result_state_in_place(const te_module_entry *entry,
                                              int64_t index) {
  if (!entry || index < 0 || index >= int64_t(entry->results.size()))
    return -1;
  return entry->stateInPlace[size_t(index)];
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
  if (!tensor || role < 0 || role >= kNumRoles || !tensor->roles[role])
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

} // extern "C"
