//===- Signatures.cpp - The torch ops the importer reads --------*- C++ -*-===//
//
// Operand and result counts of every torch op the patterns look into
// (torch ops are unregistered here: nothing else checks them).
//
//===----------------------------------------------------------------------===//

#include "TorchToTE.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::torch_import {

/// The operand and result counts (and the constant's `value` attribute) of
/// every torch op the patterns look into, as torch-mlir's ODS defines them.
/// torch ops are unregistered here, so nothing else checks them: the
/// patterns read operands by position and would read past a short list.
struct TorchSignature {
  StringRef name;
  int operands; // -1: variadic
  int results;  // -1: variadic (at least one)
};

constexpr TorchSignature kTorchSignatures[] = {
    {"torch.aten.layer_norm", 6, 1},
    {"torch.aten.rms_norm", 4, 1},
    {"torch.aten.linear", 3, 1},
    {"torch.aten.mm", 2, 1},
    {"torch.aten.matmul", 2, 1},
    {"torch.aten.t", 1, 1},
    {"torch.aten.transpose.int", 3, 1},
    {"torch.aten.permute", 2, 1},
    {"torch.aten.mul.Tensor", 2, 1},
    {"torch.aten.mul.Scalar", 2, 1},
    {"torch.aten.div.Tensor", 2, 1},
    {"torch.aten.div.Scalar", 2, 1},
    {"torch.aten.add.Tensor", 3, 1},
    {"torch.aten.add.Scalar", 3, 1},
    {"torch.aten.sub.Tensor", 3, 1},
    {"torch.aten.pow.Tensor_Scalar", 2, 1},
    {"torch.aten.sum.dim_IntList", 4, 1},
    {"torch.aten.mean.dim", 4, 1},
    {"torch.aten.var_mean.correction", 4, 2},
    {"torch.aten.rsqrt", 1, 1},
    {"torch.aten.sigmoid", 1, 1},
    {"torch.aten.silu", 1, 1},
    {"torch.aten.relu", 1, 1},
    {"torch.aten.tanh", 1, 1},
    {"torch.aten.erf", 1, 1},
    {"torch.aten.exp", 1, 1},
    {"torch.aten.neg", 1, 1},
    {"torch.aten.sqrt", 1, 1},
    {"torch.aten.reciprocal", 1, 1},
    {"torch.aten.square", 1, 1},
    {"torch.aten.clamp_min", 2, 1},
    {"torch.aten.sub.Scalar", 3, 1},
    {"torch.aten.rsub.Scalar", 3, 1},
    {"torch.aten.clone", 2, 1},
    {"torch.aten.contiguous", 2, 1},
    {"torch.aten.unbind.int", 2, -1},
    {"torch.aten.gelu", 2, 1},
    {"torch.aten.to.dtype", 5, 1},
    {"torch.prims.convert_element_type", 2, 1},
    {"torch.aten.type_as", 2, 1},
    {"torch.aten.view", 2, 1},
    {"torch.aten.reshape", 2, 1},
    {"torch.aten._unsafe_view", 2, 1},
    {"torch.aten.broadcast_to", 2, 1},
    {"torch.aten.split.Tensor", 3, -1},
    {"torch.aten.split_with_sizes", 3, -1},
    {"torch.aten.chunk", 3, -1},
    {"torch.aten.slice.Tensor", 5, 1},
    {"torch.aten.size.int", 2, 1},
    {"torch.aten.mul.int", 2, 1},
    {"torch.prim.ListConstruct", -1, 1},
    {"torch.prim.ListUnpack", 1, -1},
    {"torch.vtensor.literal", 0, 1},
    {"torch.constant.int", 0, 1},
    {"torch.constant.float", 0, 1},
    {"torch.constant.str", 0, 1},
    {"torch.constant.bool", 0, 1},
    {"torch.constant.none", 0, 1},
};

/// An error at each torch op whose operand or result count (or constant
/// value) is not torch-mlir's: the patterns may rely on them afterwards.
LogicalResult verifyTorchSignatures(func::FuncOp func) {
  static const llvm::StringMap<TorchSignature> table = [] {
    llvm::StringMap<TorchSignature> t;
    for (const TorchSignature &s : kTorchSignatures)
      t[s.name] = s;
    return t;
  }();
  auto count = [](int n) {
    return n == 1 ? std::string("1 ") : std::to_string(n) + " ";
  };
  WalkResult r = func.walk([&](Operation *op) {
    auto it = table.find(op->getName().getStringRef());
    if (it == table.end())
      return WalkResult::advance();
    const TorchSignature &s = it->second;
    int operands = op->getNumOperands(), results = op->getNumResults();
    if (s.operands >= 0 && operands != s.operands) {
      op->emitError() << "te-import-torch: '" << s.name << "' takes "
                      << count(s.operands)
                      << (s.operands == 1 ? "operand" : "operands") << ", got "
                      << operands;
      return WalkResult::interrupt();
    }
    if ((s.results >= 0 && results != s.results) || results == 0) {
      op->emitError() << "te-import-torch: '" << s.name << "' has "
                      << (s.results >= 0 ? count(s.results)
                                         : std::string("at least 1 "))
                      << (s.results == 1 || s.results < 0 ? "result"
                                                          : "results")
                      << ", got " << results;
      return WalkResult::interrupt();
    }
    // Constants carry their value as an attribute of the right kind.
    StringRef name = s.name;
    Attribute value = op->getAttr("value");
    bool ok = true;
    if (name == "torch.constant.int")
      ok = isa_and_nonnull<IntegerAttr>(value);
    else if (name == "torch.constant.float")
      ok = isa_and_nonnull<FloatAttr>(value);
    else if (name == "torch.constant.str")
      ok = isa_and_nonnull<StringAttr>(value);
    else if (name == "torch.constant.bool")
      ok = isa_and_nonnull<BoolAttr>(value);
    if (!ok) {
      op->emitError() << "te-import-torch: '" << name
                      << "' needs a 'value' attribute of its type";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

} // namespace mlir::te::torch_import
