//===- ModuleInfo.cpp - checks of a library's te_module_info() --*- C++ -*-===//

#include "ModuleInfo.h"
#include "DimExpr.h"

#include <set>
#include <vector>

namespace te::moduleinfo {

using json::Array;
using json::Object;
using json::Value;

bool isTensorDtype(const std::string &dtype) {
  return dtype == "float32" || dtype == "bfloat16" || dtype == "float16";
}

namespace {

/// The check of one module info; each failure records "<path>: <what>".
class Validator {
public:
  Validator(const std::string &library, std::string &error)
      : library(library), error(error) {}

  bool module(const Value &root) {
    const Object *m = root.getAsObject();
    if (!m)
      return fail("", "the module info is not a JSON object");
    for (const char *key : {"target", "arch", "source", "format"})
      if (const Value *v = m->get(key); v && !v->getAsString())
        return fail(key, "must be a string");
    const Array *entries = m->getArray("entries");
    if (!entries)
      return fail("entries", "missing, or not an array");
    std::set<std::string> names;
    for (size_t i = 0; i < entries->size(); ++i) {
      std::string path = "entries[" + std::to_string(i) + "]";
      if (!entry((*entries)[i], path, names))
        return false;
    }
    return true;
  }

private:
  bool fail(const std::string &path, const std::string &what) {
    error = "'" + library + "': malformed module info: " +
            (path.empty() ? what : path + ": " + what);
    return false;
  }
  /// A non-negative integer, or the reason it is not one.
  bool count(const Value *v, const std::string &path, int64_t &out) {
    std::optional<int64_t> n = v ? v->getAsInteger() : std::nullopt;
    if (!v)
      return fail(path, "missing");
    if (!n || *n < 0)
      return fail(path, v->str() + " is not a non-negative integer");
    out = *n;
    return true;
  }
  /// Whether index i (a count) is one of the n arguments (`isArg`) or
  /// results, else the failure "<i> is not a result (<n> results)" at path.
  bool inRange(int64_t i, size_t n, bool isArg, const std::string &path) {
    return i < int64_t(n) ||
           fail(path,
                std::to_string(i) +
                    (isArg ? " is not an argument (" : " is not a result (") +
                    std::to_string(n) + (isArg ? " arguments)" : " results)"));
  }
  /// An arena's bytes: a non-negative integer or "dynamic".
  bool arenaBytes(const Object *e, const std::string &key,
                  const std::string &path, bool required) {
    const Value *a = e->get(key);
    if (!a)
      return !required || fail(path + "." + key, "missing");
    int64_t unused;
    if ((a->getAsString() && *a->getAsString() == "dynamic") ||
        count(a, path + "." + key, unused))
      return true;
    return fail(path + "." + key,
                a->str() + " is neither a non-negative integer nor \"dynamic\"");
  }
  /// An optional symbol name: a non-empty string.
  bool symbolName(const Object *e, const std::string &key,
                  const std::string &path) {
    const Value *a = e->get(key);
    if (a && (!a->getAsString() || a->getAsString()->empty()))
      return fail(path + "." + key, "not a symbol name");
    return true;
  }
  bool string(const Object *o, const std::string &key, const std::string &path,
              bool required) {
    const Value *v = o->get(key);
    if (!v)
      return !required || fail(path + "." + key, "missing");
    if (!v->getAsString())
      return fail(path + "." + key, v->str() + " is not a string");
    return true;
  }
  bool entry(const Value &v, const std::string &path,
             std::set<std::string> &names) {
    const Object *e = v.getAsObject();
    if (!e)
      return fail(path, "not an object");
    if (!string(e, "name", path, true) || !string(e, "symbol", path, true))
      return false;
    std::string name = *e->getString("name");
    if (name.empty())
      return fail(path + ".name", "empty");
    if (!names.insert(name).second)
      return fail(path + ".name", "a second entry named '" + name + "'");
    const Array *args = e->getArray("args"), *results = e->getArray("results"),
                *dims = e->getArray("dims");
    if (!args)
      return fail(path + ".args", "missing, or not an array");
    if (!results)
      return fail(path + ".results", "missing, or not an array");
    if (!dims)
      return fail(path + ".dims", "missing, or not an array");
    if (dims->size() > 64)
      return fail(path + ".dims", "more than 64 dim symbols");
    numDims = dims->size();
    // arena_bytes is required; the donated arena (libraries with donatable
    // arguments) and the symbols are optional.
    if (!arenaBytes(e, "arena_bytes", path, true) ||
        !symbolName(e, "arena_symbol", path) ||
        !arenaBytes(e, "arena_bytes_donated", path, false) ||
        !symbolName(e, "arena_donated_symbol", path))
      return false;
    // Optional (older libraries have none): the recipe's alignment rules,
    // {expr, multiple, message} with expr in the shapes' grammar.
    if (const Value *cv = e->get("checks")) {
      const Array *checks = cv->getAsArray();
      if (!checks)
        return fail(path + ".checks", "not an array");
      for (size_t c = 0; c < checks->size(); ++c) {
        std::string at = path + ".checks[" + std::to_string(c) + "]";
        const Object *o = (*checks)[c].getAsObject();
        if (!o)
          return fail(at, "not an object");
        std::optional<std::string> expr = o->getString("expr");
        int64_t multiple = 0;
        if (!expr || expr->empty())
          return fail(at + ".expr", "missing or not a string");
        dimexpr::Failure failure;
        if (!dimexpr::checkSyntax(*expr, numDims, failure)) {
          error = failure.message + " (in the module info of '" + library +
                  "', " + at + ".expr)";
          return false;
        }
        if (!count(o->get("multiple"), at + ".multiple", multiple))
          return false;
        if (multiple < 1)
          return fail(at + ".multiple", "0 is not a positive integer");
        if (!o->getString("message"))
          return fail(at + ".message", "missing or not a string");
      }
    }
    // Optional (older libraries have none: every result's padding is then
    // zeroed after the entry): the results whose buffers the entry may
    // write beyond their tensors' bytes, distinct result indices.
    if (const Value *pv = e->get("padding_written")) {
      const Array *written = pv->getAsArray();
      if (!written)
        return fail(path + ".padding_written", "not an array");
      std::set<int64_t> seen;
      for (size_t k = 0; k < written->size(); ++k) {
        std::string at = path + ".padding_written[" + std::to_string(k) + "]";
        int64_t r = 0;
        if (!count(&(*written)[k], at, r) ||
            !inRange(r, results->size(), false, at))
          return false;
        if (!seen.insert(r).second)
          return fail(at, "result " + std::to_string(r) + " listed twice");
      }
    }
    std::vector<bool> bound(numDims, false);
    for (size_t i = 0; i < args->size(); ++i)
      if (!tensor((*args)[i], path + ".args[" + std::to_string(i) + "]",
                  /*isArg=*/true, &bound))
        return false;
    for (size_t i = 0; i < results->size(); ++i)
      if (!tensor((*results)[i], path + ".results[" + std::to_string(i) + "]",
                  /*isArg=*/false, nullptr))
        return false;
    // Optional: [result, argument] pairs of recipe state the caller may
    // pass as one buffer; each a te.state result and the argument of its
    // name, of one dtype and shape, each index at most once.
    if (const Value *sv = e->get("state_in_place")) {
      const Array *pairs = sv->getAsArray();
      if (!pairs)
        return fail(path + ".state_in_place", "not an array");
      std::set<int64_t> seenResults, seenArgs;
      for (size_t k = 0; k < pairs->size(); ++k) {
        std::string at = path + ".state_in_place[" + std::to_string(k) + "]";
        const Array *pair = (*pairs)[k].getAsArray();
        if (!pair || pair->size() != 2)
          return fail(at, "not a [result, argument] pair");
        int64_t r = 0, a = 0;
        if (!count(&(*pair)[0], at + "[0]", r) ||
            !count(&(*pair)[1], at + "[1]", a))
          return false;
        if (!inRange(r, results->size(), false, at) ||
            !inRange(a, args->size(), true, at))
          return false;
        if (!seenResults.insert(r).second || !seenArgs.insert(a).second)
          return fail(at, "a result or argument listed twice");
        const Object *ro = (*results)[r].getAsObject(),
                     *ao = (*args)[a].getAsObject();
        std::optional<std::string> rs = ro->getString("te.state"),
                                   as = ao->getString("te.state");
        if (!rs || !as || *rs != *as)
          return fail(at, "result " + std::to_string(r) + " and argument " +
                              std::to_string(a) + " are not the same te.state");
        if (ro->getString("dtype") != ao->getString("dtype") ||
            ro->get("shape")->str() != ao->get("shape")->str())
          return fail(at, "result " + std::to_string(r) + " and argument " +
                              std::to_string(a) + " differ in dtype or shape");
      }
    }
    for (size_t k = 0; k < dims->size(); ++k) {
      std::string p = path + ".dims[" + std::to_string(k) + "]";
      const Object *d = (*dims)[k].getAsObject();
      if (!d)
        return fail(p, "not an object");
      int64_t arg, dim;
      if (!count(d->get("arg"), p + ".arg", arg) ||
          !count(d->get("dim"), p + ".dim", dim))
        return false;
      if (!inRange(arg, args->size(), true, p + ".arg"))
        return false;
      const Array *shape = (*args)[arg].getAsObject()->getArray("shape");
      if (dim >= int64_t(shape->size()))
        return fail(p + ".dim", std::to_string(dim) +
                                    " is not a dim of argument " +
                                    std::to_string(arg) + " (rank " +
                                    std::to_string(shape->size()) + ")");
      std::optional<std::string> sym = (*shape)[dim].getAsString();
      if (!sym || dimexpr::symbolIndex(*sym) != k)
        return fail(p, "argument " + std::to_string(arg) + " dim " +
                           std::to_string(dim) + " is " + (*shape)[dim].str() +
                           ", not the symbol d" + std::to_string(k));
    }
    for (size_t k = 0; k < numDims; ++k)
      if (!bound[k])
        return fail(path + ".dims[" + std::to_string(k) + "]",
                    "no argument has the dim symbol d" + std::to_string(k));
    return true;
  }
  /// A shape: dims that are integers >= 0 or strings. Argument shapes
  /// (`symbolsOnly`) take bare symbols d<k>, recorded in `bound`; result
  /// and inner-tensor shapes take dim expressions.
  bool shape(const Value *v, const std::string &path, bool symbolsOnly,
             std::vector<bool> *bound) {
    const Array *dims = v ? v->getAsArray() : nullptr;
    if (!dims)
      return fail(path, v ? v->str() + " is not an array" : "missing");
    if (dims->size() > 64)
      return fail(path, "more than 64 dims");
    for (size_t d = 0; d < dims->size(); ++d) {
      std::string p = path + "[" + std::to_string(d) + "]";
      const Value &x = (*dims)[d];
      if (std::optional<int64_t> n = x.getAsInteger()) {
        if (*n < 0)
          return fail(p, std::to_string(*n) + " is negative");
        continue;
      }
      std::optional<std::string> s = x.getAsString();
      if (!s)
        return fail(p, x.str() + " is neither a non-negative integer nor a "
                                 "string (a dim symbol or expression)");
      if (symbolsOnly) {
        std::optional<size_t> k = dimexpr::symbolIndex(*s);
        if (k && *k < numDims) {
          if (bound)
            (*bound)[*k] = true;
          continue;
        }
        // An expression of symbols bound by other arguments (`2*d0`: the
        // gathered rows of a tensor-parallel backward's output gradient),
        // checked by te_module_bind_dims.
        dimexpr::Failure failure;
        if (dimexpr::symbolIndex(*s) ||
            !dimexpr::checkSyntax(*s, numDims, failure))
          return fail(p, "'" + *s + "' is neither a dim symbol d0..d" +
                             std::to_string(int64_t(numDims) - 1) +
                             " nor an expression of them");
        continue;
      }
      dimexpr::Failure failure;
      if (!dimexpr::checkSyntax(*s, numDims, failure)) {
        // The expression's own message first (it names the column).
        error = failure.message + " (in the module info of '" + library +
                "', " + p + ")";
        return false;
      }
    }
    return true;
  }
  bool tensor(const Value &v, const std::string &path, bool isArg,
              std::vector<bool> *bound) {
    const Object *t = v.getAsObject();
    if (!t)
      return fail(path, "not an object");
    if (!string(t, "dtype", path, true))
      return false;
    std::string dtype = *t->getString("dtype");
    for (const char *key :
         {"te.saved", "te.grad_of", "te.state", "te.cached_weight", "te.alias",
          "te.main_grad_of", "te.wgrad_stash"})
      if (!string(t, key, path, false))
        return false;
    if (const Value *d = t->get("te.donatable");
        d && (d->kind != Value::Bool || !isArg))
      return fail(path + ".te.donatable",
                  isArg ? d->str() + " is not true or false"
                        : "only arguments are donatable");
    if (isTensorDtype(dtype)) {
      // A qtensor's keys on a plain tensor: a description that says two
      // things (the runtime would read one, a client the other).
      for (const char *key : {"inner", "type", "alignment"})
        if (t->get(key))
          return fail(path + "." + key,
                      "only a qtensor has one ('" + dtype + "' tensor)");
      return shape(t->get("shape"), path + ".shape", isArg, bound);
    }
    if (dtype != "qtensor")
      return fail(path + ".dtype", "'" + dtype +
                                       "' is not float32, bfloat16, float16 "
                                       "or qtensor");
    if (!shape(t->get("shape"), path + ".shape", isArg, bound) ||
        !string(t, "type", path, true))
      return false;
    if (const Value *a = t->get("alignment")) {
      std::optional<int64_t> n = a->getAsInteger();
      if (!n || *n <= 0 || *n > 4096 || (*n & (*n - 1)) != 0)
        return fail(path + ".alignment",
                    a->str() + " is not a power of two in [1, 4096]");
    }
    const Array *inner = t->getArray("inner");
    if (!inner || inner->empty())
      return fail(path + ".inner", "missing, or not a non-empty array");
    for (size_t i = 0; i < inner->size(); ++i) {
      std::string p = path + ".inner[" + std::to_string(i) + "]";
      const Object *part = (*inner)[i].getAsObject();
      if (!part)
        return fail(p, "not an object");
      if (!string(part, "name", p, true) || !string(part, "dtype", p, true))
        return false;
      std::string partDtype = *part->getString("dtype");
      if (partDtype != "float32" && partDtype != "uint8")
        return fail(p + ".dtype",
                    "'" + partDtype + "' is not float32 or uint8");
      if (!shape(part->get("shape"), p + ".shape", false, nullptr))
        return false;
    }
    return true;
  }

  const std::string &library;
  std::string &error;
  size_t numDims = 0;
};

} // namespace

bool validate(const Value &root, const std::string &library,
              std::string &error) {
  return Validator(library, error).module(root);
}

std::string hex(uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4)
    s[i] = digits[v & 15];
  return s;
}

} // namespace te::moduleinfo
