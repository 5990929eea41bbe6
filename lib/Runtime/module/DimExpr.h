//===- DimExpr.h - te-run's dim expressions ---------------------*- C++ -*-===//
//
// The shapes of a library's module info are integers or strings: dim
// symbols `d<k>` (the entry's dynamic dims) or expressions of them in the
// grammar te-lower-to-runtime emits:
//
//   expr   := term (('+' | '-') term)*
//   term   := factor (('*' | '/') factor)*      ('/' divides exactly)
//   factor := INTEGER | 'd' INTEGER | '(' expr ')'
//           | ('ceildiv' | 'roundup') '(' expr ',' expr ')'
//
// Evaluation is checked: int64 overflow, division by a non-positive value,
// inexact division and nesting deeper than 64 are errors, never UB.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_RUN_DIMEXPR_H
#define TE_TOOLS_TE_RUN_DIMEXPR_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace te::dimexpr {

/// Why an evaluation failed.
struct Failure {
  /// Divisor: a `/`, ceildiv or roundup by a value that is not positive
  /// (found only when evaluating: `roundup(d0, d1 - 8)` is well formed).
  enum Kind { Syntax, Inexact, Overflow, Divisor } kind = Syntax;
  /// Inexact: the divisor of the division that was not exact.
  int64_t divisor = 0;
  /// The message, e.g. "malformed dim expression 'd0 *' at column 5:
  /// unexpected end" or "dim expression 'd0/32': 8 is not divisible by 32
  /// (the recipe needs a multiple of 32 there)".
  std::string message;
};

/// The value of `text` at the values `dims` of the symbols d0, d1, ...;
/// nullopt with `failure` set otherwise.
std::optional<int64_t> evaluate(const std::string &text,
                                const std::vector<int64_t> &dims,
                                Failure &failure);

/// Checks the syntax of `text` only (no arithmetic), with `numDims` dim
/// symbols; false with `failure` set when it is malformed.
bool checkSyntax(const std::string &text, size_t numDims, Failure &failure);

/// A non-negative decimal integer of at most 18 digits (so that it fits in
/// int64), or nullopt.
std::optional<uint64_t> parseUnsigned(std::string_view s);

/// The symbol index k when `text` is exactly "d<k>".
std::optional<size_t> symbolIndex(const std::string &text);

} // namespace te::dimexpr

#endif // TE_TOOLS_TE_RUN_DIMEXPR_H
