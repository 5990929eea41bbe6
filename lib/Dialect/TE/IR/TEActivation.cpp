//===- TEActivation.cpp - Activations and #te.act ---------------*- C++ -*-===//
//
// The activation table (expanded from te/Runtime/TEActivations.def), the
// #te.act attribute (parsing, printing, verification, its interface) and
// the `custom<Activation>` directive of the ops that carry one.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEAttrs.h"
#include "te/Dialect/TE/IR/TEDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLExtras.h"

#include <array>
#include <cmath>

using namespace mlir;
using namespace mlir::te;

namespace {

#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams)                  \
  constexpr int32_t kCode_##C = code;
#include "te/Runtime/TEActivations.def"

/// Every parameter, in table order, tagged with its activation's code.
struct TaggedParam {
  int32_t code;
  unsigned index;
  ActivationParamInfo info;
};
constexpr TaggedParam kAllParams[] = {
    {-1, 0, {"", 0.0, false}},
#define TE_ACTIVATION_PARAM(C, index, name, dflt, positive)                    \
  {kCode_##C, index, {#name, dflt, bool(positive)}},
#include "te/Runtime/TEActivations.def"
};

/// The table's invariants, checked when it is compiled (not by asserts,
/// which Release builds drop): codes dense and in order, each activation's
/// TE_ACTIVATION_PARAM lines numbered 0.. in order and as many as nparams.
constexpr bool codesAreDense() {
  int32_t next = 0;
  bool dense = true;
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams)                  \
  dense = dense && code == next++;
#include "te/Runtime/TEActivations.def"
  return dense;
}
static_assert(codesAreDense(), "TEActivations.def codes must be 0, 1, 2, ...");

constexpr bool paramsInOrder(int32_t code, unsigned nparams) {
  unsigned n = 0;
  for (const TaggedParam &t : kAllParams)
    if (t.code == code && t.index != n++)
      return false;
  return n == nparams;
}
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams)                  \
  static_assert(paramsInOrder(code, nparams),                                  \
                "TE_ACTIVATION_PARAM lines of " #name                          \
                " must be numbered 0.. and be nparams many");
#include "te/Runtime/TEActivations.def"

constexpr unsigned kNumActivations = getMaxEnumValForActivationKind() + 1;

} // namespace

ArrayRef<ActivationInfo> mlir::te::getActivations() {
  static const std::array<SmallVector<ActivationParamInfo, 4>,
                          kNumActivations>
      params = [] {
        std::array<SmallVector<ActivationParamInfo, 4>, kNumActivations> p;
        for (const TaggedParam &t : ArrayRef(kAllParams).drop_front())
          p[t.code].push_back(t.info);
        return p;
      }();
  static const SmallVector<ActivationInfo> table = {
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams)                  \
  {ActivationKind::Cpp, #name, bool(gated), ActivationFn::fn, params[code]},
#include "te/Runtime/TEActivations.def"
  };
  return table;
}

const ActivationInfo &mlir::te::getActivationInfo(ActivationKind kind) {
  return getActivations()[static_cast<uint32_t>(kind)];
}

StringRef mlir::te::stringifyActivationKind(ActivationKind kind) {
  if (static_cast<uint32_t>(kind) > getMaxEnumValForActivationKind())
    return "";
  return getActivationInfo(kind).name;
}

std::optional<ActivationKind>
mlir::te::symbolizeActivationKind(StringRef name) {
  for (const ActivationInfo &a : getActivations())
    if (a.name == name)
      return a.kind;
  return std::nullopt;
}

bool mlir::te::isGatedActivation(ActivationKind kind) {
  return getActivationInfo(kind).gated;
}

SmallVector<double> mlir::te::defaultActivationParams(ActivationKind kind) {
  SmallVector<double> values;
  for (const ActivationParamInfo &p : getActivationInfo(kind).params)
    values.push_back(p.defaultValue);
  return values;
}

