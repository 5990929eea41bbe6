//===- Comm.h - te-mlir runtime: tensor-parallel communicators --*- C++ -*-===//
//
// The communicator behind the ABI's opaque te_rt_comm (an NCCL communicator
// on the cuda backend, an MPI one on the cpu backend), which contexts it is
// set on, and the two transports Comm.cpp calls once a call's arguments are
// checked: te::rt::mpi (cpu/Mpi.cpp: libmpi loaded with dlopen, with
// TE_RT_HAVE_MPI) and te::rt::nccl (cuda/Nccl.cpp: libnccl loaded with
// dlopen, with TE_RT_HAVE_CUDA). Each transport function takes the call's
// Checker, returns the ABI's 0 / 1 and sets the last error; without its
// transport built in it only says why.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_COMM_H
#define TE_LIB_RUNTIME_COMM_H

#include "Context.h"

#include <cstdint>
#include <utility>
#include <vector>

#ifdef TE_RT_HAVE_MPI
#include <mpi.h>
#endif

struct te_rt_comm {
  /// TE_RT_COMM_NCCL or TE_RT_COMM_MPI.
  int32_t kind = TE_RT_COMM_NCCL;
  int32_t size = 0;
  int32_t rank = 0;
  /// NCCL: the ncclComm_t; destroyed with the wrapper only when `owned`
  /// (te_rt_comm_create_nccl), never when borrowed (te_rt_comm_wrap_nccl).
  void *nccl = nullptr;
  bool owned = false;
#ifdef TE_RT_HAVE_MPI
  /// MPI: the caller's communicator (always borrowed); set by wrap (not
  /// MPI_COMM_NULL here: Open MPI's is the address of a libmpi object, and
  /// the runtime does not link libmpi, cpu/Mpi.cpp).
  MPI_Comm mpi{};
#endif
  /// The (context, group) slots this communicator is set in: destroying it
  /// unsets it there, destroying a context removes that context's entries
  /// (Comm.cpp; both under one lock).
  std::vector<std::pair<te_rt_context *, int32_t>> setOn;
};

/// Unsets every communicator of `ctx` (te_rt_context_destroy): the
/// communicators stay alive (their owner destroys them).
void te_rt_internal_comm_detach(te_rt_context *ctx);

namespace te::rt::mpi {

/// Null when communicators can wrap MPI (built with MPI and libmpi loaded,
/// loading it on the first call), else why not (no MPI built in; dlopen's
/// or dlsym's error).
const char *unavailable();
/// Fills comm (kind, size, rank, mpi) from *mpiComm (an MPI_Comm; NULL:
/// MPI_COMM_WORLD), loading libmpi on the first call. MPI must be
/// initialized and not finalized.
int32_t wrap(const Checker &c, te_rt_comm *comm, const void *mpiComm);
/// The collectives on host buffers; counts > 0, pointers set, checked.
int32_t allGather(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                  const void *send, void *recv, int64_t bytesPerRank);
int32_t reduceScatter(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                      int32_t dtype, const void *send, void *recv,
                      int64_t recvCount);
int32_t allReduce(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                  int32_t dtype, int32_t op, const void *send, void *recv,
                  int64_t count);

} // namespace te::rt::mpi

namespace te::rt::nccl {

/// Null when libnccl is loaded (loading it on the first call), else why
/// not (no CUDA built in; dlopen's or dlsym's error).
const char *unavailable();
int32_t uniqueId(const Checker &c, void *id128);
/// ncclCommInitRank on the current device into comm (owned).
int32_t create(const Checker &c, te_rt_comm *comm, const void *id128,
               int32_t nranks, int32_t rank);
/// Borrows `ncclComm` (an ncclComm_t) into comm.
int32_t wrap(const Checker &c, te_rt_comm *comm, void *ncclComm);
/// ncclCommDestroy of an owned communicator.
void destroy(te_rt_comm *comm);
/// The collectives, queued on the context's stream (device buffers).
int32_t allGather(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                  const void *send, void *recv, int64_t bytesPerRank);
int32_t reduceScatter(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                      int32_t dtype, const void *send, void *recv,
                      int64_t recvCount);
int32_t allReduce(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                  int32_t dtype, int32_t op, const void *send, void *recv,
                  int64_t count);

} // namespace te::rt::nccl

#endif // TE_LIB_RUNTIME_COMM_H
