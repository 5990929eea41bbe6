//===- TorchOps.cpp - te-mlir's PyTorch op kernels (stable ABI) ----*- C++ -*-===//
//
// The C++ kernel of every op te_mlir.torch defines for a library entry. It is
// built once against PyTorch's LibTorch stable ABI (torch/csrc/stable, shims
// only, TORCH_TARGET_VERSION 2.11), so one binary serves every torch from 2.11
// on. Python defines each op (its schema, fake impl and autograd) and calls
// te_torch_ops_register once per op; from then on a call of the op runs here,
// with no Python: check the arguments, bind the dims through the module client
// (cached per argument signature), allocate the results and the arena from
// torch's allocator, put the runtime context on torch's current stream, and
// run te_module_run.
//
//===----------------------------------------------------------------------===//

#include "te/Runtime/TEModule.h"
#include "te/Runtime/TERuntime.h"

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#define TE_TORCH_OPS_API extern "C" __attribute__((visibility("default")))

namespace {

using torch::stable::Tensor;

/// Interface version of the te_torch_ops_* C functions (what Python checks).
constexpr int32_t kInterfaceVersion = 7;
/// How many ops one process can register (one boxed trampoline each).
constexpr int kMaxOps = 2048;
/// The runtime's arena and workspace alignment.
constexpr int64_t kAlign = 256;
/// Arenas up to this size come from a region the context keeps (one per
/// context: its calls are one at a time, in one stream order, as its
/// workspace's are). A call then allocates only its results, and an arena a
/// little above 1 MiB is not charged the 2 MiB block the CUDA caching
/// allocator would give it (it splits a cached large block only when more
/// than 1 MiB would remain).
constexpr int64_t kSmallArenaBytes = int64_t(4) << 20;

thread_local std::string lastError;

[[noreturn]] void fail(const std::string &msg) { throw std::runtime_error(msg); }

void checkTorch(AOTITorchError err, const char *what) {
  if (err != AOTI_TORCH_SUCCESS)
    fail(std::string("te-mlir: torch call failed: ") + what);
}

std::string runtimeError() {
  const char *e = te_rt_last_error();
  return e && *e ? e : "(no error text)";
}

//===----------------------------------------------------------------------===//
// Dtypes and devices
//===----------------------------------------------------------------------===//

struct Dtypes {
  int32_t f32, bf16, f16, u8;
  int32_t cpu, cuda;
};

const Dtypes &dtypes() {
  static const Dtypes d{aoti_torch_dtype_float32(), aoti_torch_dtype_bfloat16(),
                        aoti_torch_dtype_float16(),  aoti_torch_dtype_uint8(),
                        aoti_torch_device_type_cpu(), aoti_torch_device_type_cuda()};
  return d;
}

/// The torch dtype of a module-info dtype ("qtensor": uint8 bytes), or -1.
int32_t torchDtype(const char *name) {
  const Dtypes &d = dtypes();
  if (!std::strcmp(name, "float32"))
    return d.f32;
  if (!std::strcmp(name, "bfloat16"))
    return d.bf16;
  if (!std::strcmp(name, "float16"))
    return d.f16;
  if (!std::strcmp(name, "qtensor"))
    return d.u8;
  return -1;
}

const char *dtypeName(int32_t dt) {
  const Dtypes &d = dtypes();
  if (dt == d.f32)
    return "float32";
  if (dt == d.bf16)
    return "bfloat16";
  if (dt == d.f16)
    return "float16";
  if (dt == d.u8)
    return "uint8";
  // The others only name what was given (all in the stable ABI before 2.11).
  static const std::pair<int32_t, const char *> others[] = {
      {aoti_torch_dtype_float64(), "float64"},
      {aoti_torch_dtype_int64(), "int64"},
      {aoti_torch_dtype_int32(), "int32"},
      {aoti_torch_dtype_int16(), "int16"},
      {aoti_torch_dtype_int8(), "int8"},
      {aoti_torch_dtype_bool(), "bool"},
      {aoti_torch_dtype_float8_e4m3fn(), "float8_e4m3fn"},
      {aoti_torch_dtype_float8_e5m2(), "float8_e5m2"}};
  for (const auto &[code, name] : others)
    if (dt == code)
      return name;
  return "another dtype";
}

/// torch's current CUDA stream of `device`, through the CUDA shim of
/// libtorch_cuda (looked up at run time: a CPU-only torch has none).
void *currentCudaStream(int32_t device) {
  using Fn = AOTITorchError (*)(int32_t, void **);
  static Fn fn = [] {
    void *f = dlsym(RTLD_DEFAULT, "aoti_torch_get_current_cuda_stream");
    if (!f)
      if (void *h = dlopen("libtorch_cuda.so", RTLD_LAZY | RTLD_NOLOAD))
        f = dlsym(h, "aoti_torch_get_current_cuda_stream");
    return reinterpret_cast<Fn>(f);
  }();
  if (!fn)
    fail("te-mlir: this torch has no CUDA stream shim "
         "(aoti_torch_get_current_cuda_stream); cannot run on cuda");
  void *stream = nullptr;
  checkTorch(fn(device, &stream), "aoti_torch_get_current_cuda_stream");
  return stream;
}

/// A contiguous uninitialized tensor from torch's allocator.
Tensor emptyTensor(const std::vector<int64_t> &sizes, int32_t dtype,
                   int32_t deviceType, int32_t deviceIndex) {
  std::vector<int64_t> strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= sizes[i] > 0 ? sizes[i] : 1;
  }
  AtenTensorHandle h = nullptr;
  checkTorch(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()),
                                      sizes.data(), strides.data(), dtype,
                                      deviceType, deviceIndex, &h),
             "aoti_torch_empty_strided");
  return Tensor(h);
}

/// `bytes` bytes at a multiple of kAlign inside a fresh uint8 tensor (kept
/// alive by `holder`).
void *alignedBytes(int64_t bytes, int32_t deviceType, int32_t deviceIndex,
                   Tensor &holder) {
  // CUDA's caching allocator hands out 512-byte aligned blocks: ask for the
  // bytes themselves (the plan's peak is then what the allocator is asked
  // for), and for kAlign more only if another allocator did not align them.
  // torch's CPU allocator aligns to 64 bytes: kAlign more at once.
  if (deviceType == dtypes().cuda) {
    holder = emptyTensor({bytes}, dtypes().u8, deviceType, deviceIndex);
    auto p = reinterpret_cast<uintptr_t>(holder.data_ptr());
    if (p % kAlign == 0)
      return holder.data_ptr();
  }
  holder = emptyTensor({bytes + kAlign}, dtypes().u8, deviceType, deviceIndex);
  auto p = reinterpret_cast<uintptr_t>(holder.data_ptr());
  return reinterpret_cast<void *>((p + kAlign - 1) / kAlign * kAlign);
}

//===----------------------------------------------------------------------===//
// Runtime contexts: one per (backend, device), for the process
//===----------------------------------------------------------------------===//

struct Context {
  te_rt_context *handle = nullptr;
  int32_t backend = TE_RT_BACKEND_CPU;
  int32_t deviceType = 0, deviceIndex = 0;
  std::mutex lock; // one call at a time: stream, arena and run belong together
  Tensor workspace;
  int64_t workspaceBytes = 0;
  /// kSmallArenaBytes for the small arenas: on cuda the tail of the
  /// workspace's buffer (allocated with it), on cpu a buffer of its own.
  void *smallArena = nullptr;
  Tensor smallArenaHolder; // cpu
  /// The stream the region serves (cuda: the first that used it). A call on
  /// another stream takes its arena from torch's allocator. The runtime
  /// orders plain stream switches (te_rt_context_set_stream), but not around
  /// a CUDA graph capture: a graph captured on another stream (torch's
  /// capture streams) must not hold the region, or its replays would write
  /// it unordered with later eager calls.
  void *regionStream = nullptr;
  bool regionBound = false;
  /// Workspaces replaced by larger ones: CUDA graphs captured with them keep
  /// using their addresses on every replay.
  std::vector<Tensor> retired;
};

Context &contextFor(int32_t backend, int32_t deviceType, int32_t deviceIndex) {
  static std::mutex mapLock;
  static std::map<std::pair<int32_t, int32_t>, std::unique_ptr<Context>> map;
  std::lock_guard<std::mutex> guard(mapLock);
  auto &slot = map[{backend, deviceIndex}];
  if (!slot) {
    auto ctx = std::make_unique<Context>();
    ctx->backend = backend;
    ctx->deviceType = deviceType;
    ctx->deviceIndex = deviceIndex;
    if (backend == TE_RT_BACKEND_CUDA) {
      // a cuda context binds the current device
      torch::stable::accelerator::DeviceGuard dg(deviceIndex);
      ctx->handle = te_rt_context_create(backend);
    } else {
      ctx->handle = te_rt_context_create(backend);
    }
    if (!ctx->handle)
      fail("te_rt_context_create: " + runtimeError());
    slot = std::move(ctx);
  }
  return *slot;
}

/// Gives the context a workspace of `bytes` from torch's allocator, kept for
/// the process. Never inside a capture (it would be the graph's memory). It
/// is allocated on a helper thread: PyTorch routes a thread's allocations to
/// a CUDA graph's private pool while it warms up or records a graph
/// (torch.compile's reduce-overhead warms up on the calling thread, outside
/// any capture), and a block the context keeps must not be one of that
/// pool's, whose owner checks that nothing but the graph's outputs holds it.
void setWorkspace(Context &ctx, int64_t bytes, const std::string &who) {
  int32_t capturing = te_rt_context_capturing(ctx.handle);
  if (capturing < 0)
    fail(who + ": te_rt_context_capturing: " + runtimeError());
  if (capturing > 0)
    fail(who + ": the runtime's workspace (" + std::to_string(bytes) +
         " bytes) would be allocated while a CUDA graph is being captured; "
         "run the module (or the compiled function) once before capturing "
         "it (torch.compile's reduce-overhead mode does this by itself)");
  Tensor holder;
  void *p = nullptr;
  // the small arenas' region after the workspace, at an aligned offset
  int64_t regionAt = (bytes + kAlign - 1) / kAlign * kAlign;
  std::exception_ptr error;
  std::thread helper([&] {
    try {
      torch::stable::accelerator::DeviceGuard dg(ctx.deviceIndex);
      p = alignedBytes(regionAt + kSmallArenaBytes, ctx.deviceType,
                       ctx.deviceIndex, holder);
    } catch (...) {
      error = std::current_exception();
    }
  });
  helper.join();
  if (error)
    std::rethrow_exception(error);
  if (te_rt_context_set_workspace(ctx.handle, p, bytes) != 0)
    fail("te_rt_context_set_workspace: " + runtimeError());
  if (ctx.workspace.defined())
    ctx.retired.push_back(std::move(ctx.workspace));
  ctx.workspace = std::move(holder);
  ctx.workspaceBytes = bytes;
  // (the old region stays alive with its retired workspace: CUDA graphs
  // captured with it keep using it)
  ctx.smallArena = static_cast<char *>(p) + regionAt;
}

//===----------------------------------------------------------------------===//
// Registered ops
//===----------------------------------------------------------------------===//

struct Check {
  std::string expr, message;
  int64_t multiple;
};

struct ResultPlan {
  std::vector<int64_t> sizes;
  int32_t dtype;
};

/// What one argument signature (dtypes and sizes) decides.
struct Plan {
  std::vector<int64_t> key;
  std::vector<int64_t> dims;
  std::vector<ResultPlan> results;
  int64_t arenaBytes = 0; // -1: the entry sizes its arena itself
  /// Whether a call of this signature went through (a donating call is not
  /// rerun after growing the workspace, so cuda donates only after one).
  mutable std::atomic<bool> ran{false};
};

struct ArgSpec {
  std::string label;
  const char *dtypeName;
  int32_t dtype;
  bool qtensor;
};

struct Op {
  std::string entryName;
  const te_module_entry *entry = nullptr;
  int32_t backend = TE_RT_BACKEND_CPU;
  int64_t numArgs = 0;    // the entry's arguments (the op may take more)
  int64_t numResults = 0; // the results the op returns
  /// Per entry result: the argument whose buffer it is written into
  /// (te.main_grad_of: main_grad + a weight's gradient, accumulated in place;
  /// module info state_in_place: a backward's new recipe state; the op takes
  /// that argument mutated and does not return the result), or -1.
  std::vector<int64_t> inPlace;
  /// Whether the op takes its dims as a trailing int[]: some dim symbol of
  /// the entry is carried by quantized arguments only (a byte buffer has no
  /// shape; te-split-wgrad's <fn>_bwd_wgrad of an FP8 step).
  bool takesDims = false;
  std::vector<ArgSpec> args;
  std::vector<const te_module_tensor *> results;
  std::vector<Check> checks;
  std::mutex planLock;
  std::vector<std::unique_ptr<Plan>> plans;
  std::atomic<int64_t> calls{0};
  /// Calls whose arena came from torch's allocator / from the context's
  /// small-arena region.
  std::atomic<int64_t> allocatedArenas{0}, regionArenas{0};
  std::atomic<Context *> context{nullptr}; // the last call's (contexts live forever)
  /// The arena bytes the last donating call did not allocate.
  std::atomic<int64_t> donatedBytes{0};
};

/// The donation of the next call of one op on this thread
/// (te_torch_ops_donate_next): its slot (-1: none) and argument flags.
struct PendingDonation {
  int slot = -1;
  std::vector<uint8_t> flags;
};
thread_local PendingDonation pendingDonation;

std::array<std::unique_ptr<Op>, kMaxOps> ops;
std::atomic<int> numOps{0};
std::mutex registerLock;

/// "[2, 3]".
std::string shapeText(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

/// The checks of a signature's arguments, and what they decide.
std::unique_ptr<Plan> makePlan(Op &op, const std::vector<Tensor> &xs,
                               std::vector<int64_t> key,
                               const std::vector<int64_t> *givenDims) {
  auto plan = std::make_unique<Plan>();
  plan->key = std::move(key);
  size_t n = op.args.size();
  std::vector<const char *> dts(n);
  std::vector<std::vector<int64_t>> shapes(n);
  std::vector<const int64_t *> shapePtrs(n);
  std::vector<int64_t> ranks(n);
  for (size_t i = 0; i < n; ++i) {
    const ArgSpec &a = op.args[i];
    if (a.qtensor) {
      dts[i] = nullptr;
      ranks[i] = -1;
      shapePtrs[i] = nullptr;
      continue;
    }
    dts[i] = a.dtypeName;
    auto s = xs[i].sizes();
    shapes[i].assign(s.begin(), s.end());
    ranks[i] = static_cast<int64_t>(shapes[i].size());
    shapePtrs[i] = shapes[i].data();
  }
  plan->dims.assign(std::max<int64_t>(1, te_module_entry_num_dims(op.entry)), 0);
  if (givenDims) {
    // The caller's dims; every plain argument must have its shape at them
    // (the quantized ones their bytes, below).
    if (int64_t(givenDims->size()) != te_module_entry_num_dims(op.entry))
      fail(op.entryName + ": dims must hold " +
           std::to_string(te_module_entry_num_dims(op.entry)) +
           " values, got " + std::to_string(givenDims->size()));
    for (size_t k = 0; k < givenDims->size(); ++k)
      if ((*givenDims)[k] < 0)
        fail(op.entryName + ": dims[" + std::to_string(k) + "] is negative");
    std::copy(givenDims->begin(), givenDims->end(), plan->dims.begin());
    for (size_t i = 0; i < n; ++i) {
      if (op.args[i].qtensor)
        continue;
      const te_module_tensor *t = te_module_entry_arg(op.entry, int64_t(i));
      std::vector<int64_t> want(std::max<int64_t>(1, te_module_tensor_rank(t)));
      if (te_module_tensor_shape(t, plan->dims.data(), want.data()) != 0)
        fail(op.entryName + ": " + runtimeError());
      want.resize(size_t(te_module_tensor_rank(t)));
      if (want != shapes[i])
        fail(op.entryName + ": " + op.args[i].label + " has shape " +
             shapeText(shapes[i]) + ", the dims given make it " +
             shapeText(want));
    }
  } else if (te_module_bind_dims(op.entry, dts.data(), shapePtrs.data(),
                                 ranks.data(), plan->dims.data()) != 0) {
    fail(runtimeError());
  }
  const int64_t *dims = plan->dims.data();
  for (const Check &c : op.checks) {
    int64_t v = 0, inexact = 0;
    if (te_module_eval_dim(c.expr.c_str(), dims, static_cast<int64_t>(plan->dims.size()),
                           &v, &inexact) != 0)
      fail(op.entryName + ": " + runtimeError());
    if (v % c.multiple != 0)
      fail(c.message + ", got " + std::to_string(v));
  }
  for (size_t i = 0; i < n; ++i) {
    if (!op.args[i].qtensor)
      continue;
    int64_t want = 0;
    if (te_module_tensor_bytes(te_module_entry_arg(op.entry, static_cast<int64_t>(i)),
                               dims, &want) != 0)
      fail(op.entryName + ": " + runtimeError());
    if (xs[i].numel() != want)
      fail(op.entryName + " " + op.args[i].label + ": quantized buffer of " +
           std::to_string(xs[i].numel()) + " bytes, the entry wants " +
           std::to_string(want));
  }
  for (const te_module_tensor *r : op.results) {
    ResultPlan rp;
    if (!std::strcmp(te_module_tensor_dtype(r), "qtensor")) {
      int64_t bytes = 0;
      if (te_module_tensor_bytes(r, dims, &bytes) != 0)
        fail(op.entryName + ": " + runtimeError());
      rp.sizes = {bytes};
      rp.dtype = dtypes().u8;
    } else {
      rp.sizes.assign(std::max<int64_t>(1, te_module_tensor_rank(r)), 0);
      if (te_module_tensor_shape(r, dims, rp.sizes.data()) != 0)
        fail(op.entryName + ": " + runtimeError());
      rp.sizes.resize(te_module_tensor_rank(r));
      rp.dtype = torchDtype(te_module_tensor_dtype(r));
    }
    plan->results.push_back(std::move(rp));
  }
  if (te_module_entry_arena_bytes(op.entry, dims, &plan->arenaBytes) != 0)
    fail(op.entryName + ": " + runtimeError());
  return plan;
}

const Plan &planFor(Op &op, const std::vector<Tensor> &xs,
                    const std::vector<int64_t> *givenDims) {
  // The signature: each argument's rank and sizes (a qtensor's byte count),
  // then the dims the caller gave; the dtypes are checked before. Built in a
  // per-thread buffer: no allocation per call.
  thread_local std::vector<int64_t> key;
  key.clear();
  for (const Tensor &t : xs) {
    auto s = t.sizes();
    key.push_back(static_cast<int64_t>(s.size()));
    key.insert(key.end(), s.begin(), s.end());
  }
  if (givenDims)
    key.insert(key.end(), givenDims->begin(), givenDims->end());
  std::lock_guard<std::mutex> guard(op.planLock);
  for (size_t i = op.plans.size(); i-- > 0;)
    if (op.plans[i]->key == key)
      return *op.plans[i];
  auto plan = makePlan(op, xs, key, givenDims);
  if (op.plans.size() >= 64) // a bounded cache: many token counts are fine
    op.plans.erase(op.plans.begin());
  op.plans.push_back(std::move(plan));
  return *op.plans.back();
}

/// The donation te_torch_ops_donate_next set for this call of op `slot`
/// (consumed), or none.
std::vector<uint8_t> takeDonation(int slot) {
  if (pendingDonation.slot != slot)
    return {};
  std::vector<uint8_t> flags = std::move(pendingDonation.flags);
  pendingDonation = {};
  return flags;
}

/// The arguments this call may overwrite, of those the eager backward
/// donated (the saved tensors only it holds): the caller's own tensors as
/// given (`given`, not a contiguous copy), once a call of this signature
/// went through on cuda (a donating call that fails for lack of workspace
/// cannot be rerun). Null when none.
const uint8_t *donationFlags(const Op &op, const Plan &plan,
                             const std::vector<Tensor> &xs,
                             const std::vector<void *> &given,
                             std::vector<uint8_t> &donated) {
  bool any = false;
  for (size_t i = 0; i < donated.size(); ++i) {
    donated[i] = donated[i] && i < given.size() && i < xs.size() &&
                 xs[i].numel() > 0 && xs[i].data_ptr() == given[i] &&
                 (op.backend == TE_RT_BACKEND_CPU || plan.ran.load());
    any |= donated[i] != 0;
  }
  return any ? donated.data() : nullptr;
}

/// The kernel: stack[0..numArgs) holds the op's arguments (owned), and gets
/// its results.
void runOp(int slot, StableIValue *stack, uint64_t numArgs, uint64_t numOutputs) {
  Op &op = *ops[slot];
  op.calls.fetch_add(1, std::memory_order_relaxed);
  std::vector<Tensor> xs;
  xs.reserve(numArgs);
  std::vector<int64_t> givenDims;
  if (op.takesDims && numArgs > 0) // the trailing int[] dims
    givenDims =
        torch::stable::detail::to<std::vector<int64_t>>(stack[--numArgs]);
  for (uint64_t i = 0; i < numArgs; ++i) // take ownership of every argument
    xs.push_back(torch::stable::detail::to<Tensor>(stack[i]));
  if (static_cast<int64_t>(numArgs) < op.numArgs ||
      static_cast<int64_t>(numOutputs) != op.numResults)
    fail(op.entryName + ": expected " + std::to_string(op.numArgs) +
         " arguments and " + std::to_string(op.numResults) + " results, got " +
         std::to_string(numArgs) + " and " + std::to_string(numOutputs));
  xs.resize(op.numArgs); // trailing backward recipe state: autograd's, not ours

  // The device: one for every argument, the library's backend.
  const Dtypes &d = dtypes();
  int32_t devType = op.backend == TE_RT_BACKEND_CUDA ? d.cuda : d.cpu;
  int32_t devIndex = 0;
  bool first = true;
  for (int64_t i = 0; i < op.numArgs; ++i) {
    int32_t t = 0, idx = 0;
    checkTorch(aoti_torch_get_device_type(xs[i].get(), &t), "get_device_type");
    checkTorch(aoti_torch_get_device_index(xs[i].get(), &idx), "get_device_index");
    if (t != devType)
      fail(op.entryName + ": the library runs on the " +
           (op.backend == TE_RT_BACKEND_CUDA ? "cuda" : "cpu") +
           " backend, but " + op.args[i].label + " is on " +
           (t == d.cuda ? "cuda" : t == d.cpu ? "cpu" : "another device") +
           " (move the arguments there or load a library for that device)");
    if (first)
      devIndex = idx;
    else if (idx != devIndex)
      fail(op.entryName + ": arguments on different devices (" +
           std::to_string(devIndex) + " and " + std::to_string(idx) + ")");
    first = false;
  }
  if (devType == d.cpu)
    devIndex = 0;

  // dtypes, ranks and layout (the tensors as given: a donated one must not
  // have been copied)
  std::vector<void *> given;
  if (pendingDonation.slot == slot)
    for (int64_t i = 0; i < op.numArgs; ++i)
      given.push_back(xs[i].numel() > 0 ? xs[i].data_ptr() : nullptr);
  for (int64_t i = 0; i < op.numArgs; ++i) {
    const ArgSpec &a = op.args[i];
    int32_t dt = 0;
    checkTorch(aoti_torch_get_dtype(xs[i].get(), &dt), "get_dtype");
    if (a.qtensor) {
      if (dt != d.u8 || xs[i].dim() != 1)
        fail(op.entryName + " " + a.label +
             ": a quantized tensor is a 1-D uint8 byte buffer, got " + dtypeName(dt));
    } else if (dt != a.dtype) {
      fail(op.entryName + ": " + a.label + " must be " + a.dtypeName + ", got " +
           dtypeName(dt));
    }
    if (!xs[i].is_contiguous()) {
      if (std::find(op.inPlace.begin(), op.inPlace.end(), i) != op.inPlace.end())
        fail(op.entryName + ": " + a.label +
             ": an argument the entry writes in place (a main_grad, recipe "
             "state) must be contiguous");
      xs[i] = torch::stable::contiguous(xs[i]);
    }
  }

  std::vector<uint8_t> donated = takeDonation(slot);
  const Plan &plan = planFor(op, xs, op.takesDims ? &givenDims : nullptr);
  const uint8_t *donatedFlags = donationFlags(op, plan, xs, given, donated);
  std::vector<Tensor> results;
  results.reserve(plan.results.size());
  for (size_t i = 0; i < plan.results.size(); ++i) {
    const ResultPlan &r = plan.results[i];
    if (int64_t a = op.inPlace[i]; a >= 0) {
      // written into its argument (a main_grad, recipe state; checked: dtype,
      // contiguous)
      auto s = xs[size_t(a)].sizes();
      if (!std::equal(s.begin(), s.end(), r.sizes.begin(), r.sizes.end()))
        fail(op.entryName + ": " + op.args[size_t(a)].label +
             " does not have its result's shape");
      results.push_back(xs[size_t(a)]);
      continue;
    }
    results.push_back(emptyTensor(r.sizes, r.dtype, devType, devIndex));
  }

  // Buffers: zero-size tensors have no storage; the runtime wants a valid,
  // unique address, which they never touch.
  std::vector<void *> argPtrs(op.numArgs), resPtrs(results.size());
  Tensor spare;
  int64_t empties = 0;
  auto addr = [&](const Tensor &t, void *&out) {
    out = t.numel() == 0 ? nullptr : t.data_ptr();
    if (!out)
      ++empties;
  };
  for (int64_t i = 0; i < op.numArgs; ++i)
    addr(xs[i], argPtrs[i]);
  for (size_t i = 0; i < results.size(); ++i)
    addr(results[i], resPtrs[i]);
  if (empties) {
    auto *base = static_cast<char *>(
        alignedBytes(kAlign * empties, devType, devIndex, spare));
    int64_t k = 0;
    for (void *&p : argPtrs)
      if (!p)
        p = base + kAlign * k++;
    for (void *&p : resPtrs)
      if (!p)
        p = base + kAlign * k++;
  }

  Context *cached = op.context.load(std::memory_order_acquire);
  Context &ctx = cached && cached->deviceIndex == devIndex
                     ? *cached
                     : contextFor(op.backend, devType, devIndex);
  op.context.store(&ctx, std::memory_order_release);
  int64_t arenaBytes = plan.arenaBytes;
  if (donatedFlags) {
    if (te_module_entry_arena_bytes_donated(op.entry, plan.dims.data(),
                                            donatedFlags, &arenaBytes) != 0)
      fail(op.entryName + ": " + runtimeError());
    op.donatedBytes.store(plan.arenaBytes - arenaBytes);
  }
  Tensor arenaHolder;
  void *arena = nullptr;
  bool smallArena = arenaBytes > 0 && arenaBytes <= kSmallArenaBytes;
  if (arenaBytes > 0 && !smallArena)
    arena = alignedBytes(arenaBytes, devType, devIndex, arenaHolder);
  {
    std::lock_guard<std::mutex> guard(ctx.lock);
    if (op.backend == TE_RT_BACKEND_CUDA) {
      // the stream first: setWorkspace asks whether it is being captured
      void *stream = currentCudaStream(devIndex);
      if (te_rt_context_set_stream(ctx.handle, stream) != 0)
        fail(op.entryName + ": te_rt_context_set_stream: " + runtimeError());
      if (!ctx.workspace.defined())
        setWorkspace(ctx, te_rt_workspace_bytes(), op.entryName);
      if (smallArena && !ctx.regionBound) {
        ctx.regionStream = stream;
        ctx.regionBound = true;
      }
      if (smallArena && stream != ctx.regionStream) {
        smallArena = false;
        arena = alignedBytes(arenaBytes, devType, devIndex, arenaHolder);
      }
    } else if (smallArena && !ctx.smallArena) {
      ctx.smallArena = alignedBytes(kSmallArenaBytes, devType, devIndex,
                                    ctx.smallArenaHolder);
    }
    if (smallArena)
      arena = ctx.smallArena;
    if (arenaBytes > 0)
      (smallArena ? op.regionArenas : op.allocatedArenas)
          .fetch_add(1, std::memory_order_relaxed);
    if (arena && te_rt_context_set_arena(ctx.handle, arena, arenaBytes) != 0)
      fail(op.entryName + ": te_rt_context_set_arena: " + runtimeError());
    int32_t rc = te_module_run_donated(op.entry, ctx.handle, argPtrs.data(),
                                       resPtrs.data(), plan.dims.data(),
                                       donatedFlags);
    if (rc != 0 && op.backend == TE_RT_BACKEND_CUDA && !donatedFlags) {
      // the workspace was too small for this call: grow it, run again (not
      // a donating call: it may have overwritten what it was donated)
      int64_t need = te_rt_context_workspace_needed(ctx.handle);
      if (need > ctx.workspaceBytes) {
        setWorkspace(ctx, need, op.entryName);
        rc = te_module_run(op.entry, ctx.handle, argPtrs.data(), resPtrs.data(),
                           plan.dims.data());
      }
    }
    std::string why = rc != 0 ? runtimeError() : std::string();
    if (arena)
      te_rt_context_set_arena(ctx.handle, nullptr, 0);
    if (rc != 0)
      fail(why);
  }
  plan.ran.store(true);
  for (size_t i = 0, j = 0; i < results.size(); ++i)
    if (op.inPlace[i] < 0)
      stack[j++] = torch::stable::detail::from(results[i]);
}

template <int Slot>
void boxed(StableIValue *stack, uint64_t numArgs, uint64_t numOutputs) {
  runOp(Slot, stack, numArgs, numOutputs);
}

using BoxedFn = void (*)(StableIValue *, uint64_t, uint64_t);

template <int... I>
constexpr std::array<BoxedFn, sizeof...(I)>
makeTrampolines(std::integer_sequence<int, I...>) {
  return {&boxed<I>...};
}

const std::array<BoxedFn, kMaxOps> trampolines =
    makeTrampolines(std::make_integer_sequence<int, kMaxOps>());

/// The IMPL libraries, one per (namespace, dispatch key), kept for the process
/// (destroying one would deregister its kernels).
torch::stable::detail::StableLibrary &implLibrary(const std::string &ns,
                                                   const char *key) {
  static std::map<std::pair<std::string, std::string>,
                  std::unique_ptr<torch::stable::detail::StableLibrary>>
      libs;
  auto &lib = libs[{ns, key}];
  if (!lib)
    lib = std::make_unique<torch::stable::detail::StableLibrary>(
        torch::stable::detail::StableLibrary::Kind::IMPL, ns.c_str(), key,
        __FILE__, __LINE__);
  return *lib;
}

} // namespace

//===----------------------------------------------------------------------===//
// The C interface (Python calls it once per op, through ctypes)
//===----------------------------------------------------------------------===//

/// The version of this interface.
TE_TORCH_OPS_API int32_t te_torch_ops_version(void) { return kInterfaceVersion; }

/// The torch stable ABI version this library was built to target.
TE_TORCH_OPS_API uint64_t te_torch_ops_target_version(void) {
  return TORCH_FEATURE_VERSION;
}

/// Why the last te_torch_ops_* call of this thread failed.
TE_TORCH_OPS_API const char *te_torch_ops_last_error(void) {
  return lastError.c_str();
}

/// Registers the kernel of op `ns`::`name` (defined already) for the CPU and
/// CUDA dispatch keys: it runs `entry` of an open module on `backend`
/// (TE_RT_BACKEND_CPU or _CUDA), taking the op's first num_args arguments.
/// `checks` are the recipe's alignment rules: expression, multiple, message.
/// Returns the op's slot (>= 0), or -1 with te_torch_ops_last_error set.
TE_TORCH_OPS_API int32_t te_torch_ops_register(
    const char *ns, const char *name, const te_module_entry *entry,
    int32_t backend, int64_t numChecks, const char *const *checkExprs,
    const int64_t *checkMultiples, const char *const *checkMessages) {
  try {
    if (!ns || !name || !entry)
      fail("te_torch_ops_register: null namespace, name or entry");
    if (backend != TE_RT_BACKEND_CPU && backend != TE_RT_BACKEND_CUDA)
      fail("te_torch_ops_register: backend must be cpu or cuda");
    if (numChecks < 0 || (numChecks > 0 && (!checkExprs || !checkMultiples ||
                                            !checkMessages)))
      fail("te_torch_ops_register: bad checks");
    std::lock_guard<std::mutex> guard(registerLock);
    int slot = numOps.load();
    if (slot >= kMaxOps)
      fail("te_torch_ops_register: more than " + std::to_string(kMaxOps) +
           " te-mlir ops in one process");
    auto op = std::make_unique<Op>();
    op->entryName = te_module_entry_name(entry);
    op->entry = entry;
    op->backend = backend;
    op->numArgs = te_module_entry_num_args(entry);
    for (int64_t i = 0; i < op->numArgs; ++i) {
      const te_module_tensor *t = te_module_entry_arg(entry, i);
      ArgSpec a;
      a.label = te_module_tensor_label(t);
      a.dtypeName = te_module_tensor_dtype(t);
      a.dtype = torchDtype(a.dtypeName);
      a.qtensor = !std::strcmp(a.dtypeName, "qtensor");
      if (a.dtype < 0)
        fail(op->entryName + " " + a.label + ": unknown dtype " + a.dtypeName);
      op->args.push_back(std::move(a));
    }
    // A dim symbol no plain argument's shape names: the caller gives dims.
    for (int64_t k = 0; k < te_module_entry_num_dims(entry); ++k) {
      std::string sym = "d" + std::to_string(k);
      bool bound = false;
      for (int64_t i = 0; i < op->numArgs && !bound; ++i) {
        const te_module_tensor *t = te_module_entry_arg(entry, i);
        if (op->args[size_t(i)].qtensor)
          continue;
        for (int64_t d = 0; d < te_module_tensor_rank(t) && !bound; ++d)
          bound = sym == te_module_tensor_dim(t, d);
      }
      op->takesDims |= !bound;
    }
    int64_t entryResults = te_module_entry_num_results(entry);
    for (int64_t i = 0; i < entryResults; ++i) {
      const te_module_tensor *t = te_module_entry_result(entry, i);
      if (torchDtype(te_module_tensor_dtype(t)) < 0)
        fail(op->entryName + ": result " + std::to_string(i) + " has unknown dtype " +
             te_module_tensor_dtype(t));
      op->results.push_back(t);
      // te.main_grad_of: the argument of the same role holds the result
      int64_t arg = -1;
      if (const char *of = te_module_tensor_role(t, TE_MODULE_ROLE_MAIN_GRAD_OF)) {
        for (int64_t a = 0; a < op->numArgs && arg < 0; ++a) {
          const char *ofArg = te_module_tensor_role(te_module_entry_arg(entry, a),
                                                    TE_MODULE_ROLE_MAIN_GRAD_OF);
          if (ofArg && !std::strcmp(ofArg, of))
            arg = a;
        }
        if (arg < 0 || std::strcmp(op->args[size_t(arg)].dtypeName,
                                   te_module_tensor_dtype(t)))
          fail(op->entryName + ": result " + std::to_string(i) +
               " (te.main_grad_of=" + of + ") has no main_grad argument of its dtype");
      }
      // A backward's new recipe state written over its state argument
      // (module info state_in_place; the Python side reads the same).
      if (arg < 0)
        arg = te_module_entry_result_state_in_place(entry, i);
      op->inPlace.push_back(arg);
    }
    op->numResults = static_cast<int64_t>(
        std::count(op->inPlace.begin(), op->inPlace.end(), int64_t(-1)));
    for (int64_t i = 0; i < numChecks; ++i) {
      if (!checkExprs[i] || !checkMessages[i] || checkMultiples[i] <= 0)
        fail("te_torch_ops_register: bad check " + std::to_string(i));
      op->checks.push_back({checkExprs[i], checkMessages[i], checkMultiples[i]});
    }
    ops[slot] = std::move(op);
    numOps.store(slot + 1);
    implLibrary(ns, "CPU").impl(name, trampolines[slot]);
    implLibrary(ns, "CUDA").impl(name, trampolines[slot]);
    return slot;
  } catch (const std::exception &ex) {
    lastError = ex.what();
    return -1;
  }
}

/// Registers op `slot`'s kernel for op `ns`::`name` too (defined already,
/// with the same schema): both ops then run the same entry and count in the
/// same te_torch_ops_calls. Returns 0, or -1 with te_torch_ops_last_error
/// set.
TE_TORCH_OPS_API int32_t te_torch_ops_alias(int32_t slot, const char *ns,
                                            const char *name) {
  try {
    if (!ns || !name)
      fail("te_torch_ops_alias: null namespace or name");
    std::lock_guard<std::mutex> guard(registerLock);
    if (slot < 0 || slot >= numOps.load() || !ops[slot])
      fail("te_torch_ops_alias: no op in slot " + std::to_string(slot));
    implLibrary(ns, "CPU").impl(name, trampolines[slot]);
    implLibrary(ns, "CUDA").impl(name, trampolines[slot]);
    return 0;
  } catch (const std::exception &ex) {
    lastError = ex.what();
    return -1;
  }
}

/// The next call of op `slot`'s kernel on this thread may overwrite its
/// arguments args[0..n) (te_module_run_donated: donatable ones only, the
/// module client checks); n 0 clears it. Consumed by that call.
TE_TORCH_OPS_API void te_torch_ops_donate_next(int32_t slot, int64_t n,
                                               const int64_t *args) {
  pendingDonation = {};
  if (slot < 0 || slot >= numOps.load() || !ops[slot] || n <= 0 || !args)
    return;
  pendingDonation.slot = slot;
  pendingDonation.flags.assign(size_t(ops[slot]->numArgs), 0);
  for (int64_t i = 0; i < n; ++i)
    if (args[i] >= 0 && args[i] < ops[slot]->numArgs)
      pendingDonation.flags[size_t(args[i])] = 1;
}

/// The arena bytes the last donating call of slot `slot` did not allocate
/// (0: none donated yet; -1: no such slot).
TE_TORCH_OPS_API int64_t te_torch_ops_donated(int32_t slot) {
  if (slot < 0 || slot >= numOps.load() || !ops[slot])
    return -1;
  return ops[slot]->donatedBytes.load();
}

/// How many calls of slot `slot` took their arena from torch's allocator
/// (*allocated) and from the context's small-arena region (*region); -1: no
/// such slot.
TE_TORCH_OPS_API int32_t te_torch_ops_arenas(int32_t slot, int64_t *allocated,
                                             int64_t *region) {
  if (slot < 0 || slot >= numOps.load() || !ops[slot] || !allocated || !region)
    return -1;
  *allocated = ops[slot]->allocatedArenas.load();
  *region = ops[slot]->regionArenas.load();
  return 0;
}

/// How many times the kernel of slot `slot` ran (tests: the C++ path ran).
TE_TORCH_OPS_API int64_t te_torch_ops_calls(int32_t slot) {
  if (slot < 0 || slot >= numOps.load() || !ops[slot])
    return -1;
  return ops[slot]->calls.load();
}
