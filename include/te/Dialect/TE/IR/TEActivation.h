//===- TEActivation.h - The activations of the te dialect -------*- C++ -*-===//
//
// ActivationKind and the static facts of every activation (gated or not,
// its pointwise function, its parameters with TE's defaults), all expanded
// from te/Runtime/TEActivations.def, the table the runtime and the kernels
// read too. Nothing here is written per activation.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEACTIVATION_H
#define TE_DIALECT_TE_IR_TEACTIVATION_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace mlir::te {

/// An MLP activation (TEActivations.def; the values are the runtime's
/// TE_RT_ACT_* codes).
enum class ActivationKind : uint32_t {
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams) Cpp = code,
#include "te/Runtime/TEActivations.def"
};

/// The pointwise function of an activation (TE_RT_ACT_FN_* of
/// TEActivations.def).
enum class ActivationFn : int32_t {
#define TE_ACTIVATION_FN(fn, code) fn = code,
#include "te/Runtime/TEActivations.def"
};

/// A float parameter of an activation (clamped_swiglu's limit, ...).
struct ActivationParamInfo {
  llvm::StringLiteral name;
  double defaultValue;
  /// The value must be > 0 (else any finite value).
  bool positive;
};

/// The static facts of one activation.
struct ActivationInfo {
  ActivationKind kind;
  llvm::StringLiteral name;
  /// The input [..., 2F] is [a | b] and the output fn(a) * b, [..., F].
  bool gated;
  /// The pointwise function (of `a`, when gated).
  ActivationFn fn;
  llvm::ArrayRef<ActivationParamInfo> params;
};

/// Every activation, in code order (kind i at index i).
llvm::ArrayRef<ActivationInfo> getActivations();
const ActivationInfo &getActivationInfo(ActivationKind kind);

llvm::StringRef stringifyActivationKind(ActivationKind kind);
std::optional<ActivationKind> symbolizeActivationKind(llvm::StringRef name);
/// True for the gated activations (FC1 output split as [act | linear]).
bool isGatedActivation(ActivationKind kind);

/// The largest ActivationKind value.
constexpr uint32_t getMaxEnumValForActivationKind() {
  uint32_t n = 0;
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams) ++n;
#include "te/Runtime/TEActivations.def"
  return n - 1;
}

} // namespace mlir::te

#endif // TE_DIALECT_TE_IR_TEACTIVATION_H
