//===- TP.h - te-run's tensor-parallel shards -------------------*- C++ -*-===//
//
// What te-run --tp does with the arrays of a tensor-parallel library, apart
// from MPI: the shard spec of an argument or result (its "te.tp_shard"
// field), the local shape of a global one and back, the slice rank r keeps
// of a global array, the global array reassembled from every rank's slice,
// and the sum of every rank's partial sums. Arrays are C-order bytes of
// elements of a given size; every size is checked (a dim that does not
// divide, a product that overflows) and reported as an error, never a
// crash. No MPI here, so that all of it is unit tested in one process.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_RUN_TP_H
#define TE_TOOLS_TE_RUN_TP_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace te::tp {

/// A tensor's "te.tp_shard": how the global tensor is spread over the N
/// ranks of the TP group.
enum class Shard {
  /// No te.tp_shard: a per-rank tensor (the saved bundle), never sliced or
  /// gathered.
  None,
  Rows,      ///< dim 0 split into N blocks; rank r holds block r
  Cols,      ///< the last dim split into N blocks
  GatedRows, ///< dim 0 = [a ; b], each split into N; rank r holds [a_r ; b_r]
  Replicated, ///< every rank holds the whole (same) tensor
  Partial,   ///< results only: the global value is the sum over the ranks
};

/// The shard of a te.tp_shard value ("rows", "cols", "gated_rows",
/// "replicated", "partial"); nullopt for anything else. A null `text` is
/// Shard::None.
std::optional<Shard> parseShard(const char *text);
const char *shardName(Shard shard);

/// True for the shards whose local tensor is a block of the global one.
inline bool isSplit(Shard s) {
  return s == Shard::Rows || s == Shard::Cols || s == Shard::GatedRows;
}

/// The dim a split shard divides (0, or rank-1 for Cols); -1 when none
/// (not split, or a 0-d shape).
int64_t shardedDim(Shard shard, size_t rank);

/// The global shape of a local one: the sharded dim times `nranks`
/// (the shape itself for the shards that do not split). False with `error`
/// on overflow or a 0-d shape that cannot be split.
bool globalShape(const std::vector<int64_t> &local, Shard shard,
                 int64_t nranks, std::vector<int64_t> &global,
                 std::string &error);

/// The local shape of a global one. False with `error` when the sharded
/// dim is not a multiple of `nranks` (of 2 * nranks for GatedRows) or the
/// shape is 0-d.
bool localShape(const std::vector<int64_t> &global, Shard shard,
                int64_t nranks, std::vector<int64_t> &local,
                std::string &error);

/// Rank `rank`'s part of the global array `global` (shape `shape`,
/// elements of `elementBytes`): its block for the split shards, a copy
/// otherwise. False with `error` on a bad shape or a size mismatch.
bool slice(const std::vector<char> &global, const std::vector<int64_t> &shape,
           int64_t elementBytes, Shard shard, int64_t nranks, int64_t rank,
           std::vector<char> &local, std::string &error);

/// The global array from every rank's local array, concatenated in rank
/// order in `ranks` (what MPI_Gather of the local bytes gives), each of
/// local shape `localShape`. For the split shards only.
bool gather(const std::vector<char> &ranks,
            const std::vector<int64_t> &localShape, int64_t elementBytes,
            Shard shard, int64_t nranks, std::vector<char> &global,
            std::string &error);

/// The element types of partial sums and comparisons.
enum class DType { F32, BF16, F16 };
std::optional<DType> dtypeFromName(std::string_view name); ///< "float32"...
int64_t dtypeBytes(DType dtype);

/// bf16 bits of `v`, rounded to nearest even (NaN stays a quiet NaN).
uint16_t floatToBF16(float v);
float bf16ToFloat(uint16_t bits);

/// The sum over the ranks of their `count` elements each (concatenated in
/// rank order in `ranks`), accumulated in fp32 in rank order and rounded
/// once to `dtype`.
bool sumPartial(const std::vector<char> &ranks, int64_t count, DType dtype,
                int64_t nranks, std::vector<char> &sum, std::string &error);

/// The largest |a - b| over the elements of two arrays of `dtype` (of the
/// same size; in fp32; NaN where either differs by being NaN). 0 for arrays
/// that differ only in the bits of equal values (+0/-0).
double maxAbsDifference(const char *a, const char *b, int64_t count,
                        DType dtype);

} // namespace te::tp

#endif // TE_TOOLS_TE_RUN_TP_H
