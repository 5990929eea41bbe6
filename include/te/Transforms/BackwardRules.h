//===- BackwardRules.h - Backward rules of upstream ops ---------*- C++ -*-===//
//
// The BackwardOpInterface external models of the upstream ops
// te-generate-backward differentiates between module ops.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TRANSFORMS_BACKWARDRULES_H
#define TE_TRANSFORMS_BACKWARDRULES_H

namespace mlir {
class DialectRegistry;
namespace te {

/// Attaches the backward rules of arith.addf/extf/truncf/constant,
/// tensor.reshape/concat/extract_slice/empty and linalg.transpose.
void registerBackwardOpInterfaceExternalModels(DialectRegistry &registry);

} // namespace te
} // namespace mlir

#endif // TE_TRANSFORMS_BACKWARDRULES_H
