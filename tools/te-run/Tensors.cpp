//===- Tensors.cpp - te-run's host tensors ----------------------*- C++ -*-===//
//
// Host tensors: their sizes (checked arithmetic, refused beyond the
// machine's memory), .npy files in and out (Npy.h), the shapes the module
// client gives, --tp's shards (TP.h) and the values te-run makes (initial
// recipe state, --random).
//
//===----------------------------------------------------------------------===//

#include "DimExpr.h"
#include "Driver.h"
#include "Npy.h"

#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>
#include <random>
#include <sys/sysinfo.h>

namespace fs = std::filesystem;

namespace te::run {

std::string str(int64_t v) { return std::to_string(v); }
static bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
int64_t elementBytes(const std::string &dtype) {
  return dtype == "float32" ? 4 : dtype == "qtensor" ? 1 : 2;
}
static std::string descrOf(const std::string &dtype) {
  return dtype == "float32"    ? "<f4"
         : dtype == "bfloat16" ? "<u2"
         : dtype == "qtensor"  ? "|u1"
                               : "<f2";
}
std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

/// The bytes of this machine's memory (RAM and swap): no host buffer of
/// te-run may be larger, whatever a library's module info asks for.
static int64_t hostMemoryBytes() {
  struct sysinfo info;
  if (sysinfo(&info) != 0)
    return int64_t(1) << 40;
  unsigned __int128 total =
      (unsigned __int128)(info.totalram + info.totalswap) * info.mem_unit;
  return total > (unsigned __int128)INT64_MAX ? INT64_MAX : int64_t(total);
}

/// The elements of `shape`, checked for overflow; `what` names the tensor.
int64_t elementCount(const std::vector<int64_t> &shape,
                     const std::string &what) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      die(what + ": shape " + shapeString(shape) +
          (d < 0 ? " has a negative dim"
                 : " has more elements than fit in int64"));
  return n;
}

/// n * size bytes, checked.
int64_t byteCount(int64_t n, int64_t size, const std::string &what) {
  int64_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes))
    die(what + ": " + std::to_string(n) + " elements of " +
        std::to_string(size) + " bytes do not fit in int64 bytes");
  return bytes;
}

/// A zeroed host buffer of `bytes` for `what`: refused (clearly) when it
/// cannot exist on this machine, and allocation failure is reported.
std::vector<char> hostBuffer(int64_t bytes, const std::string &what) {
  static const int64_t limit = hostMemoryBytes();
  if (bytes < 0)
    die(what + ": negative size " + std::to_string(bytes) + " bytes");
  if (bytes > limit)
    die(what + " needs " + std::to_string(bytes) +
        " bytes, more than this machine's memory (" + std::to_string(limit) +
        " bytes of RAM and swap)");
  try {
    return std::vector<char>(static_cast<size_t>(bytes));
  } catch (const std::bad_alloc &) {
    die("out of host memory allocating " + std::to_string(bytes) +
        " bytes for " + what);
  }
}

/// Dies with the module client's message when `rc` is a failure.
void check(int32_t rc) {
  if (rc != 0)
    die(te_rt_last_error());
}

/// A role of an argument or result (TE_MODULE_ROLE_*), if it has it.
std::optional<std::string> roleOf(const te_module_tensor *t, int32_t role) {
  const char *v = te_module_tensor_role(t, role);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

std::string dtypeOf(const te_module_tensor *t) {
  return te_module_tensor_dtype(t);
}

/// The te.tp_shard of an argument or result (`what`) under --tp;
/// Shard::None without --tp or without the field (a per-rank tensor).
Shard shardOf(const te_module_tensor *t, const std::string &what, bool isArg) {
  if (opts.tp == 0)
    return Shard::None;
  const char *text = te_module_tensor_get(t, "te.tp_shard");
  // reference/tensor-parallel.md §9 item 4 tags partial gradients
  // te.partial = "tp"; te.tp_shard, where present, says it.
  if (const char *partial = te_module_tensor_get(t, "te.partial");
      !text && !isArg && partial && std::string_view(partial) == "tp")
    text = "partial";
  std::optional<Shard> shard = te::tp::parseShard(text);
  if (!shard)
    die(what + ": unknown te.tp_shard '" + text +
        "' (rows, cols, gated_rows, replicated or partial)");
  if (isArg && *shard == Shard::Partial)
    die(what + ": te.tp_shard 'partial' marks results (partial gradient "
               "sums), not arguments");
  return *shard;
}

/// This rank's part of the GLOBAL value `t` of an argument (`what`) with
/// te.tp_shard `shard`: its block for the split shards, all of it else.
Tensor localPart(Tensor t, Shard shard, const std::string &what) {
  if (!te::tp::isSplit(shard))
    return t;
  if (t.dtype == "qtensor")
    die(what +
        ": te-run --tp cannot slice a quantized tensor's bytes "
        "(te.tp_shard " +
        te::tp::shardName(shard) + "); let --random make it (all-zero)");
  std::vector<int64_t> local;
  std::vector<char> data;
  std::string error;
  if (!te::tp::localShape(t.shape, shard, opts.tp, local, error) ||
      !te::tp::slice(t.data, t.shape, elementBytes(t.dtype), shard, opts.tp,
                     tpJob.rank, data, error))
    die(what + ": " + error);
  return Tensor{t.dtype, local, std::move(data)};
}

/// The GLOBAL shape of a local one of a tensor (`what`) with `shard`.
std::vector<int64_t> globalShapeOf(const std::vector<int64_t> &local,
                                   Shard shard, const std::string &what) {
  std::vector<int64_t> global;
  std::string error;
  if (!te::tp::globalShape(local, shard, std::max<int64_t>(opts.tp, 1), global,
                           error))
    die(what + ": " + error);
  return global;
}

/// The values of the dims symbols `d<k>` from the inputs, checked.
std::vector<int64_t> bindDims(const Entry &e, const std::vector<Tensor> &in) {
  std::vector<const char *> dtypes;
  std::vector<const int64_t *> shapes;
  std::vector<int64_t> ranks;
  for (const Tensor &t : in) {
    dtypes.push_back(t.dtype.c_str());
    shapes.push_back(t.shape.data());
    // A quantized tensor's raw bytes from a file carry no shape.
    ranks.push_back(
        t.dtype == "qtensor" && t.shape.empty() ? -1 : int64_t(t.shape.size()));
  }
  std::vector<int64_t> dims(e.numDims);
  check(te_module_bind_dims(e.entry, dtypes.data(), shapes.data(), ranks.data(),
                            dims.data()));
  return dims;
}

/// The shape of `t` at `dims` (null: a shape without dim symbols).
std::vector<int64_t> shapeOf(const te_module_tensor *t, const int64_t *dims) {
  std::vector<int64_t> shape(size_t(te_module_tensor_rank(t)));
  check(te_module_tensor_shape(t, dims, shape.data()));
  return shape;
}

/// The bytes of the buffer of `t` at `dims`.
int64_t bufferBytes(const te_module_tensor *t,
                    const std::vector<int64_t> &dims) {
  int64_t bytes;
  check(te_module_tensor_bytes(t, dims.data(), &bytes));
  return bytes;
}

Tensor loadNpy(const std::string &path, const std::string &dtype) {
  te::npy::Array a;
  std::string error;
  if (!te::npy::read(path, a, error))
    die(error);
  bool bf16File = endsWith(path, ".bf16.npy");
  std::string expected = descrOf(dtype);
  if (dtype == "qtensor") {
    if (a.descr != expected || a.shape.size() != 1)
      die("'" + path +
          "' must hold a quantized tensor's bytes (a 1-D uint8 "
          "array, as te-run --outputs writes), got " +
          a.descr + " " + shapeString(a.shape));
    return Tensor{dtype, {}, std::move(a.data)};
  }
  if (a.descr != expected || (dtype == "bfloat16") != bf16File)
    die("'" + path + "' holds " +
        (a.descr == "<u2" && bf16File ? std::string("bfloat16")
         : a.descr == "|u1" ? std::string("uint8 (a quantized tensor's bytes)")
                            : te::npy::dtypeName(a.descr)) +
        " but the argument is " + dtype +
        (dtype == "bfloat16" ? " (bf16 files are uint16 named *.bf16.npy)"
                             : ""));
  return Tensor{dtype, a.shape, std::move(a.data)};
}

std::string findNpy(const std::string &dir, const std::string &stem) {
  for (const char *suffix : {".npy", ".bf16.npy"}) {
    std::string p = dir + "/" + stem + suffix;
    if (fs::exists(p))
      return p;
  }
  return "";
}

static void saveNpy(const std::string &dir, const std::string &stem,
                    const Tensor &t) {
  std::string path =
      dir + "/" + stem + (t.dtype == "bfloat16" ? ".bf16.npy" : ".npy");
  // A quantized tensor is written as its buffer's bytes.
  std::vector<int64_t> shape =
      t.dtype == "qtensor" ? std::vector<int64_t>{int64_t(t.data.size())}
                           : t.shape;
  te::npy::Array a{descrOf(t.dtype), shape, t.data};
  std::string error;
  if (!te::npy::write(path, a, error))
    die(error);
}

/// Writes result `t` (`what`) as `stem` in `dir`. Under --tp its GLOBAL
/// value by its te.tp_shard `r`, on rank 0 (every rank takes part).
void writeResult(const std::string &dir, const std::string &stem,
                 const Tensor &t, const te_module_tensor *r,
                 const std::string &what) {
  if (opts.tp == 0)
    return saveNpy(dir, stem, t);
  Shard shard = shardOf(r, what, false);
  auto skip = [&](const std::string &why) {
    if (printingRank())
      std::cerr << "te-run: note: --tp: " << stem << " (" << what
                << ") not written: " << why << "\n";
  };
  if (shard == Shard::None)
    return skip("per-rank (no te.tp_shard)");
  if (t.dtype == "qtensor" && shard != Shard::Replicated)
    return skip(std::string("a quantized tensor with te.tp_shard ") +
                te::tp::shardName(shard));
  std::vector<char> all = gatherBytes(t.data, what);
  if (!printingRank())
    return;
  Tensor global{t.dtype, t.shape, {}};
  std::string error;
  int64_t bytes = int64_t(t.data.size());
  std::optional<te::tp::DType> dtype = te::tp::dtypeFromName(t.dtype);
  if (te::tp::isSplit(shard)) {
    global.shape = globalShapeOf(t.shape, shard, what);
    if (!te::tp::gather(all, t.shape, elementBytes(t.dtype), shard, opts.tp,
                        global.data, error))
      die(what + ": " + error);
  } else if (shard == Shard::Replicated) {
    // Every rank must hold the same bits.
    for (int64_t k = 1; k < opts.tp; ++k)
      if (bytes &&
          std::memcmp(all.data() + k * bytes, all.data(), size_t(bytes)) != 0)
        die(what + ": te.tp_shard replicated, but rank " + str(k) +
            "'s value differs from rank 0's" +
            (dtype ? " (max abs difference " +
                         std::to_string(te::tp::maxAbsDifference(
                             all.data() + k * bytes, all.data(),
                             bytes / te::tp::dtypeBytes(*dtype), *dtype)) +
                         ")"
                   : std::string(" (its bytes)")));
    all.resize(size_t(bytes));
    global.data = std::move(all);
  } else { // partial
    if (!dtype)
      die(what + ": te.tp_shard partial on a " + t.dtype + " result");
    if (!te::tp::sumPartial(all, elementCount(t.shape, what), *dtype, opts.tp,
                            global.data, error))
      die(what + ": " + error);
  }
  saveNpy(dir, stem, global);
}

/// TE's initial recipe state (§4.1) for a te.state argument, as the module
/// client gives it (amax histories zero, scales one); nullopt for other
/// arguments.
std::optional<Tensor> initialState(const te_module_tensor *a,
                                   const std::vector<int64_t> &shape) {
  float v;
  if (te_module_tensor_initial_state(a, &v) != 0)
    return std::nullopt;
  std::string what =
      "the initial recipe state '" + *roleOf(a, TE_MODULE_ROLE_STATE) + "'";
  int64_t n = elementCount(shape, what);
  Tensor t{"float32", shape, hostBuffer(byteCount(n, 4, what), what)};
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(t.data.data() + 4 * i, &v, 4);
  return t;
}

Tensor randomTensor(const te_module_tensor *a, unsigned seed,
                    const std::vector<int64_t> &shape) {
  Tensor t{dtypeOf(a), shape, {}};
  const std::string what = "a random " + t.dtype + " " + shapeString(shape);
  int64_t n = elementCount(shape, what);
  t.data = hostBuffer(byteCount(n, elementBytes(t.dtype), what), what);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) {
    float v = dist(gen);
    if (t.dtype == "float32") {
      std::memcpy(t.data.data() + 4 * i, &v, 4);
    } else {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      uint16_t h;
      if (t.dtype == "bfloat16") {
        h = uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
      } else {
        _Float16 f = static_cast<_Float16>(v);
        std::memcpy(&h, &f, 2);
      }
      std::memcpy(t.data.data() + 2 * i, &h, 2);
    }
  }
  return t;
}

} // namespace te::run
