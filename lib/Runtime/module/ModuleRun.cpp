//===- ModuleRun.cpp - te-mlir module client: running -----------*- C++ -*-===//
//
// The module client's running half (te/Runtime/TEModule.h): the dims bound
// from the arguments' shapes, entries run on the caller's buffers, the
// padding of their quantized results zeroed with them (Padding.h; the
// ranges cached per entry and dims; one te_rt_zero_ranges call, one kernel
// launch on cuda, per 128 ranges; beside the entry's work where it never
// writes that padding, else after it), buffers of an entry's arguments, and
// training steps (a forward and its backward, the backward's arguments fed
// from the forward's). Loading is Module.cpp's. Errors go to
// te_rt_last_error().
//
//===----------------------------------------------------------------------===//

#include "ModuleImpl.h"

#include "Backend.h"
#include "DimExpr.h"
#include "EntryGraphs.h"
#include "Json.h"
#include "Padding.h"
#include "RuntimeInternal.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
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
using namespace te::module;

namespace {

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

/// Whether the padding an entry never writes is zeroed before it, beside
/// its work (the default); TE_RT_PADDING_BESIDE=0 zeroes all of it after
/// the entry, in order, as libraries without `padding_written` are (for
/// measuring the difference, or ruling it out).
bool paddingBeside() {
  static const bool on = [] {
    const char *env = std::getenv("TE_RT_PADDING_BESIDE");
    return !(env && std::strcmp(env, "0") == 0);
  }();
  return on;
}

/// Zeroes `padding`, the ranges of `entry`'s quantized results in
/// `results` (te_module_entry::padding at the call's dims): `before` the
/// entry those whose buffers it writes no more of than their tensors
/// (module info `padding_written`), forked beside its work while capturing
/// (te::rt::zeroRanges: off the graph's chain; the entry's end joins it),
/// else after it the others: one te_rt_zero_ranges call (one kernel launch
/// on cuda) per TE_RT_ZERO_RANGES_PER_LAUNCH ranges, their pointers on the
/// stack.
bool zeroPadding(const te_module_entry &entry,
                 const std::vector<te::padding::Range> &padding,
                 te_rt_context *ctx, void *const *results, bool before) {
  void *ptrs[TE_RT_ZERO_RANGES_PER_LAUNCH];
  int64_t bytes[TE_RT_ZERO_RANGES_PER_LAUNCH];
  int64_t n = 0;
  auto flush = [&] {
    bool ok = te::rt::zeroRanges(ctx, ptrs, bytes, n, before) == 0;
    n = 0;
    return ok ? true
              : (fail(std::string("zeroing the padding of its quantized "
                                  "results: ") +
                      te_rt_last_error()),
                 false);
  };
  const bool beside = paddingBeside();
  for (const te::padding::Range &r : padding) {
    const bool written = !beside || entry.paddingWritten[size_t(r.result)];
    if (written == before)
      continue;
    void *base = results[r.result];
    if (!base)
      return fail(entry.results[size_t(r.result)].label +
                  " is NULL (a quantized result's buffer, whose padding is "
                  "zeroed with the entry)"),
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

/// The dims of `e` (the step's backward or wgrad entry, fed per `feed`): each
/// read off the shape of what feeds its source argument (the module info's
/// "dims"): a forward argument or result at `fwdDims`, a backward result (a
/// wgrad stash) at `bwdDims`, a recipe-state argument's own fixed shape.
static int32_t
dimsFromFeeds(const te_module_step &s, const te_module_entry &e,
              const std::vector<std::pair<int32_t, int64_t>> &feed,
              const int64_t *fwdDims, const std::vector<int64_t> &bwdDims,
              int64_t *out) {
  const te_module_entry &fwd = *s.fwd, &bwd = *s.bwd;
  const Array *dims = e.info->getArray("dims");
  for (size_t k = 0; k < dims->size(); ++k) {
    const Object *d = (*dims)[k].getAsObject();
    size_t arg = size_t(*d->getInteger("arg")),
           dim = size_t(*d->getInteger("dim"));
    auto [kind, i] = feed[arg];
    // A main_grad has its forward argument's shape.
    const te_module_tensor *from =
        kind == TE_MODULE_FEED_INPUT || kind == TE_MODULE_FEED_MAIN_GRAD
            ? &fwd.args[size_t(i)]
        : kind == TE_MODULE_FEED_STATE ? &e.args[arg]
        : kind == TE_MODULE_FEED_STASH ? &bwd.results[size_t(i)]
                                       : &fwd.results[size_t(i)];
    std::vector<int64_t> shape;
    if (!evaluateShape(from->dims,
                       kind == TE_MODULE_FEED_STATE   ? std::vector<int64_t>{}
                       : kind == TE_MODULE_FEED_STASH ? bwdDims
                                                      : from->dimsOf(fwdDims),
                       shape))
      return 1;
    if (dim >= shape.size())
      return fail(e.name + ": " + e.args[arg].label + " has rank " +
                  str(e.args[arg].dims.size()) + " but its source " +
                  from->entry->name + " " + from->label + " has rank " +
                  str(shape.size()));
    out[k] = shape[dim];
  }
  return 0;
}

/// Fills out[i] for every argument of `e` fed per `feed` from the forward's
/// arguments or results, the output gradients or (a wgrad stash) the
/// backward's results; recipe-state and main_grad arguments are the caller's,
/// left as set.
static int32_t
argsFromFeeds(const te_module_entry &e,
              const std::vector<std::pair<int32_t, int64_t>> &feed,
              void *const *fwdArgs, void *const *fwdResults, void *const *grads,
              void *const *bwdResults, void **out) {
  for (size_t i = 0; i < feed.size(); ++i) {
    auto [kind, k] = feed[i];
    if (kind == TE_MODULE_FEED_STATE || kind == TE_MODULE_FEED_MAIN_GRAD)
      continue;
    void *const *from = kind == TE_MODULE_FEED_INPUT    ? fwdArgs
                        : kind == TE_MODULE_FEED_RESULT ? fwdResults
                        : kind == TE_MODULE_FEED_GRAD   ? grads
                                                        : bwdResults;
    if (!from || !from[k])
      return fail(e.name + ": no buffer for " + e.args[i].label + " (" +
                  (kind == TE_MODULE_FEED_STASH ? "backward result "
                   : kind == TE_MODULE_FEED_GRAD
                       ? "the gradient of forward result "
                   : kind == TE_MODULE_FEED_INPUT ? "forward argument "
                                                  : "forward result ") +
                  str(k) + ")");
    out[i] = from[k];
  }
  return 0;
}

/// The refusal of the wgrad calls on a step without a wgrad entry.
static int32_t noWgrad(const te_module_step *step) {
  return fail(step->bwd->name +
              " has no wgrad entry (no argument is te.delay_wgrad)");
}

extern "C" {

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
  // What the entry queues: the zeroing of the padding it never writes
  // (forked beside its work while capturing), its launches, then the
  // zeroing of the padding it may write (a result copied out whole from a
  // buffer of its own, or lent to intermediates first).
  struct Call {
    const te_module_entry *entry;
    te_rt_context *ctx;
    void *const *args, *const *results;
    const int64_t *dims;
  } call{entry, ctx, args, results, dims};
  auto queue = [](void *p) -> int32_t {
    const Call &c = *static_cast<const Call *>(p);
    // The padding's ranges at these dims, laid out once for both passes
    // (an error when the layout cannot be evaluated, before the entry runs).
    te_module_entry::Padding padding;
    if (!c.entry->quantizedResults.empty()) {
      padding = c.entry->padding(c.dims);
      if (!padding || !zeroPadding(*c.entry, *padding, c.ctx, c.results, true))
        return 1;
    }
    if (c.entry->fn(c.ctx, c.args, c.results, c.dims) != 0) {
      // An entry that failed before its end (its checks of the dims) left
      // the zeroing forked above pending: joined, so that a capture of the
      // caller's stays valid.
      te::rt::joinForks(c.ctx);
      return 1;
    }
    if (padding && !zeroPadding(*c.entry, *padding, c.ctx, c.results, false))
      return 1;
    return 0;
  };
  // On cuda, a call seen before replays its CUDA graph (EntryGraphs.h).
  int32_t rc = 0;
  if (te::rt::runEntryGraph(entry, ctx, args, results, dims, queue, &call,
                            &rc))
    return rc;
  if (queue(&call) != 0)
    return fail(name + " failed: " + te_rt_last_error());
  return 0;
}

int32_t te_module_run_donated(const te_module_entry *entry, te_rt_context *ctx,
                              void *const *args, void *const *results,
                              const int64_t *dims, const uint8_t *donated) {
  if (!donated)
    return te_module_run(entry, ctx, args, results, dims);
  if (!entry)
    return fail("te_module_run_donated: entry is NULL");
  if (!ctx)
    return fail(entry->name + " failed: the context is NULL");
  if (!te::module::checkDonated(entry, donated, "te_module_run_donated"))
    return 1;
  if (te_rt_context_set_donated(ctx, donated, int64_t(entry->args.size())))
    return fail(entry->name + " failed: " + te_rt_last_error());
  int32_t rc = te_module_run(entry, ctx, args, results, dims);
  te_rt_context_set_donated(ctx, nullptr, 0);
  return rc;
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
  // te-split-wgrad's entry: the backward's deferred weight gradients.
  for (const auto &e : module->entries)
    if (const char *of = te_module_entry_get(e.get(), "te.wgrad_of");
        of && bwd.name == of)
      s->wgrad = e.get();
  std::map<std::string, int64_t> savedResult, stashResult;
  for (size_t i = 0; i < fwd.results.size(); ++i)
    if (const auto &saved = fwd.results[i].roles[TE_MODULE_ROLE_SAVED])
      savedResult[*saved] = int64_t(i);
  for (size_t i = 0; i < bwd.results.size(); ++i)
    if (const auto &stash = bwd.results[i].roles[TE_MODULE_ROLE_WGRAD_STASH])
      stashResult[*stash] = int64_t(i);
  // Where an argument of the backward (or of the wgrad entry) comes from.
  auto feedOf = [&](const te_module_entry &e, const te_module_tensor &a,
                    std::vector<std::pair<int32_t, int64_t>> &feed) -> bool {
    auto bad = [](const std::string &why) {
      fail(why);
      return false;
    };
    std::string kind;
    int64_t k;
    if (const auto &alias = a.roles[TE_MODULE_ROLE_ALIAS]) {
      size_t limit = alias->rfind("input:", 0) == 0 ? fwd.args.size()
                                                    : fwd.results.size();
      if (!parseRef(*alias, limit, kind, k))
        return bad("malformed reference '" + *alias + "' in " + e.name);
      feed.push_back(
          {kind == "input" ? TE_MODULE_FEED_INPUT : TE_MODULE_FEED_RESULT, k});
    } else if (const auto &saved = a.roles[TE_MODULE_ROLE_SAVED]) {
      auto it = savedResult.find(*saved);
      if (it == savedResult.end())
        return bad(fwd.name + " does not return the saved tensor '" + *saved +
                   "'");
      feed.push_back({TE_MODULE_FEED_RESULT, it->second});
    } else if (const auto &main = a.roles[TE_MODULE_ROLE_MAIN_GRAD_OF]) {
      // The caller's fp32 main_grad of a forward argument.
      if (!parseRef(*main, fwd.args.size(), kind, k) || kind != "input")
        return bad("malformed reference '" + *main + "' in " + e.name +
                   " (te.main_grad_of names a forward input)");
      feed.push_back({TE_MODULE_FEED_MAIN_GRAD, k});
    } else if (const auto &of = a.roles[TE_MODULE_ROLE_GRAD_OF]) {
      if (!parseRef(*of, fwd.results.size(), kind, k))
        return bad("malformed reference '" + *of + "' in " + e.name);
      feed.push_back({TE_MODULE_FEED_GRAD, k});
    } else if (const auto &stash = a.roles[TE_MODULE_ROLE_WGRAD_STASH];
               stash && &e == s->wgrad) {
      auto it = stashResult.find(*stash);
      if (it == stashResult.end())
        return bad(bwd.name + " returns no te.wgrad_stash '" + *stash +
                   "' for " + e.name);
      feed.push_back({TE_MODULE_FEED_STASH, it->second});
    } else if (isFloatState(a)) {
      // The backward's recipe state: TE's initial value, or carried.
      feed.push_back({TE_MODULE_FEED_STATE, -1});
    } else {
      return bad("cannot feed " + e.name + " " + a.label);
    }
    return true;
  };
  for (const te_module_tensor &a : bwd.args)
    if (!feedOf(bwd, a, s->feed))
      return 1;
  if (s->wgrad)
    for (const te_module_tensor &a : s->wgrad->args)
      if (!feedOf(*s->wgrad, a, s->wgradFeed))
        return 1;
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
  return argsFromFeeds(*step->bwd, step->feed, fwd_args, fwd_results, grads,
                       nullptr, bwd_args);
}

int32_t te_module_step_bwd_dims(const te_module_step *step,
                                const int64_t *fwd_dims, int64_t *bwd_dims) {
  if (!step || (!bwd_dims && step->bwd->numDims) ||
      (!fwd_dims && step->fwd->numDims))
    return fail("te_module_step_bwd_dims: step or dims is NULL");
  return dimsFromFeeds(*step, *step->bwd, step->feed, fwd_dims, {}, bwd_dims);
}

const te_module_entry *te_module_step_wgrad(const te_module_step *step) {
  return step ? step->wgrad : nullptr;
}

int32_t te_module_step_wgrad_feed(const te_module_step *step, int64_t arg,
                                  int32_t *kind, int64_t *index) {
  if (!step || !kind || !index)
    return fail("te_module_step_wgrad_feed: step, kind or index is NULL");
  if (!step->wgrad)
    return noWgrad(step);
  if (arg < 0 || arg >= int64_t(step->wgradFeed.size()))
    return fail(step->wgrad->name + " has no argument " + str(arg));
  *kind = step->wgradFeed[size_t(arg)].first;
  *index = step->wgradFeed[size_t(arg)].second;
  return 0;
}

int32_t te_module_step_wgrad_args(const te_module_step *step,
                                  void *const *fwd_args,
                                  void *const *fwd_results, void *const *grads,
                                  void *const *bwd_results, void **wgrad_args) {
  if (!step || !wgrad_args)
    return fail("te_module_step_wgrad_args: step or wgrad_args is NULL");
  if (!step->wgrad)
    return noWgrad(step);
  return argsFromFeeds(*step->wgrad, step->wgradFeed, fwd_args, fwd_results,
                       grads, bwd_results, wgrad_args);
}

int32_t te_module_step_wgrad_dims(const te_module_step *step,
                                  const int64_t *fwd_dims,
                                  int64_t *wgrad_dims) {
  if (!step)
    return fail("te_module_step_wgrad_dims: step is NULL");
  if (!step->wgrad)
    return noWgrad(step);
  const te_module_entry &fwd = *step->fwd, &bwd = *step->bwd,
                        &wgrad = *step->wgrad;
  if ((!wgrad_dims && wgrad.numDims) || (!fwd_dims && fwd.numDims))
    return fail("te_module_step_wgrad_dims: dims is NULL");
  std::vector<int64_t> bwdDims(bwd.numDims);
  if (te_module_step_bwd_dims(step, fwd_dims, bwdDims.data()))
    return 1;
  return dimsFromFeeds(*step, wgrad, step->wgradFeed, fwd_dims, bwdDims,
                       wgrad_dims);
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
