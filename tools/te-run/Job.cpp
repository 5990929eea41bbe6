//===- Job.cpp - te-run's MPI job (--tp) ------------------------*- C++ -*-===//
//
// te-run --tp N under `mpirun -np N`: joining the job, the errors that end
// it, the gather of results on rank 0 and the runtime's TP communicator
// (MPI on the cpu backend, NCCL on cuda). Without MPI, --tp is an error.
//
//===----------------------------------------------------------------------===//

#include "DimExpr.h"
#include "Driver.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#ifdef TE_RUN_HAVE_MPI
// MPI's C API only (Open MPI's and MPICH's mpi.h would pull in their
// deprecated C++ bindings, which MPI::MPI_C does not link).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace te::run {

TPJob tpJob;

using te::dimexpr::parseUnsigned;

[[noreturn]] void die(const std::string &message) {
#ifdef TE_RUN_HAVE_MPI
  if (tpJob.active) {
    // One rank's error stops every rank (no rank waits in a collective).
    // One write, so that the ranks' lines do not interleave.
    std::string line = "te-run: error: rank " + std::to_string(tpJob.rank) +
                       " of " + std::to_string(tpJob.size) + ": " + message +
                       "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
#endif
  std::cerr << "te-run: error: " << message << "\n";
  std::exit(1);
}

/// Rank 0 prints (stdout, notes) for the job; the other ranks stay quiet.
bool printingRank() { return tpJob.rank == 0; }

void endTP() {
#ifdef TE_RUN_HAVE_MPI
  if (tpJob.active)
    MPI_Finalize();
#endif
}

/// --tp: every rank's `local` bytes, in rank order, on rank 0 (empty on
/// the others); every rank calls it. The ranks' sizes must agree.
std::vector<char> gatherBytes(const std::vector<char> &local,
                              const std::string &what) {
#ifdef TE_RUN_HAVE_MPI
  int64_t bytes = int64_t(local.size());
  std::vector<int64_t> sizes(size_t(tpJob.size));
  MPI_Allgather(&bytes, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T,
                MPI_COMM_WORLD);
  for (int r = 0; r < tpJob.size; ++r)
    if (sizes[size_t(r)] != bytes)
      die(what + ": rank " + std::to_string(r) + " has " +
          str(sizes[size_t(r)]) + " bytes, this rank " + str(bytes));
  if (bytes > INT32_MAX)
    die(what + ": " + str(bytes) +
        " bytes per rank, more than one MPI_Gather moves (2^31 - 1)");
  int64_t total = byteCount(bytes, tpJob.size, what + " of every rank");
  std::vector<char> all;
  if (tpJob.rank == 0)
    all = hostBuffer(total, what + " of every rank");
  MPI_Gather(local.data(), int(bytes), MPI_BYTE, all.data(), int(bytes),
             MPI_BYTE, 0, MPI_COMM_WORLD);
  return all;
#else
  (void)local;
  die(what + ": te-run was built without MPI");
#endif
}

/// --tp: joins the MPI job (one GPU per local rank on cuda), which must
/// have --tp's number of ranks.
void startTP(int &argc, char **&argv) {
#ifndef TE_RUN_HAVE_MPI
  (void)argc, (void)argv;
  die("--tp " + str(opts.tp) +
      ": te-run was built without MPI (install Open MPI or MPICH and "
      "reconfigure)");
#else
  // Before anything may touch CUDA: each rank of a node gets its own GPU.
  if (!std::getenv("CUDA_VISIBLE_DEVICES")) {
    const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (!local)
      local = std::getenv("LOCAL_RANK");
    if (local && parseUnsigned(local))
      setenv("CUDA_VISIBLE_DEVICES", local, 1);
  }
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
    die("--tp: MPI_Init failed");
  MPI_Comm_rank(MPI_COMM_WORLD, &tpJob.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &tpJob.size);
  tpJob.active = true;
  if (tpJob.size != opts.tp)
    die("te-run --tp " + str(opts.tp) + " needs " + str(opts.tp) +
        " MPI ranks, but the job has " + str(tpJob.size) +
        (tpJob.size == 1 ? " (start it with mpirun -np " + str(opts.tp) + ")"
                         : " (mpirun -np " + str(opts.tp) + ")"));
#endif
}

/// The library's te.tp on `e` (the entry run) against --tp.
void checkTP(const Entry &e) {
  const std::string &library = opts.library;
  const char *tp = te_module_entry_get(e.entry, "te.tp");
  std::optional<uint64_t> n = tp ? parseUnsigned(tp) : std::nullopt;
  if (tp && (!n || *n < 1))
    die(library + ": " + e.name + ": te.tp '" + tp +
        "' is not a number of ranks");
  if (opts.tp == 0) {
    if (n && *n > 1)
      die(library + " was compiled for tp=" + tp + " (" + e.name +
          "): run it as mpirun -np " + tp + " te-run " + library + " --tp " +
          tp);
    return;
  }
  if (!tp)
    die(library + " is not compiled for tensor parallelism (te-compile --tp; " +
        e.name + " has no te.tp), but te-run --tp " + str(opts.tp) +
        " was given");
  if (int64_t(*n) != opts.tp)
    die(library + " was compiled for tp=" + tp + ", te-run --tp " +
        str(opts.tp));
}

/// --tp: the context's TP communicator: MPI's (MPI_COMM_WORLD) on the cpu
/// backend, NCCL's on cuda (rank 0's unique id broadcast over MPI).
te_rt_comm *setUpComm(te_rt_context *ctx) {
#ifndef TE_RUN_HAVE_MPI
  (void)ctx;
  die("te-run was built without MPI");
#else
  bool cuda = te_rt_context_backend(ctx) == TE_RT_BACKEND_CUDA;
  if (!te_rt_comm_available(cuda ? TE_RT_COMM_NCCL : TE_RT_COMM_MPI))
    die(cuda ? "--tp on cuda: the runtime cannot make NCCL communicators "
               "(libnccl.so.2 not loadable?)"
             : "--tp on cpu: the runtime was built without MPI (its cpu "
               "backend has no communicator)");
  te_rt_comm *comm = nullptr;
  if (cuda) {
    char id[128] = {};
    if (tpJob.rank == 0 && te_rt_nccl_unique_id(id) != 0)
      die(std::string("--tp: NCCL's unique id: ") + te_rt_last_error());
    MPI_Bcast(id, 128, MPI_BYTE, 0, MPI_COMM_WORLD);
    comm =
        te_rt_comm_create_nccl(ctx, id, int32_t(opts.tp), int32_t(tpJob.rank));
  } else {
    comm = te_rt_comm_wrap_mpi(ctx, nullptr);
  }
  if (!comm)
    die(std::string("--tp: the communicator: ") + te_rt_last_error());
  if (te_rt_comm_size(comm) != opts.tp)
    die("--tp " + str(opts.tp) + ": the communicator has " +
        str(te_rt_comm_size(comm)) + " ranks");
  if (te_rt_context_set_comm(ctx, TE_RT_GROUP_TP, comm) != 0)
    die(std::string("--tp: ") + te_rt_last_error());
  return comm;
#endif
}

} // namespace te::run
