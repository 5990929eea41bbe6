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

} // namespace

ArrayRef<ActivationInfo> mlir::te::getActivations() {
  static const SmallVector<ActivationParamInfo> *params = [] {
    auto *p = new SmallVector<ActivationParamInfo>[getMaxEnumValForActivationKind() + 1];
    for (const TaggedParam &t : ArrayRef(kAllParams).drop_front()) {
      assert(t.index == p[t.code].size() && "TE_ACTIVATION_PARAM out of order");
      p[t.code].push_back(t.info);
    }
    return p;
  }();
  static const SmallVector<ActivationInfo> table = [] {
    SmallVector<ActivationInfo> t;
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams)                  \
  assert(unsigned(code) == t.size() && "TEActivations.def codes must be dense"); \
  assert(params[code].size() == nparams && "nparams != TE_ACTIVATION_PARAMs");   \
  t.push_back({ActivationKind::Cpp, #name, bool(gated), ActivationFn::fn, params[code]});
#include "te/Runtime/TEActivations.def"
    return t;
  }();
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

