//===- Patterns.h - TE rewrite patterns -------------------------*- C++ -*-===//
//
// The pattern sets of the te passes, for passes and tools that drive them.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TRANSFORMS_PATTERNS_H
#define TE_TRANSFORMS_PATTERNS_H

#include "te/Dialect/TE/IR/TEAttrs.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::te {

/// What te-decompose's patterns share over one function: the architecture
/// class quantized values are laid out for, and the seed of the next
/// stochastically rounded quantization (reset per function).
struct DecomposeState {
  TargetArch arch;
  int64_t nextSeed = 0;
};

/// te-decompose: one pattern per module op, backward op and te.recompute,
/// rewriting it into the L2 primitives. Each pattern emits its error and
/// fails when an op cannot be decomposed (recipe, architecture, saved
/// tensors); the pass applies them once per op, in order.
void populateTEDecomposePatterns(RewritePatternSet &patterns,
                                 DecomposeState &state);

} // namespace mlir::te

#endif // TE_TRANSFORMS_PATTERNS_H
