//===- ImportTorchInternal.h - te-import-torch's importer -------*- C++ -*-===//
//
// The importer of one function, shared by the whole import (ImportTorch.cpp)
// and the partial one that raises the recognized blocks in place
// (PartialImport.cpp); lib/Conversion/TorchToTE, private.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_CONVERSION_TORCHTOTE_IMPORTTORCHINTERNAL_H
#define TE_LIB_CONVERSION_TORCHTOTE_IMPORTTORCHINTERNAL_H

#include "TorchToTE.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <vector>

namespace mlir::te::torch_import {

/// Scalars, lists and shape annotations of an export: read by the patterns
/// that use them, never imported themselves.
bool isExportMetadata(Operation *op);

/// The bookkeeping of an export (its metadata, the size arithmetic of
/// views, literals): no remark when left, erased when dead.
bool isBookkeeping(Operation *op);

//===----------------------------------------------------------------------===//
// Rewriting one function
//===----------------------------------------------------------------------===//

class FunctionImporter {
public:
  FunctionImporter(func::FuncOp func, RecipeAttrInterface recipe,
                   bool partial = false)
      : func(func), recipe(recipe), builder(func.getContext()),
        partial(partial) {}

  /// All or nothing: the whole function on builtin tensors, or an error.
  LogicalResult run();

  /// Raises the recognized blocks in place and leaves the rest with a
  /// remark each; fails only on malformed torch ops (PartialImport.cpp).
  LogicalResult runPartial();

private:
  LogicalResult findGroups();
  LogicalResult emitGroup(Group &g);
  /// The te.linear of `lin` (for `op`) at the builder's insertion point:
  /// its result; in partial mode a failure's reason goes to `lastWhy`.
  FailureOr<Value> emitLinear(Operation *op, const LinearMatch &lin);
  /// An error (strict) or, in partial mode, `why` recorded as the reason
  /// `op` is left; fails in strict mode only.
  LogicalResult reject(Operation *op, const Twine &why);
  /// Verifies a created te op; in partial mode its diagnostic goes to
  /// `lastWhy` instead of the output.
  LogicalResult verifyCreated(Operation *created);
  FailureOr<Value> lookup(Operation *user, Value torchValue);
  FailureOr<Type> convertType(Operation *where, Type t);
  Value concatRows(Location loc, Value a, Value b);
  Value zeros(Location loc, RankedTensorType type);
  Value ones(Location loc, RankedTensorType type);
  /// The value of a torch.vtensor.literal as an arith.constant when it is a
  /// dense value of type `type`; null otherwise.
  Value literalConstant(Operation *literal, Type type);
  /// `w^T` of a 2-D builtin tensor (a torch.aten.t of a weight).
  Value transposeWeight(Location loc, Value w);

  // The whole import (ImportTorch.cpp): each op of the old body into the
  // new one, by the handler of its name.
  using Handler = LogicalResult (FunctionImporter::*)(Operation &op);
  /// The handlers of the torch ops imported between modules, by op name.
  static const llvm::StringMap<Handler> &handlers();
  LogicalResult convertSignature(SmallVectorImpl<Type> &inputs,
                                 SmallVectorImpl<Type> &results);
  LogicalResult importOp(Operation &op);
  LogicalResult importReturn(Operation &op);
  LogicalResult importLiteral(Operation &op);
  LogicalResult importLinear(Operation &op);
  LogicalResult importReshape(Operation &op);
  LogicalResult importCast(Operation &op);
  LogicalResult importTranspose(Operation &op);
  LogicalResult importAdd(Operation &op);
  /// The error at an op no module takes and no handler imports.
  LogicalResult notImported(Operation &op);

  // The partial import (PartialImport.cpp).
  /// The builtin tensor for a torch value, bridged once (partial mode).
  FailureOr<Value> bridge(Value torchValue);
  /// Why a torch value cannot reach a te op (empty when it can).
  std::string cannotBridge(Value torchValue);
  void raiseGroup(Group &g);
  void raiseLinear(Operation *op, const LinearMatch &lin);
  /// Replaces the torch results by `emitted`'s te values (through
  /// from_builtin_tensor) and erases `ops`; false (nothing changed) when a
  /// type differs.
  bool replaceOutputs(ArrayRef<Operation *> ops);
  void leave(ArrayRef<Operation *> ops, const Twine &why);
  void eraseDeadBridges();
  void remarkLeftOps();

  func::FuncOp func;
  RecipeAttrInterface recipe;
  OpBuilder builder;
  IRMapping mapping;
  std::vector<Group> groups;
  llvm::DenseMap<Operation *, Group *> anchors;
  llvm::DenseSet<Operation *> consumed;
  /// Linears on a norm output that is also a module's returned norm output.
  llvm::DenseMap<Operation *, Value> linearsOnNorm;

  // Partial mode.
  bool partial;
  /// Why each op left in torch was not raised (first reason wins).
  llvm::DenseMap<Operation *, std::string> leftWhy;
  /// The reason of the last failure (verifier message, unbridgeable type).
  std::string lastWhy;
  /// The last bridge of a function argument (they come first, in order).
  Operation *lastArgBridge = nullptr;
  /// (torch value, te value) pairs of the last emitted module.
  SmallVector<std::pair<Value, Value>> emitted;
};

} // namespace mlir::te::torch_import

#endif // TE_LIB_CONVERSION_TORCHTOTE_IMPORTTORCHINTERNAL_H
