//===- Comm.cpp - te-mlir runtime: communicators and collectives -*- C++ -*-===//
//
// The tensor-parallel calls of the ABI (TERuntime.def, "Tensor
// parallelism"): te_rt_comm_* (create, wrap, destroy, size, rank),
// te_rt_context_set_comm and the collectives te_rt_all_gather,
// te_rt_reduce_scatter and te_rt_all_reduce. Every argument check runs here,
// shared by both transports, before anything touches memory; the call then
// goes to MPI (cpu contexts, cpu/Mpi.cpp) or NCCL (cuda contexts,
// cuda/Nccl.cpp). A collective names the group and the number of ranks the
// entry was compiled for: a missing communicator, or one of another size,
// is an error, never a silent single-rank run; one rank still runs the real
// collective (so that one GPU exercises the NCCL path).
//
//===----------------------------------------------------------------------===//

#include "Comm.h"
#include "Context.h"
#include "cpu/Convert.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <string>

using te::rt::Checker;
using te::rt::overlap;

namespace {

/// Guards every te_rt_comm::setOn and the contexts' comms[] slots that the
/// communicators' lifetimes touch (a comm may be set on contexts that other
/// threads use one at a time).
std::mutex &commLock() {
  static std::mutex m;
  return m;
}

const char *groupName(int32_t group) {
  return group == TE_RT_GROUP_TP ? "tp" : "?";
}

const char *kindName(int32_t kind) {
  return kind == TE_RT_COMM_NCCL ? "NCCL" : "MPI";
}

/// "1 rank", "2 ranks".
std::string ranks(int64_t n) {
  return std::to_string(n) + (n == 1 ? " rank" : " ranks");
}

bool group(const Checker &c, int32_t g) {
  if (g >= 0 && g < TE_RT_GROUP_COUNT)
    return true;
  return c.fail("unknown group " + std::to_string(g) + " (0 tp)");
}

bool reduceOp(const Checker &c, int32_t op) {
  if (op == TE_RT_REDUCE_SUM || op == TE_RT_REDUCE_MAX)
    return true;
  return c.fail("unknown op " + std::to_string(op) + " (0 sum, 1 max)");
}

/// The communicator of `g` on ctx, of the compiled size `nranks`; null with
/// the last error otherwise.
te_rt_comm *groupComm(const Checker &c, te_rt_context *ctx, int32_t g,
                      int32_t nranks) {
  te_rt_comm *comm = ctx->comms[g];
  if (!comm) {
    c.fail(std::string("no communicator for group ") + groupName(g) +
           " on this context (te_rt_context_set_comm); the entry was "
           "compiled for " +
           ranks(nranks));
    return nullptr;
  }
  if (comm->size != nranks) {
    c.fail(std::string("group ") + groupName(g) + " was compiled for " +
           ranks(nranks) + ", the communicator has " + ranks(comm->size));
    return nullptr;
  }
  return comm;
}

/// The checks every collective starts with: ctx, the group, nranks >= 1,
/// and the group's communicator of that size (written to *comm).
bool collective(const Checker &c, te_rt_context *ctx, int32_t g,
                int32_t nranks, te_rt_comm **comm) {
  if (!c.context(ctx) || !group(c, g) || !c.positive("nranks", nranks))
    return false;
  *comm = groupComm(c, ctx, g, nranks);
  return *comm != nullptr;
}

/// A new wrapper of `kind`; null with the last error when out of memory.
te_rt_comm *newComm(const Checker &c, int32_t kind) {
  te_rt_comm *comm = new (std::nothrow) te_rt_comm;
  if (!comm) {
    c.fail("out of host memory");
    return nullptr;
  }
  comm->kind = kind;
  return comm;
}

/// The context backend a communicator of `kind` runs on.
int32_t backendOf(int32_t kind) {
  return kind == TE_RT_COMM_NCCL ? TE_RT_BACKEND_CUDA : TE_RT_BACKEND_CPU;
}

bool backendFor(const Checker &c, const te_rt_context *ctx, int32_t kind) {
  if (ctx->backend == backendOf(kind))
    return true;
  return c.fail(std::string("an ") + kindName(kind) +
                " communicator needs a " +
                te_rt_backend_name(backendOf(kind)) +
                " context (this context runs on " +
                te_rt_backend_name(ctx->backend) + ")");
}

} // namespace

void te_rt_internal_comm_detach(te_rt_context *ctx) {
  std::lock_guard<std::mutex> lock(commLock());
  for (int32_t g = 0; g < TE_RT_GROUP_COUNT; ++g) {
    te_rt_comm *comm = ctx->comms[g];
    if (!comm)
      continue;
    auto &on = comm->setOn;
    on.erase(std::remove(on.begin(), on.end(), std::make_pair(ctx, g)),
             on.end());
    ctx->comms[g] = nullptr;
  }
}

extern "C" {

//===----------------------------------------------------------------------===//
// Communicators
//===----------------------------------------------------------------------===//

int32_t te_rt_comm_available(int32_t kind) {
  Checker c("te_rt_comm_available");
  if (kind == TE_RT_COMM_MPI) {
    if (const char *why = te::rt::mpi::unavailable())
      return c.fail(why), 0;
    return 1;
  }
  if (kind == TE_RT_COMM_NCCL) {
    if (!te_rt_internal_cuda_available())
      return c.fail(std::string("NCCL needs the cuda backend: ") +
                    te_rt_internal_cuda_unavailable_reason()),
             0;
    if (const char *why = te::rt::nccl::unavailable())
      return c.fail(why), 0;
    return 1;
  }
  return c.fail("unknown communicator kind " + std::to_string(kind) +
                " (0 NCCL, 1 MPI)"),
         0;
}

int32_t te_rt_nccl_unique_id(void *id128) {
  Checker c("te_rt_nccl_unique_id");
  if (!c.notNull("id128", id128))
    return 1;
  return te::rt::nccl::uniqueId(c, id128);
}

te_rt_comm *te_rt_comm_create_nccl(te_rt_context *ctx, const void *id128,
                                   int32_t nranks, int32_t rank) {
  Checker c("te_rt_comm_create_nccl");
  if (!c.context(ctx) || !backendFor(c, ctx, TE_RT_COMM_NCCL) ||
      !c.notNull("id128", id128) || !c.positive("nranks", nranks))
    return nullptr;
  if (rank < 0 || rank >= nranks) {
    c.fail("rank must be in [0, nranks = " + std::to_string(nranks) +
           "), got " + std::to_string(rank));
    return nullptr;
  }
  if (ctx->capturing) {
    c.fail("cannot create a communicator while capturing a CUDA graph (call "
           "te_rt_capture_end first)");
    return nullptr;
  }
  te_rt_comm *comm = newComm(c, TE_RT_COMM_NCCL);
  if (!comm)
    return nullptr;
  if (te::rt::nccl::create(c, comm, id128, nranks, rank) != 0) {
    delete comm;
    return nullptr;
  }
  return comm;
}

te_rt_comm *te_rt_comm_wrap_nccl(te_rt_context *ctx, void *nccl_comm) {
  Checker c("te_rt_comm_wrap_nccl");
  if (!c.context(ctx) || !backendFor(c, ctx, TE_RT_COMM_NCCL) ||
      !c.notNull("nccl_comm", nccl_comm))
    return nullptr;
  te_rt_comm *comm = newComm(c, TE_RT_COMM_NCCL);
  if (!comm)
    return nullptr;
  if (te::rt::nccl::wrap(c, comm, nccl_comm) != 0) {
    delete comm;
    return nullptr;
  }
  return comm;
}

te_rt_comm *te_rt_comm_wrap_mpi(te_rt_context *ctx, const void *mpi_comm) {
  Checker c("te_rt_comm_wrap_mpi");
  if (!c.context(ctx) || !backendFor(c, ctx, TE_RT_COMM_MPI))
    return nullptr;
  te_rt_comm *comm = newComm(c, TE_RT_COMM_MPI);
  if (!comm)
    return nullptr;
  if (te::rt::mpi::wrap(c, comm, mpi_comm) != 0) {
    delete comm;
    return nullptr;
  }
  return comm;
}

void te_rt_comm_destroy(te_rt_comm *comm) {
  if (!comm)
    return;
  {
    // Unset it wherever it is still set: a later collective there reports
    // a missing communicator instead of using freed memory.
    std::lock_guard<std::mutex> lock(commLock());
    for (auto &[ctx, g] : comm->setOn)
      if (ctx->comms[g] == comm)
        ctx->comms[g] = nullptr;
    comm->setOn.clear();
  }
  if (comm->kind == TE_RT_COMM_NCCL && comm->owned)
    te::rt::nccl::destroy(comm);
  delete comm;
}

int32_t te_rt_comm_size(const te_rt_comm *comm) {
  Checker c("te_rt_comm_size");
  if (!c.notNull("comm", comm))
    return -1;
  return comm->size;
}

int32_t te_rt_comm_rank(const te_rt_comm *comm) {
  Checker c("te_rt_comm_rank");
  if (!c.notNull("comm", comm))
    return -1;
  return comm->rank;
}

int32_t te_rt_context_set_comm(te_rt_context *ctx, int32_t g,
                               te_rt_comm *comm) {
  Checker c("te_rt_context_set_comm");
  if (!c.context(ctx) || !group(c, g))
    return 1;
  if (comm && !backendFor(c, ctx, comm->kind))
    return 1;
  std::lock_guard<std::mutex> lock(commLock());
  if (te_rt_comm *old = ctx->comms[g]) {
    auto &on = old->setOn;
    on.erase(std::remove(on.begin(), on.end(), std::make_pair(ctx, g)),
             on.end());
  }
  ctx->comms[g] = comm;
  if (comm)
    comm->setOn.emplace_back(ctx, g);
  return 0;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

int32_t te_rt_all_gather(te_rt_context *ctx, int32_t g, int32_t nranks,
                         const void *send, void *recv,
                         int64_t bytes_per_rank) {
  Checker c("te_rt_all_gather");
  te_rt_comm *comm = nullptr;
  int64_t total = 0;
  if (!collective(c, ctx, g, nranks, &comm) ||
      !c.nonNegative("bytes_per_rank", bytes_per_rank) ||
      !c.product("nranks * bytes_per_rank", nranks, bytes_per_rank, 1, &total))
    return 1;
  if (bytes_per_rank == 0)
    return 0;
  if (!c.notNull("send", send) || !c.notNull("recv", recv))
    return 1;
  // In place is NCCL's: this rank's block of recv is send.
  const uint8_t *own =
      static_cast<const uint8_t *>(recv) + int64_t(comm->rank) * bytes_per_rank;
  if (send != own && overlap(send, bytes_per_rank, recv, total))
    return c.fail("send overlaps recv (in place is send == recv + rank * "
                  "bytes_per_rank)"),
           1;
  if (comm->kind == TE_RT_COMM_NCCL)
    return te::rt::nccl::allGather(c, ctx, comm, send, recv, bytes_per_rank);
  return te::rt::mpi::allGather(c, ctx, comm, send, recv, bytes_per_rank);
}

int32_t te_rt_reduce_scatter(te_rt_context *ctx, int32_t g, int32_t nranks,
                             int32_t dtype, const void *send, void *recv,
                             int64_t recv_count) {
  Checker c("te_rt_reduce_scatter");
  te_rt_comm *comm = nullptr;
  int64_t total = 0;
  if (!collective(c, ctx, g, nranks, &comm) || !c.dtype(dtype) ||
      !c.nonNegative("recv_count", recv_count) ||
      !c.product("nranks * recv_count", nranks, recv_count, 4, &total))
    return 1;
  if (recv_count == 0)
    return 0;
  if (!c.notNull("send", send) || !c.notNull("recv", recv))
    return 1;
  int64_t size = te::cpu::dtypeSize(static_cast<te::cpu::DType>(dtype));
  // In place is NCCL's: recv is this rank's block of send.
  const uint8_t *own = static_cast<const uint8_t *>(send) +
                       int64_t(comm->rank) * recv_count * size;
  if (recv != own && overlap(send, total * size, recv, recv_count * size))
    return c.fail("recv overlaps send (in place is recv == send + rank * "
                  "recv_count elements)"),
           1;
  if (comm->kind == TE_RT_COMM_NCCL)
    return te::rt::nccl::reduceScatter(c, ctx, comm, dtype, send, recv,
                                       recv_count);
  return te::rt::mpi::reduceScatter(c, ctx, comm, dtype, send, recv,
                                    recv_count);
}

int32_t te_rt_all_reduce(te_rt_context *ctx, int32_t g, int32_t nranks,
                         int32_t dtype, int32_t op, const void *send,
                         void *recv, int64_t count) {
  Checker c("te_rt_all_reduce");
  te_rt_comm *comm = nullptr;
  if (!collective(c, ctx, g, nranks, &comm) || !c.dtype(dtype) ||
      !reduceOp(c, op) || !c.count("count", count, 4))
    return 1;
  if (count == 0)
    return 0;
  if (!c.notNull("send", send) || !c.notNull("recv", recv))
    return 1;
  int64_t bytes =
      count * te::cpu::dtypeSize(static_cast<te::cpu::DType>(dtype));
  if (send != recv && overlap(send, bytes, recv, bytes))
    return c.fail("send and recv overlap (in place is send == recv)"), 1;
  if (comm->kind == TE_RT_COMM_NCCL)
    return te::rt::nccl::allReduce(c, ctx, comm, dtype, op, send, recv, count);
  return te::rt::mpi::allReduce(c, ctx, comm, dtype, op, send, recv, count);
}

} // extern "C"
