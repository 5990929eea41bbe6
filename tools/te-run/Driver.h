//===- Driver.h - te-run's driver library -----------------------*- C++ -*-===//
//
// te-run by job: the command line (Args.cpp), the MPI job of --tp and its
// communicator (Job.cpp), host tensors and .npy files (Tensors.cpp), the
// inputs given or generated (Inputs.cpp), calls of an entry (Runner.cpp)
// and the flow that strings them together (Driver.cpp). te-run.cpp is
// main() over it. It calls the runtime's C API only (te/Runtime).
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_RUN_DRIVER_H
#define TE_TOOLS_TE_RUN_DRIVER_H

#include "TP.h"
#include "te/Runtime/TEModule.h"
#include "te/Runtime/TERuntime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace te::run {

using te::tp::Shard;

/// Command-line options (see kUsage in Args.cpp).
struct Options {
  std::string library, entry, step, inputsDir, gradsDir, outputsDir, backend;
  std::vector<std::string> inputs;
  int64_t randomSeed = -1;
  uint64_t rngSeed = 0; ///< the context's seed (NVFP4 stochastic rounding)
  unsigned bench = 0;
  int64_t tp = 0; ///< --tp N (0: not a tensor-parallel run)
  bool list = false, graph = false, callerMemory = false, donate = false;
};
extern Options opts;

/// The MPI job of --tp: this process's rank of `size` (active once MPI is
/// initialized).
struct TPJob {
  bool active = false;
  int rank = 0, size = 1;
};
extern TPJob tpJob;

//===----------------------------------------------------------------------===//
// Args.cpp
//===----------------------------------------------------------------------===//

/// Parses argv into `opts`; exits with the usage on errors.
void parseArguments(int argc, char **argv);

//===----------------------------------------------------------------------===//
// Job.cpp
//===----------------------------------------------------------------------===//

/// Prints te-run's error and exits (under --tp: ends the whole MPI job).
[[noreturn]] void die(const std::string &message);

/// Rank 0 prints (stdout, notes) for the job; the other ranks stay quiet.
bool printingRank();

/// --tp: joins the MPI job (one GPU per local rank on cuda), which must
/// have --tp's number of ranks.
void startTP(int &argc, char **&argv);

/// --tp: leaves the MPI job, if te-run joined one.
void endTP();

/// --tp: every rank's `local` bytes, in rank order, on rank 0 (empty on
/// the others); every rank calls it. The ranks' sizes must agree.
std::vector<char> gatherBytes(const std::vector<char> &local,
                              const std::string &what);

struct Entry;

/// The library's te.tp on `e` (the entry run) against --tp.
void checkTP(const Entry &e);

/// --tp: the context's TP communicator: MPI's (MPI_COMM_WORLD) on the cpu
/// backend, NCCL's on cuda (rank 0's unique id broadcast over MPI).
te_rt_comm *setUpComm(te_rt_context *ctx);

//===----------------------------------------------------------------------===//
// Tensors.cpp
//===----------------------------------------------------------------------===//

std::string str(int64_t v);

struct Tensor {
  std::string dtype; ///< float32 / bfloat16 / float16 / qtensor
  /// The (logical) shape; empty for a quantized tensor read from a file,
  /// whose bytes are checked once the dims are known.
  std::vector<int64_t> shape;
  std::vector<char> data;
};

int64_t elementBytes(const std::string &dtype);
std::string shapeString(const std::vector<int64_t> &shape);

/// The elements of `shape`, checked for overflow; `what` names the tensor.
int64_t elementCount(const std::vector<int64_t> &shape,
                     const std::string &what);

/// n * size bytes, checked.
int64_t byteCount(int64_t n, int64_t size, const std::string &what);

/// A zeroed host buffer of `bytes` for `what`: refused (clearly) when it
/// cannot exist on this machine, and allocation failure is reported.
std::vector<char> hostBuffer(int64_t bytes, const std::string &what);

/// Dies with the module client's message when `rc` is a failure.
void check(int32_t rc);

/// A role of an argument or result (TE_MODULE_ROLE_*), if it has it.
std::optional<std::string> roleOf(const te_module_tensor *t, int32_t role);

/// The roles that name an argument (--input NAME) or mark a result.
inline const std::pair<int32_t, const char *> kNamingRoles[] = {
    {TE_MODULE_ROLE_SAVED, "te.saved"},
    {TE_MODULE_ROLE_GRAD_OF, "te.grad_of"},
    {TE_MODULE_ROLE_STATE, "te.state"},
    {TE_MODULE_ROLE_CACHED_WEIGHT, "te.cached_weight"},
    {TE_MODULE_ROLE_MAIN_GRAD_OF, "te.main_grad_of"},
    {TE_MODULE_ROLE_WGRAD_STASH, "te.wgrad_stash"}};

/// One entry of the library (te_module_entry) with its counts.
struct Entry {
  const te_module_entry *entry = nullptr;
  std::string name;
  size_t numArgs = 0, numResults = 0, numDims = 0;

  explicit Entry(const te_module_entry *e)
      : entry(e), name(te_module_entry_name(e)),
        numArgs(size_t(te_module_entry_num_args(e))),
        numResults(size_t(te_module_entry_num_results(e))),
        numDims(size_t(te_module_entry_num_dims(e))) {}
  const te_module_tensor *arg(size_t i) const {
    return te_module_entry_arg(entry, int64_t(i));
  }
  const te_module_tensor *result(size_t i) const {
    return te_module_entry_result(entry, int64_t(i));
  }
  std::string argLabel(size_t i) const {
    return te_module_tensor_label(arg(i));
  }
};

std::string dtypeOf(const te_module_tensor *t);

/// The te.tp_shard of an argument or result (`what`) under --tp;
/// Shard::None without --tp or without the field (a per-rank tensor).
Shard shardOf(const te_module_tensor *t, const std::string &what, bool isArg);

/// This rank's part of the GLOBAL value `t` of an argument (`what`) with
/// te.tp_shard `shard`: its block for the split shards, all of it else.
Tensor localPart(Tensor t, Shard shard, const std::string &what);

/// The GLOBAL shape of a local one of a tensor (`what`) with `shard`.
std::vector<int64_t> globalShapeOf(const std::vector<int64_t> &local,
                                   Shard shard, const std::string &what);

/// The values of the dims symbols `d<k>` from the inputs, checked.
std::vector<int64_t> bindDims(const Entry &e, const std::vector<Tensor> &in);

/// The shape of `t` at `dims` (null: a shape without dim symbols).
std::vector<int64_t> shapeOf(const te_module_tensor *t, const int64_t *dims);

/// The bytes of the buffer of `t` at `dims`.
int64_t bufferBytes(const te_module_tensor *t,
                    const std::vector<int64_t> &dims);

/// A tensor of `dtype` from the .npy file at `path`, checked.
Tensor loadNpy(const std::string &path, const std::string &dtype);

/// DIR/STEM.npy or DIR/STEM.bf16.npy, whichever exists; "" if none.
std::string findNpy(const std::string &dir, const std::string &stem);

/// Writes result `t` (`what`) as `stem` in `dir`. Under --tp its GLOBAL
/// value by its te.tp_shard `r`, on rank 0 (every rank takes part).
void writeResult(const std::string &dir, const std::string &stem,
                 const Tensor &t, const te_module_tensor *r,
                 const std::string &what);

/// TE's initial recipe state (§4.1) for a te.state argument, as the module
/// client gives it (amax histories zero, scales one); nullopt for other
/// arguments.
std::optional<Tensor> initialState(const te_module_tensor *a,
                                   const std::vector<int64_t> &shape);

/// Seeded uniform [-1, 1) values of `a`'s dtype in `shape`.
Tensor randomTensor(const te_module_tensor *a, unsigned seed,
                    const std::vector<int64_t> &shape);

//===----------------------------------------------------------------------===//
// Inputs.cpp
//===----------------------------------------------------------------------===//

/// The inputs of `e` given as files: --input, then --inputs DIR (others
/// are left empty).
std::vector<Tensor> givenInputs(const Entry &e);

/// --tp: the factor between the global and the local value of each dim
/// symbol: N for the symbol of a split argument's sharded dim (its value
/// in the signature is local; te-run chooses the global one), else 1.
/// `where` names such an argument.
std::vector<int64_t> dimScales(const Entry &e,
                               std::vector<std::string> *where = nullptr);

/// The dim values of the inputs te-run generates (see Inputs.cpp).
std::vector<int64_t> generatedDims(const Entry &e,
                                   const std::vector<Tensor> &given,
                                   std::vector<int64_t> &choice,
                                   std::vector<bool> &chosen);

/// The inputs of `e`: the given ones, then TE's initial recipe state, then
/// --random values at `dims` (the generated dims).
std::vector<Tensor> completeInputs(const Entry &e, std::vector<Tensor> preset,
                                   const std::vector<int64_t> &dims);

//===----------------------------------------------------------------------===//
// Runner.cpp
//===----------------------------------------------------------------------===//

/// A compiled entry's refusal of a dim by its recipe's alignment check
/// (te_rt_check_multiple: "<entry>: recipe R needs d0 % 32 == 0, got 8"):
/// the symbols of the checked product and the multiple.
struct AlignmentRefusal {
  std::vector<size_t> symbols;
  int64_t multiple = 0;
  std::string message; ///< te_rt_last_error() of the refused call
};

/// Calls entries on a runtime context.
class Runner {
public:
  Runner(te_rt_context *ctx) : ctx(ctx) {}

  /// Runs `e` on host tensors; returns the results of a first call (and the
  /// times of `repeats` extra timed calls in `times`, or with --graph of
  /// `repeats` launches of a CUDA graph captured from one more call). With
  /// `refused`, a first call the entry refuses by its alignment check
  /// returns nullopt and the refusal there instead of dying (nothing ran).
  std::optional<std::vector<Tensor>>
  run(const Entry &e, const std::vector<Tensor> &in, unsigned repeats,
      std::vector<double> &times, AlignmentRefusal *refused = nullptr);

private:
  void *alloc(int64_t bytes);
  void *upload(const Tensor &t);
  te_rt_context *ctx;
};

/// Runs `e` on its inputs, given or generated (see Runner.cpp); returns
/// the inputs used and the results.
std::pair<std::vector<Tensor>, std::vector<Tensor>>
runEntry(Runner &runner, const Entry &e, unsigned bench,
         std::vector<double> &times);

/// Prints --bench's statistics of `times` for `what` (rank 0).
void report(std::string what, std::vector<double> times);

//===----------------------------------------------------------------------===//
// Driver.cpp
//===----------------------------------------------------------------------===//

/// te-run: parses the command line, runs and writes. Returns the exit
/// status (errors exit through die()).
int runTERun(int argc, char **argv);

} // namespace te::run

#endif // TE_TOOLS_TE_RUN_DRIVER_H
