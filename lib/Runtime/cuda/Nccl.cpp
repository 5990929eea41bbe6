//===- Nccl.cpp - te-mlir runtime: the cuda backend's collectives -*- C++ -*-=//
//
// The collectives of a cuda context over NCCL, after Comm.cpp's checks:
// libnccl is loaded at run time with dlopen (TE_RT_NCCL_LIBRARY names it,
// default libnccl.so.2; the runtime never links it), the communicator made
// with ncclCommInitRank on the current device or borrowed from the caller,
// and every collective queued on the context's stream (the stream its
// kernels run on, so that they are ordered with them and captured with them
// in a CUDA graph). All-gathers move ncclUint8 bytes; reductions are
// ncclFloat32 / ncclBfloat16 / ncclFloat16 (NCCL's own arithmetic).
// Compiled in every build: without TE_RT_HAVE_CUDA these only report why.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"
#include "Context.h"

#include <string>

using te::rt::Checker;

#ifdef TE_RT_HAVE_CUDA

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace {

// NCCL's C ABI, as in nccl.h (stable since NCCL 2.0; ncclBfloat16 since
// 2.10). Declared here so that building needs no NCCL headers.
typedef struct ncclComm *ncclComm_t;
typedef struct {
  char internal[128];
} ncclUniqueId;
typedef int ncclResult_t; // ncclSuccess = 0
enum { ncclSuccess = 0, ncclInProgress = 7 };
enum { ncclUint8 = 1, ncclFloat16 = 6, ncclFloat32 = 7, ncclBfloat16 = 9 };
enum { ncclSum = 0, ncclMax = 2 };

/// The NCCL entry points this runtime calls, resolved once.
struct Nccl {
  ncclResult_t (*getUniqueId)(ncclUniqueId *) = nullptr;
  ncclResult_t (*commInitRank)(ncclComm_t *, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*commDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*commCount)(const ncclComm_t, int *) = nullptr;
  ncclResult_t (*commUserRank)(const ncclComm_t, int *) = nullptr;
  ncclResult_t (*allGather)(const void *, void *, size_t, int, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*reduceScatter)(const void *, void *, size_t, int, int,
                                ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*allReduce)(const void *, void *, size_t, int, int,
                            ncclComm_t, cudaStream_t) = nullptr;
  const char *(*getErrorString)(ncclResult_t) = nullptr;
  /// Why libnccl could not be used (empty when it can).
  std::string error;
};

template <typename F> bool resolve(void *lib, const char *name, F *fn,
                                   std::string *error) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!*fn && error->empty())
    *error = std::string("libnccl has no ") + name;
  return *fn != nullptr;
}

const Nccl &nccl() {
  static Nccl n;
  static std::once_flag once;
  std::call_once(once, [] {
    const char *env = std::getenv("TE_RT_NCCL_LIBRARY");
    std::string name = env && *env ? env : "libnccl.so.2";
    void *lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *why = dlerror();
      n.error = "cannot load NCCL (" + name + "): " +
                (why ? why : "dlopen failed") +
                " (set TE_RT_NCCL_LIBRARY to the path of libnccl.so)";
      return;
    }
    std::string err;
    resolve(lib, "ncclGetUniqueId", &n.getUniqueId, &err);
    resolve(lib, "ncclCommInitRank", &n.commInitRank, &err);
    resolve(lib, "ncclCommDestroy", &n.commDestroy, &err);
    resolve(lib, "ncclCommCount", &n.commCount, &err);
    resolve(lib, "ncclCommUserRank", &n.commUserRank, &err);
    resolve(lib, "ncclAllGather", &n.allGather, &err);
    resolve(lib, "ncclReduceScatter", &n.reduceScatter, &err);
    resolve(lib, "ncclAllReduce", &n.allReduce, &err);
    resolve(lib, "ncclGetErrorString", &n.getErrorString, &err);
    if (!err.empty())
      n.error = "cannot use NCCL (" + name + "): " + err;
    // Kept loaded for the life of the process (communicators may outlive
    // any one caller).
  });
  return n;
}

/// The loaded NCCL, or null with the last error.
const Nccl *loaded(const Checker &c) {
  const Nccl &n = nccl();
  if (!n.error.empty()) {
    c.fail(n.error);
    return nullptr;
  }
  return &n;
}

/// "<call> failed: <ncclGetErrorString>" as the last error unless success.
bool ok(const Checker &c, const Nccl &n, ncclResult_t r, const char *what) {
  if (r == ncclSuccess)
    return true;
  const char *msg = n.getErrorString ? n.getErrorString(r) : nullptr;
  return c.fail(std::string(what) + " failed: " +
                (msg ? msg : "NCCL error " + std::to_string(r)));
}

int ncclType(int32_t dtype) {
  return dtype == TE_RT_DTYPE_F32    ? ncclFloat32
         : dtype == TE_RT_DTYPE_BF16 ? ncclBfloat16
                                     : ncclFloat16;
}

cudaStream_t streamOf(const te_rt_context *ctx) {
  return static_cast<cudaStream_t>(ctx->stream);
}

ncclComm_t handle(const te_rt_comm *comm) {
  return static_cast<ncclComm_t>(comm->nccl);
}

} // namespace

namespace te::rt::nccl {

const char *unavailable() {
  const Nccl &n = ::nccl();
  return n.error.empty() ? nullptr : n.error.c_str();
}

int32_t uniqueId(const Checker &c, void *id128) {
  const Nccl *n = loaded(c);
  if (!n)
    return 1;
  ncclUniqueId id;
  if (!ok(c, *n, n->getUniqueId(&id), "ncclGetUniqueId"))
    return 1;
  std::memcpy(id128, id.internal, sizeof(id.internal));
  return 0;
}

int32_t create(const Checker &c, te_rt_comm *comm, const void *id128,
               int32_t nranks, int32_t rank) {
  const Nccl *n = loaded(c);
  if (!n)
    return 1;
  ncclUniqueId id;
  std::memcpy(id.internal, id128, sizeof(id.internal));
  ncclComm_t h = nullptr;
  if (!ok(c, *n, n->commInitRank(&h, nranks, id, rank), "ncclCommInitRank"))
    return 1;
  comm->nccl = h;
  comm->owned = true;
  comm->size = nranks;
  comm->rank = rank;
  return 0;
}

int32_t wrap(const Checker &c, te_rt_comm *comm, void *ncclComm) {
  const Nccl *n = loaded(c);
  if (!n)
    return 1;
  auto h = static_cast<ncclComm_t>(ncclComm);
  int size = 0, rank = 0;
  if (!ok(c, *n, n->commCount(h, &size), "ncclCommCount") ||
      !ok(c, *n, n->commUserRank(h, &rank), "ncclCommUserRank"))
    return 1;
  comm->nccl = h;
  comm->owned = false;
  comm->size = size;
  comm->rank = rank;
  return 0;
}

void destroy(te_rt_comm *comm) {
  const Nccl &n = ::nccl();
  if (n.error.empty() && comm->nccl)
    n.commDestroy(handle(comm));
  comm->nccl = nullptr;
}

int32_t allGather(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                  const void *send, void *recv, int64_t bytesPerRank) {
  const Nccl *n = loaded(c);
  if (!n)
    return 1;
  return ok(c, *n,
            n->allGather(send, recv, static_cast<size_t>(bytesPerRank),
                         ncclUint8, handle(comm), streamOf(ctx)),
            "ncclAllGather")
             ? 0
             : 1;
}

int32_t reduceScatter(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                      int32_t dtype, const void *send, void *recv,
                      int64_t recvCount) {
  const Nccl *n = loaded(c);
  if (!n)
    return 1;
  return ok(c, *n,
            n->reduceScatter(send, recv, static_cast<size_t>(recvCount),
                             ncclType(dtype), ncclSum, handle(comm),
                             streamOf(ctx)),
            "ncclReduceScatter")
             ? 0
             : 1;
}

int32_t allReduce(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                  int32_t dtype, int32_t op, const void *send, void *recv,
                  int64_t count) {
  const Nccl *n = loaded(c);
  if (!n)
    return 1;
  return ok(c, *n,
            n->allReduce(send, recv, static_cast<size_t>(count),
                         ncclType(dtype),
                         op == TE_RT_REDUCE_MAX ? ncclMax : ncclSum,
                         handle(comm), streamOf(ctx)),
            "ncclAllReduce")
             ? 0
             : 1;
}

} // namespace te::rt::nccl

#else // !TE_RT_HAVE_CUDA

namespace te::rt::nccl {

namespace {
const char *kNoCuda =
    "NCCL needs the cuda backend, and this runtime was built without CUDA "
    "(TE_ENABLE_CUDA=OFF)";
}

const char *unavailable() { return kNoCuda; }
int32_t uniqueId(const Checker &c, void *) { return c.fail(kNoCuda), 1; }
int32_t create(const Checker &c, te_rt_comm *, const void *, int32_t,
               int32_t) {
  return c.fail(kNoCuda), 1;
}
int32_t wrap(const Checker &c, te_rt_comm *, void *) {
  return c.fail(kNoCuda), 1;
}
void destroy(te_rt_comm *) {}
int32_t allGather(const Checker &c, te_rt_context *, te_rt_comm *,
                  const void *, void *, int64_t) {
  return c.fail(kNoCuda), 1;
}
int32_t reduceScatter(const Checker &c, te_rt_context *, te_rt_comm *, int32_t,
                      const void *, void *, int64_t) {
  return c.fail(kNoCuda), 1;
}
int32_t allReduce(const Checker &c, te_rt_context *, te_rt_comm *, int32_t,
                  int32_t, const void *, void *, int64_t) {
  return c.fail(kNoCuda), 1;
}

} // namespace te::rt::nccl

#endif // TE_RT_HAVE_CUDA
