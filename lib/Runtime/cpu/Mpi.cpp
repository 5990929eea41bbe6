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
// libmpi is loaded at run time with dlopen when a communicator first wraps
// an MPI one (TE_RT_MPI_LIBRARY names it, default Open MPI's libmpi.so.40;
// the runtime never links it, so a process that does not use MPI never maps
// it): mpi.h gives the types, and Open MPI's predefined handles, addresses
// of its global objects (MPI_COMM_WORLD is &ompi_mpi_comm_world), are
// resolved with dlsym like the functions (where libmpi's own code finds
// them: resolveHandle). A process that runs MPI has libmpi loaded already,
// and dlopen of its soname returns that copy.
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

#include <dlfcn.h>

#include <mutex>

namespace {

using te::cpu::DType;

/// The libmpi dlopen'ed without TE_RT_MPI_LIBRARY: the soname of the MPI
/// whose mpi.h this was built with.
#if defined(OPEN_MPI)
constexpr const char *kDefaultLibrary = "libmpi.so.40"; // Open MPI 3.0 - 5
#elif defined(MPICH_VERSION)
constexpr const char *kDefaultLibrary = "libmpi.so.12"; // MPICH ABI
#else
constexpr const char *kDefaultLibrary = "libmpi.so";
#endif

/// The MPI entry points and predefined handles this runtime uses, resolved
/// once (decltype of a function names its type without referring to it).
struct Mpi {
  decltype(&MPI_Initialized) initialized = nullptr;
  decltype(&MPI_Finalized) finalized = nullptr;
  decltype(&MPI_Comm_size) commSize = nullptr;
  decltype(&MPI_Comm_rank) commRank = nullptr;
  decltype(&MPI_Error_string) errorString = nullptr;
  decltype(&MPI_Allgather) allgather = nullptr;
  decltype(&MPI_Allreduce) allreduce = nullptr;
  decltype(&MPI_Reduce_scatter_block) reduceScatterBlock = nullptr;
  decltype(&MPI_Type_contiguous) typeContiguous = nullptr;
  decltype(&MPI_Type_create_resized) typeCreateResized = nullptr;
  decltype(&MPI_Type_commit) typeCommit = nullptr;
  decltype(&MPI_Type_free) typeFree = nullptr;
  MPI_Comm commWorld{}, commNull{};
  MPI_Datatype byte{}, float32{}, datatypeNull{};
  MPI_Op sum{}, max{};
  /// The library dlopen'ed (TE_RT_MPI_LIBRARY or kDefaultLibrary).
  std::string name;
  /// Why libmpi could not be used (empty when it can).
  std::string error;
};

/// dlsym of `name` in libmpi into *out (a function pointer); the first
/// missing one is the error.
template <typename T>
void resolve(void *lib, const char *name, T *out, std::string *error) {
  void *p = dlsym(lib, name);
  if (!p && error->empty())
    *error = std::string("libmpi has no ") + name;
  *out = reinterpret_cast<T>(p);
}

#if defined(OPEN_MPI)
/// Open MPI's predefined handle `name` (OMPI_PREDEFINED_GLOBAL: MPI_COMM_WORLD
/// is (MPI_Comm)&ompi_mpi_comm_world) at the address libmpi's own code uses.
/// A program linked with libmpi that names MPI_COMM_WORLD holds a copy of
/// the object (a copy relocation), and libmpi binds to that copy, not to its
/// own: so, as the dynamic loader resolves libmpi's references, the global
/// scope first, then libmpi.
template <typename H>
void resolveHandle(void *lib, const char *name, H *out, std::string *error) {
  void *p = dlsym(RTLD_DEFAULT, name);
  if (!p)
    p = dlsym(lib, name);
  if (!p && error->empty())
    *error = std::string("libmpi has no ") + name;
  *out = reinterpret_cast<H>(p);
}
#endif

const Mpi &mpiLib() {
  static Mpi m;
  static std::once_flag once;
  std::call_once(once, [] {
    const char *env = std::getenv("TE_RT_MPI_LIBRARY");
    m.name = env && *env ? env : kDefaultLibrary;
    void *lib = dlopen(m.name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *why = dlerror();
      m.error = "cannot load MPI (" + m.name +
                "): " + (why ? why : "dlopen failed") +
                " (set TE_RT_MPI_LIBRARY to the path of the libmpi.so the "
                "process runs with)";
      return;
    }
    std::string err;
    resolve(lib, "MPI_Initialized", &m.initialized, &err);
    resolve(lib, "MPI_Finalized", &m.finalized, &err);
    resolve(lib, "MPI_Comm_size", &m.commSize, &err);
    resolve(lib, "MPI_Comm_rank", &m.commRank, &err);
    resolve(lib, "MPI_Error_string", &m.errorString, &err);
    resolve(lib, "MPI_Allgather", &m.allgather, &err);
    resolve(lib, "MPI_Allreduce", &m.allreduce, &err);
    resolve(lib, "MPI_Reduce_scatter_block", &m.reduceScatterBlock, &err);
    resolve(lib, "MPI_Type_contiguous", &m.typeContiguous, &err);
    resolve(lib, "MPI_Type_create_resized", &m.typeCreateResized, &err);
    resolve(lib, "MPI_Type_commit", &m.typeCommit, &err);
    resolve(lib, "MPI_Type_free", &m.typeFree, &err);
#if defined(OPEN_MPI)
    resolveHandle(lib, "ompi_mpi_comm_world", &m.commWorld, &err);
    resolveHandle(lib, "ompi_mpi_comm_null", &m.commNull, &err);
    resolveHandle(lib, "ompi_mpi_byte", &m.byte, &err);
    resolveHandle(lib, "ompi_mpi_float", &m.float32, &err);
    resolveHandle(lib, "ompi_mpi_datatype_null", &m.datatypeNull, &err);
    resolveHandle(lib, "ompi_mpi_op_sum", &m.sum, &err);
    resolveHandle(lib, "ompi_mpi_op_max", &m.max, &err);
#else
    // MPICH and its derivatives: the handles are integer constants.
    m.commWorld = MPI_COMM_WORLD;
    m.commNull = MPI_COMM_NULL;
    m.byte = MPI_BYTE;
    m.float32 = MPI_FLOAT;
    m.datatypeNull = MPI_DATATYPE_NULL;
    m.sum = MPI_SUM;
    m.max = MPI_MAX;
#endif
    if (!err.empty())
      m.error = "cannot use MPI (" + m.name + "): " + err;
    // Kept loaded for the life of the process (communicators may outlive
    // any one caller).
  });
  return m;
}

/// The loaded MPI, or null with the last error.
const Mpi *loaded(const Checker &c) {
  const Mpi &m = mpiLib();
  if (!m.error.empty()) {
    c.fail(m.error);
    return nullptr;
  }
  return &m;
}

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
bool ok(const Checker &c, const Mpi &m, int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return true;
  char msg[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  m.errorString(rc, msg, &len);
  return c.fail(std::string(what) + " failed: " + msg);
}

MPI_Op mpiOp(const Mpi &m, int32_t op) {
  return op == TE_RT_REDUCE_MAX ? m.max : m.sum;
}

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
bool allReduceFloats(const Checker &c, const Mpi &m, MPI_Comm comm, MPI_Op op,
                     float *buf, int64_t n) {
  for (int64_t off = 0; off < n; off += maxCount()) {
    int len = static_cast<int>(std::min(maxCount(), n - off));
    if (!ok(c, m,
            m.allreduce(MPI_IN_PLACE, buf + off, len, m.float32, op, comm),
            "MPI_Allreduce"))
      return false;
  }
  return true;
}

} // namespace

namespace te::rt::mpi {

const char *unavailable() {
  const Mpi &m = mpiLib();
  return m.error.empty() ? nullptr : m.error.c_str();
}

int32_t wrap(const Checker &c, te_rt_comm *comm, const void *mpiComm) {
  const Mpi *m = loaded(c);
  if (!m)
    return 1;
  int initialized = 0, finalized = 0;
  m->initialized(&initialized);
  m->finalized(&finalized);
  if (finalized)
    return c.fail("MPI is finalized (MPI_Finalize was called)"), 1;
  // Not initialized: MPI_Init not called yet, or called in another MPI
  // than the one loaded here.
  if (!initialized)
    return c.fail("MPI is not initialized in " + m->name +
                  " (call MPI_Init first, or set TE_RT_MPI_LIBRARY to the "
                  "libmpi the process initialized)"),
           1;
  MPI_Comm h = mpiComm ? *static_cast<const MPI_Comm *>(mpiComm) : m->commWorld;
  if (h == m->commNull)
    return c.fail("*mpi_comm is MPI_COMM_NULL"), 1;
  int size = 0, rank = 0;
  if (!ok(c, *m, m->commSize(h, &size), "MPI_Comm_size") ||
      !ok(c, *m, m->commRank(h, &rank), "MPI_Comm_rank"))
    return 1;
  comm->mpi = h;
  comm->size = size;
  comm->rank = rank;
  return 0;
}

// The collectives run on communicators wrap made: libmpi is loaded.

int32_t allGather(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                  const void *send, void *recv, int64_t bytesPerRank) {
  (void)ctx;
  const Mpi &m = mpiLib();
  auto *out = static_cast<uint8_t *>(recv);
  bool inPlace = send == out + int64_t(comm->rank) * bytesPerRank;
  if (bytesPerRank <= maxCount()) {
    int n = static_cast<int>(bytesPerRank);
    return ok(c, m,
              m.allgather(inPlace ? MPI_IN_PLACE : send, n, m.byte, recv, n,
                          m.byte, comm->mpi),
              "MPI_Allgather")
               ? 0
               : 1;
  }
  // Past an int's count: the same bytes in pieces of each rank's block, the
  // receive type a piece whose extent is a whole block (rank i's piece
  // lands at recv + i * bytesPerRank + off).
  for (int64_t off = 0; off < bytesPerRank; off += maxCount()) {
    int len = static_cast<int>(std::min(maxCount(), bytesPerRank - off));
    MPI_Datatype piece = m.datatypeNull, block = m.datatypeNull;
    bool fine = ok(c, m, m.typeContiguous(len, m.byte, &piece),
                   "MPI_Type_contiguous") &&
                ok(c, m,
                   m.typeCreateResized(
                       piece, 0, static_cast<MPI_Aint>(bytesPerRank), &block),
                   "MPI_Type_create_resized") &&
                ok(c, m, m.typeCommit(&block), "MPI_Type_commit");
    // In place: this rank's piece is already where it belongs.
    fine = fine &&
           ok(c, m,
              m.allgather(inPlace ? MPI_IN_PLACE
                                  : static_cast<const uint8_t *>(send) + off,
                          len, m.byte, out + off, 1, block, comm->mpi),
              "MPI_Allgather");
    if (piece != m.datatypeNull)
      m.typeFree(&piece);
    if (block != m.datatypeNull)
      m.typeFree(&block);
    if (!fine)
      return 1;
  }
  return 0;
}

int32_t reduceScatter(const Checker &c, te_rt_context *ctx, te_rt_comm *comm,
                      int32_t dtype, const void *send, void *recv,
                      int64_t recvCount) {
  const Mpi &m = mpiLib();
  return guarded(c, [&] {
    auto t = static_cast<DType>(dtype);
    int64_t size = comm->size, n = size * recvCount;
    const float *in = asFloat(ctx, 0, t, send, n);
    // The result in staging (slot 1), then copied or rounded into recv:
    // recv may be this rank's block of send (in place, NCCL's convention).
    float *res = ctx->scratch(1, recvCount);
    if (recvCount <= maxCount()) {
      if (!ok(c, m,
              m.reduceScatterBlock(in, res, static_cast<int>(recvCount),
                                   m.float32, m.sum, comm->mpi),
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
        if (!ok(c, m,
                m.reduceScatterBlock(pack, res + off, static_cast<int>(len),
                                     m.float32, m.sum, comm->mpi),
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
  const Mpi &m = mpiLib();
  return guarded(c, [&] {
    auto t = static_cast<DType>(dtype);
    MPI_Op o = mpiOp(m, op);
    if (t == DType::F32) {
      if (send != recv)
        std::memcpy(recv, send, static_cast<size_t>(count) * 4);
      if (!allReduceFloats(c, m, comm->mpi, o, static_cast<float *>(recv),
                           count))
        throw te::rt::Reported();
      return;
    }
    float *buf = asFloat(ctx, 0, t, send, count);
    if (!allReduceFloats(c, m, comm->mpi, o, buf, count))
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
