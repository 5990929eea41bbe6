//===- TP.cpp - te-run's tensor-parallel shards ---------------------------===//

#include "TP.h"

#include <cmath>
#include <cstring>

namespace te::tp {

std::optional<Shard> parseShard(const char *text) {
  if (!text)
    return Shard::None;
  std::string_view s = text;
  if (s == "rows")
    return Shard::Rows;
  if (s == "cols")
    return Shard::Cols;
  if (s == "gated_rows")
    return Shard::GatedRows;
  if (s == "replicated")
    return Shard::Replicated;
  if (s == "partial")
    return Shard::Partial;
  return std::nullopt;
}

const char *shardName(Shard shard) {
  switch (shard) {
  case Shard::None:
    return "none";
  case Shard::Rows:
    return "rows";
  case Shard::Cols:
    return "cols";
  case Shard::GatedRows:
    return "gated_rows";
  case Shard::Replicated:
    return "replicated";
  case Shard::Partial:
    return "partial";
  }
  return "?";
}

int64_t shardedDim(Shard shard, size_t rank) {
  if (!isSplit(shard) || rank == 0)
    return -1;
  return shard == Shard::Cols ? int64_t(rank) - 1 : 0;
}

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

bool checkRanks(int64_t nranks, std::string &error) {
  if (nranks < 1) {
    error = "the number of ranks must be positive, got " +
            std::to_string(nranks);
    return false;
  }
  return true;
}

/// The elements of `shape` (checked).
bool countOf(const std::vector<int64_t> &shape, int64_t &n,
             std::string &error) {
  n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) {
      error = "shape " + shapeText(shape) +
              (d < 0 ? " has a negative dim"
                     : " has more elements than fit in int64");
      return false;
    }
  return true;
}

/// A split array seen as [outer, dim, inner] elements: the blocks of `dim`
/// are the ranks'. `shape` is the global one.
struct Blocks {
  int64_t outer = 1, dim = 1, inner = 1;
};

bool blocksOf(const std::vector<int64_t> &global, Shard shard, int64_t nranks,
              Blocks &b, std::string &error) {
  std::vector<int64_t> local;
  if (!localShape(global, shard, nranks, local, error))
    return false;
  int64_t total;
  if (!countOf(global, total, error))
    return false;
  size_t d = size_t(shardedDim(shard, global.size()));
  b.dim = global[d];
  b.outer = 1;
  for (size_t i = 0; i < d; ++i)
    b.outer *= global[i]; // no overflow: a factor of `total`
  b.inner = 1;
  for (size_t i = d + 1; i < global.size(); ++i)
    b.inner *= global[i];
  if (shard == Shard::GatedRows)
    b.outer = 2, b.dim /= 2;
  return true;
}

bool bytesOf(int64_t count, int64_t elementBytes, int64_t &bytes,
             std::string &error) {
  if (elementBytes <= 0 || __builtin_mul_overflow(count, elementBytes, &bytes)) {
    error = std::to_string(count) + " elements of " +
            std::to_string(elementBytes) + " bytes: " +
            (elementBytes <= 0 ? "bad element size" : "too many bytes");
    return false;
  }
  return true;
}

} // namespace

bool globalShape(const std::vector<int64_t> &local, Shard shard,
                 int64_t nranks, std::vector<int64_t> &global,
                 std::string &error) {
  if (!checkRanks(nranks, error))
    return false;
  global = local;
  if (!isSplit(shard))
    return true;
  int64_t d = shardedDim(shard, local.size());
  if (d < 0) {
    error = std::string("a 0-d tensor cannot be split (te.tp_shard ") +
            shardName(shard) + ")";
    return false;
  }
  if (local[size_t(d)] < 0 ||
      __builtin_mul_overflow(local[size_t(d)], nranks, &global[size_t(d)])) {
    error = "local shape " + shapeText(local) + " times " +
            std::to_string(nranks) + " ranks " +
            (local[size_t(d)] < 0 ? "has a negative dim"
                                  : "does not fit in int64");
    return false;
  }
  return true;
}

bool localShape(const std::vector<int64_t> &global, Shard shard,
                int64_t nranks, std::vector<int64_t> &local,
                std::string &error) {
  if (!checkRanks(nranks, error))
    return false;
  local = global;
  if (!isSplit(shard))
    return true;
  int64_t d = shardedDim(shard, global.size());
  if (d < 0) {
    error = std::string("a 0-d tensor cannot be split (te.tp_shard ") +
            shardName(shard) + ")";
    return false;
  }
  int64_t dim = global[size_t(d)];
  // gated_rows: each of the two halves splits into nranks blocks.
  int64_t parts = shard == Shard::GatedRows ? 2 * nranks : nranks;
  if (dim < 0 || dim % parts != 0) {
    error = "dim " + std::to_string(d) + " of the global shape " +
            shapeText(global) +
            (dim < 0 ? " is negative"
                     : " (" + std::to_string(dim) + ") is not a multiple of " +
                           (shard == Shard::GatedRows
                                ? "2 x " + std::to_string(nranks) +
                                      " ranks (te.tp_shard gated_rows: two "
                                      "halves, each split over the ranks)"
                                : std::to_string(nranks) + " ranks (te.tp_shard " +
                                      shardName(shard) + ")"));
    return false;
  }
  local[size_t(d)] = dim / nranks;
  return true;
}

bool slice(const std::vector<char> &global, const std::vector<int64_t> &shape,
           int64_t elementBytes, Shard shard, int64_t nranks, int64_t rank,
           std::vector<char> &local, std::string &error) {
  if (!checkRanks(nranks, error))
    return false;
  if (rank < 0 || rank >= nranks) {
    error = "rank " + std::to_string(rank) + " is not one of " +
            std::to_string(nranks) + " ranks";
    return false;
  }
  int64_t count, bytes;
  if (!countOf(shape, count, error) ||
      !bytesOf(count, elementBytes, bytes, error))
    return false;
  if (int64_t(global.size()) != bytes) {
    error = "the global array of shape " + shapeText(shape) + " must be " +
            std::to_string(bytes) + " bytes, got " +
            std::to_string(global.size());
    return false;
  }
  if (!isSplit(shard)) {
    local = global;
    return true;
  }
  Blocks b;
  if (!blocksOf(shape, shard, nranks, b, error))
    return false;
  int64_t block = b.dim / nranks;
  int64_t run = block * b.inner * elementBytes; // bytes of one copied run
  local.assign(size_t(bytes / nranks), 0);
  for (int64_t o = 0; o < b.outer && run > 0; ++o)
    std::memcpy(local.data() + o * run,
                global.data() + ((o * b.dim + rank * block) * b.inner) *
                                    elementBytes,
                size_t(run));
  return true;
}

bool gather(const std::vector<char> &ranks,
            const std::vector<int64_t> &localShape, int64_t elementBytes,
            Shard shard, int64_t nranks, std::vector<char> &global,
            std::string &error) {
  if (!isSplit(shard)) {
    error = std::string("te.tp_shard ") + shardName(shard) +
            " is not gathered";
    return false;
  }
  std::vector<int64_t> shape;
  if (!globalShape(localShape, shard, nranks, shape, error))
    return false;
  int64_t count, bytes, localCount, localBytes;
  if (!countOf(shape, count, error) ||
      !bytesOf(count, elementBytes, bytes, error) ||
      !countOf(localShape, localCount, error) ||
      !bytesOf(localCount, elementBytes, localBytes, error))
    return false;
  if (int64_t(ranks.size()) != bytes) {
    error = std::to_string(nranks) + " local arrays of shape " +
            shapeText(localShape) + " must be " + std::to_string(bytes) +
            " bytes, got " + std::to_string(ranks.size());
    return false;
  }
  Blocks b;
  if (!blocksOf(shape, shard, nranks, b, error))
    return false;
  int64_t block = b.dim / nranks;
  int64_t run = block * b.inner * elementBytes;
  global.assign(size_t(bytes), 0);
  for (int64_t r = 0; r < nranks; ++r)
    for (int64_t o = 0; o < b.outer && run > 0; ++o)
      std::memcpy(global.data() +
                      ((o * b.dim + r * block) * b.inner) * elementBytes,
                  ranks.data() + r * localBytes + o * run, size_t(run));
  return true;
}

std::optional<DType> dtypeFromName(std::string_view name) {
  if (name == "float32")
    return DType::F32;
  if (name == "bfloat16")
    return DType::BF16;
  if (name == "float16")
    return DType::F16;
  return std::nullopt;
}

int64_t dtypeBytes(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

uint16_t floatToBF16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if (std::isnan(v))
    return uint16_t((bits >> 16) | 0x40); // quiet, sign kept
  return uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

float bf16ToFloat(uint16_t bits) {
  uint32_t b = uint32_t(bits) << 16;
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

namespace {

float load(const char *p, DType dtype) {
  if (dtype == DType::F32) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (dtype == DType::BF16)
    return bf16ToFloat(h);
  _Float16 f;
  std::memcpy(&f, &h, 2);
  return float(f);
}

void store(char *p, float v, DType dtype) {
  if (dtype == DType::F32) {
    std::memcpy(p, &v, 4);
  } else if (dtype == DType::BF16) {
    uint16_t h = floatToBF16(v);
    std::memcpy(p, &h, 2);
  } else {
    _Float16 f = static_cast<_Float16>(v);
    std::memcpy(p, &f, 2);
  }
}

} // namespace

bool sumPartial(const std::vector<char> &ranks, int64_t count, DType dtype,
                int64_t nranks, std::vector<char> &sum, std::string &error) {
  if (!checkRanks(nranks, error))
    return false;
  int64_t size = dtypeBytes(dtype), bytes, all;
  if (count < 0 || !bytesOf(count, size, bytes, error) ||
      __builtin_mul_overflow(bytes, nranks, &all)) {
    error = "a partial sum of " + std::to_string(count) + " elements over " +
            std::to_string(nranks) + " ranks is too large";
    return false;
  }
  if (int64_t(ranks.size()) != all) {
    error = std::to_string(nranks) + " partial sums of " +
            std::to_string(count) + " elements must be " +
            std::to_string(all) + " bytes, got " + std::to_string(ranks.size());
    return false;
  }
  sum.assign(size_t(bytes), 0);
  for (int64_t i = 0; i < count; ++i) {
    float acc = 0.0f;
    for (int64_t r = 0; r < nranks; ++r)
      acc += load(ranks.data() + r * bytes + i * size, dtype);
    store(sum.data() + i * size, acc, dtype);
  }
  return true;
}

double maxAbsDifference(const char *a, const char *b, int64_t count,
                        DType dtype) {
  int64_t size = dtypeBytes(dtype);
  double worst = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    float x = load(a + i * size, dtype), y = load(b + i * size, dtype);
    if (std::isnan(x) != std::isnan(y))
      return NAN;
    if (std::isnan(x))
      continue;
    double d = std::fabs(double(x) - double(y));
    if (std::isnan(d)) // inf - inf of the same sign is equal, else inf
      d = x == y ? 0.0 : INFINITY;
    if (d > worst)
      worst = d;
  }
  return worst;
}

} // namespace te::tp
