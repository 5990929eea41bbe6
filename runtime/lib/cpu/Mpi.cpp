//===- Mpi.cpp - te-mlir runtime: the cpu backend's collectives -*- C++ -*-===//
//
// The collectives of a cpu context over MPI, after Comm.cpp's checks, on
// host buffers: all-gathers move bytes (MPI_Allgather of MPI_BYTE, in
// pieces past 2^30 bytes with a resized datatype), reductions are MPI_FLOAT
// (MPI_Reduce_scatter_block, MPI_Allreduce, in pieces past 2^30
// elements): f32 buffers directly, bf16 and f16 converted into the
// context's fp32 staging buffers, reduced in fp32 and rounded once, to
// nearest even, back. The communicator is the
// caller's (borrowed): its error handler is left as it is.
// Compiled in every build: without TE_RT_HAVE_MPI these only report why.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"
#include "Context.h"
#include "cpu/Convert.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

using te::rt::Checker;

#ifdef TE_RT_HAVE_MPI

namespace {

using te::cpu::DType;

/// The largest count one MPI call takes here: 2^30 (an int, with room), or
/// TE_RT_MPI_MAX_COUNT when set (read once; the tests make it small to run
/// the chunked paths on small buffers).
int64_t maxCount() {
  static const int64_t n = [] {
    const char *env = std::getenv("TE_RT_MPI_MAX_COUNT");
    long long v = env ? std::atoll(env) : 0;
    return v > 0 && v <= (int64_t(1) << 30) ? int64_t(v) : int64_t(1) << 30;
  }();
  return n;
}

/// "MPI_X failed: <MPI's message>" as the last error when rc is not
/// MPI_SUCCESS (with the default MPI_ERRORS_ARE_FATAL handler MPI aborts
/// first; the checks before every call keep bad input from reaching it).
bool ok(const Checker &c, int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return true;
  char msg[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return c.fail(std::string(what) + " failed: " + msg);
}

MPI_Op mpiOp(int32_t op) { return op == TE_RT_REDUCE_MAX ? MPI_MAX : MPI_SUM; }

/// The fp32 view of `n` elements of `t` at p: p itself for f32, else its
/// conversion into staging slot `slot`.
float *asFloat(te_rt_context *ctx, int slot, DType t, const void *p,
               int64_t n) {
  if (t == DType::F32)
    return const_cast<float *>(static_cast<const float *>(p));
  float *s = ctx->scratch(slot, n);
  te::cpu::toFloat(t, p, n, s);
  return s;
}

/// MPI_Allreduce of n floats in place, in calls of at most maxCount().
bool allReduceFloats(const Checker &c, MPI_Comm comm, MPI_Op op, float *buf,
                     int64_t n) {
  for (int64_t off = 0; off < n; off += maxCount()) {
    int len = static_cast<int>(std::min(maxCount(), n - off));
    if (!ok(c,
            MPI_Allreduce(MPI_IN_PLACE, buf + off, len, MPI_FLOAT, op, comm),
            "MPI_Allreduce"))
      return false;
  }
  return true;
}

} // namespace

namespace te::rt::mpi {

const char *unavailable() { return nullptr; }

int32_t wrap(const Checker &c, te_rt_comm *comm, const void *mpiComm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return c.fail(finalized ? "MPI is finalized (MPI_Finalize was called)"
                            : "MPI is not initialized (call MPI_Init "
                              "first)"),
           1;
  MPI_Comm m = mpiComm ? *static_cast<const MPI_Comm *>(mpiComm)
                       : MPI_COMM_WORLD;
  if (m == MPI_COMM_NULL)
    return c.fail("*mpi_comm is MPI_COMM_NULL"), 1;
  int size = 0, rank = 0;
  if (!ok(c, MPI_Comm_size(m, &size), "MPI_Comm_size") ||
      !ok(c, MPI_Comm_rank(m, &rank), "MPI_Comm_rank"))
    return 1;
  comm->mpi = m;
  comm->size = size;
  comm->rank = rank;
  return 0;
}

int32_t allGather(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                  const void *send, void *recv, int64_t bytesPerRank) {
  (void)ctx;
  auto *out = static_cast<uint8_t *>(recv);
  bool inPlace = send == out + int64_t(comm->rank) * bytesPerRank;
  if (bytesPerRank <= maxCount()) {
    int n = static_cast<int>(bytesPerRank);
    return ok(c,
              MPI_Allgather(inPlace ? MPI_IN_PLACE : send, n, MPI_BYTE, recv,
                            n, MPI_BYTE, comm->mpi),
              "MPI_Allgather")
               ? 0
               : 1;
  }
  // Past an int's count: the same bytes in pieces of each rank's block, the
  // receive type a piece whose extent is a whole block (rank i's piece
  // lands at recv + i * bytesPerRank + off).
  for (int64_t off = 0; off < bytesPerRank; off += maxCount()) {
    int len = static_cast<int>(std::min(maxCount(), bytesPerRank - off));
    MPI_Datatype piece = MPI_DATATYPE_NULL, block = MPI_DATATYPE_NULL;
    bool fine =
        ok(c, MPI_Type_contiguous(len, MPI_BYTE, &piece),
           "MPI_Type_contiguous") &&
        ok(c,
           MPI_Type_create_resized(piece, 0, static_cast<MPI_Aint>(bytesPerRank),
                                   &block),
           "MPI_Type_create_resized") &&
        ok(c, MPI_Type_commit(&block), "MPI_Type_commit");
    // In place: this rank's piece is already where it belongs.
    fine = fine &&
           ok(c,
              MPI_Allgather(inPlace ? MPI_IN_PLACE
                                    : static_cast<const uint8_t *>(send) + off,
                            len, MPI_BYTE, out + off, 1, block, comm->mpi),
              "MPI_Allgather");
    if (piece != MPI_DATATYPE_NULL)
      MPI_Type_free(&piece);
    if (block != MPI_DATATYPE_NULL)
      MPI_Type_free(&block);
    if (!fine)
      return 1;
  }
  return 0;
}

int32_t reduceScatter(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                      int32_t dtype, const void *send, void *recv,
                      int64_t recvCount) {
  return guarded(c, [&] {
    auto t = static_cast<DType>(dtype);
    int64_t size = comm->size, n = size * recvCount;
    const float *in = asFloat(ctx, 0, t, send, n);
    // The result in staging (slot 1), then copied or rounded into recv:
    // recv may be this rank's block of send (in place, NCCL's convention).
    float *res = ctx->scratch(1, recvCount);
    if (recvCount <= maxCount()) {
      if (!ok(c,
              MPI_Reduce_scatter_block(in, res, static_cast<int>(recvCount),
                                       MPI_FLOAT, MPI_SUM, comm->mpi),
              "MPI_Reduce_scatter_block"))
        throw te::rt::Reported();
    } else {
      // Past an int's count: the same piece of every rank's block packed
      // together (slot 2), reduce-scattered, piece by piece.
      int64_t piece = maxCount();
      float *pack = ctx->scratch(2, size * piece);
      for (int64_t off = 0; off < recvCount; off += piece) {
        int64_t len = std::min(piece, recvCount - off);
        for (int64_t r = 0; r < size; ++r)
          std::memcpy(pack + r * len, in + r * recvCount + off,
                      static_cast<size_t>(len) * 4);
        if (!ok(c,
                MPI_Reduce_scatter_block(pack, res + off, static_cast<int>(len),
                                         MPI_FLOAT, MPI_SUM, comm->mpi),
                "MPI_Reduce_scatter_block"))
          throw te::rt::Reported();
      }
    }
    if (t == DType::F32)
      std::memcpy(recv, res, static_cast<size_t>(recvCount) * 4);
    else
      te::cpu::fromFloat(t, res, recvCount, recv);
  });
}

int32_t allReduce(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                  int32_t dtype, int32_t op, const void *send, void *recv,
                  int64_t count) {
  return guarded(c, [&] {
    auto t = static_cast<DType>(dtype);
    MPI_Op o = mpiOp(op);
    if (t == DType::F32) {
      if (send != recv)
        std::memcpy(recv, send, static_cast<size_t>(count) * 4);
      if (!allReduceFloats(c, comm->mpi, o, static_cast<float *>(recv), count))
        throw te::rt::Reported();
      return;
    }
    float *buf = asFloat(ctx, 0, t, send, count);
    if (!allReduceFloats(c, comm->mpi, o, buf, count))
      throw te::rt::Reported();
    te::cpu::fromFloat(t, buf, count, recv);
  });
}

} // namespace te::rt::mpi

#else // !TE_RT_HAVE_MPI

namespace te::rt::mpi {

const char *unavailable() {
  return "this runtime was built without MPI (TE_ENABLE_MPI=OFF or no MPI "
         "found by CMake)";
}

int32_t wrap(const Checker &c, te_rt_comm *, const void *) {
  return c.fail(unavailable()), 1;
}
int32_t allGather(const Checker &c, te_rt_context *, te_rt_comm *,
                  const void *, void *, int64_t) {
  return c.fail(unavailable()), 1;
}
int32_t reduceScatter(const Checker &c, te_rt_context *, te_rt_comm *, int32_t,
                      const void *, void *, int64_t) {
  return c.fail(unavailable()), 1;
}
int32_t allReduce(const Checker &c, te_rt_context *, te_rt_comm *, int32_t,
                  int32_t, const void *, void *, int64_t) {
  return c.fail(unavailable()), 1;
}

} // namespace te::rt::mpi

#endif // TE_RT_HAVE_MPI
