//===- ImportTorch.cpp - te-import-torch ------------------------*- C++ -*-===//
//
// Implements --te-import-torch: recognizes LayerNorm/RMSNorm + Linear and
// LayerNorm/RMSNorm + MLP blocks in torch-mlir's output and rebuilds each
// function on builtin tensors with te ops. A function that is not
// recognized as a whole is raised in part (the default): each recognized
// block becomes its te op in place, bridged with torch_c ops, and every op
// left gets a remark saying why; under strict=true it is an error. A graph
// is never silently mis-compiled.
//
// The recognition of each block is in Norm.cpp, Linear.cpp, Activation.cpp
// and MLP.cpp; the recomposition of decomposed forms in Recompose.cpp.
//
//===----------------------------------------------------------------------===//

#include "TorchToTE.h"
#include "te/Conversion/Passes.h"
#include "te/Conversion/TorchConversion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEIMPORTTORCHPASS
#include "te/Conversion/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::torch_import;

namespace {

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
  /// remark each; fails only on malformed torch ops.
  LogicalResult runPartial();

private:
  LogicalResult findGroups();
  LogicalResult emitGroup(Group &g);
  /// An error (strict) or, in partial mode, `why` recorded as the reason
  /// `op` is left; fails in strict mode only.
  LogicalResult reject(Operation *op, const Twine &why);
  /// Verifies a created te op; in partial mode its diagnostic goes to
  /// `lastWhy` instead of the output.
  LogicalResult verifyCreated(Operation *created);
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
  FailureOr<Value> lookup(Operation *user, Value torchValue);
  FailureOr<Type> convertType(Operation *where, Type t);
  Value concatRows(Location loc, Value a, Value b);
  Value zeros(Location loc, RankedTensorType type);
  Value ones(Location loc, RankedTensorType type);

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

LogicalResult FunctionImporter::reject(Operation *op, const Twine &why) {
  if (!partial)
    return unsupported(op, why);
  leftWhy.try_emplace(op, why.str());
  return success();
}

LogicalResult FunctionImporter::verifyCreated(Operation *created) {
  if (!partial)
    return mlir::verify(created);
  std::string message;
  LogicalResult result = success();
  {
    ScopedDiagnosticHandler capture(created->getContext(), [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error && message.empty())
        message = d.str();
      return success();
    });
    result = mlir::verify(created);
  }
  if (failed(result))
    lastWhy = message;
  return result;
}

FailureOr<Type> FunctionImporter::convertType(Operation *where, Type t) {
  if (!isa<tt::ValueTensorType, tt::NonValueTensorType>(t) &&
      t.getDialect().getNamespace() != "torch")
    return t;
  auto vt = dyn_cast<tt::ValueTensorType>(t);
  RankedTensorType builtin = vt ? vt.toBuiltinTensor() : RankedTensorType();
  if (!builtin ||
      !isa<Float32Type, BFloat16Type, Float16Type>(builtin.getElementType())) {
    where->emitError() << "te-import-torch: unsupported type " << t
                       << "; function arguments and results must be "
                          "!torch.vtensor with known sizes and an f32, bf16 "
                          "or f16 dtype";
    return failure();
  }
  return Type(builtin);
}

FailureOr<Value> FunctionImporter::lookup(Operation *user, Value v) {
  if (Value mapped = mapping.lookupOrNull(v))
    return mapped;
  if (partial)
    return bridge(v);
  Operation *def = v.getDefiningOp();
  unsupported(user, "operand #" +
                        Twine(llvm::find(user->getOperands(), v) -
                              user->getOperands().begin()) +
                        " comes from '" +
                        (def ? def->getName().getStringRef() : "an argument") +
                        "', which could not be imported; " + kSupported);
  return failure();
}

LogicalResult FunctionImporter::findGroups() {
  Block &body = func.getBody().front();
  // Norm-based modules first, in program order.
  for (Operation &op : body) {
    if (!isA(&op, "torch.aten.layer_norm") && !isA(&op, "torch.aten.rms_norm"))
      continue;
    std::string normWhy;
    std::optional<NormMatch> norm = matchNorm(&op, normWhy);
    if (!norm) {
      if (failed(reject(&op, normWhy)))
        return failure();
      continue;
    }
    Value out = op.getResult(0);
    bool otherUsers = false;
    // Users in program order; shape bookkeeping is not a use of the value.
    SmallVector<Operation *> users(out.getUsers());
    llvm::sort(users, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    users.erase(llvm::unique(users), users.end());
    SmallVector<LinearMatch> linears;
    for (Operation *user : users) {
      if (consumed.contains(user) || isA(user, "torch.bind_symbolic_shape") ||
          isA(user, "torch.aten._assert_tensor_metadata"))
        continue;
      auto lin = matchLinear(user);
      if (lin && lin->input == out)
        linears.push_back(*lin);
      else
        otherUsers = true;
    }
    if (linears.empty()) {
      if (failed(reject(&op, explainUnraised(&op) + "; " + kSupported)))
        return failure();
      continue;
    }
    // Any of the linears may be FC1 of an MLP (in a two-linear gated MLP the
    // activated one need not come first); otherwise the first linear is the
    // LayerNormLinear.
    Group g{Group::NormLinear};
    g.norm = *norm;
    bool isMLP = false;
    std::string nearMiss;
    Operation *nearMissAt = nullptr;
    for (const LinearMatch &lin : linears) {
      Group candidate = g;
      candidate.fc1 = lin;
      std::string why;
      if (matchMLP(candidate, out, why)) {
        g = candidate;
        isMLP = true;
        break;
      }
      if (!why.empty() && nearMiss.empty()) {
        Value h = lin.op->getResult(0);
        nearMiss = why;
        // At the first op reading FC1's output: where the near miss starts
        // (the activation's first op), the linear when nothing reads it.
        nearMissAt = lin.op;
        for (Operation *u : h.getUsers())
          if (nearMissAt == lin.op || u->isBeforeInBlock(nearMissAt))
            nearMissAt = u;
      }
    }
    if (!isMLP) {
      // A near miss (e.g. a gated erf GELU): report it rather than import
      // the linear alone and fail later on the activation.
      // In partial mode the norm and first linear are still raised, and
      // the near miss is the reason the activation is left.
      if (!nearMiss.empty() && failed(reject(nearMissAt, nearMiss)))
        return failure();
      g.fc1 = linears.front();
      g.ops = {g.fc1.op};
    }
    g.ops.push_back(&op);
    g.ops.append(norm->weightOps.begin(), norm->weightOps.end());
    for (Operation *o : g.ops)
      consumed.insert(o);
    // Linears the module does not take read its returned norm output.
    for (const LinearMatch &lin : linears) {
      if (consumed.contains(lin.op))
        continue;
      linearsOnNorm[lin.op] = out;
      otherUsers = true;
    }
    if (otherUsers) {
      g.returnsNorm = true;
      g.normResult = out;
    }
    groups.push_back(std::move(g));
  }
  // Anchor each group at its last op.
  for (Group &g : groups) {
    g.anchor = g.ops.front();
    for (Operation *o : g.ops)
      if (g.anchor->isBeforeInBlock(o))
        g.anchor = o;
    anchors[g.anchor] = &g;
  }
  return success();
}

Value FunctionImporter::concatRows(Location loc, Value a, Value b) {
  return tensor::ConcatOp::create(builder, loc, /*dim=*/0, ValueRange{a, b});
}

Value FunctionImporter::zeros(Location loc, RankedTensorType type) {
  return arith::ConstantOp::create(
      builder, loc,
      DenseElementsAttr::get(type, builder.getZeroAttr(type.getElementType())));
}

Value FunctionImporter::ones(Location loc, RankedTensorType type) {
  return arith::ConstantOp::create(
      builder, loc,
      DenseElementsAttr::get(type,
                             builder.getFloatAttr(type.getElementType(), 1.0)));
}

LogicalResult FunctionImporter::emitGroup(Group &g) {
  Location loc = g.anchor->getLoc();
  auto get = [&](Value v) -> FailureOr<Value> { return lookup(g.anchor, v); };
  FailureOr<Value> x = get(g.norm.op ? g.norm.input : g.fc1.input);
  if (failed(x))
    return failure();
  auto xType = cast<RankedTensorType>(x->getType());
  auto vec =
      RankedTensorType::get({xType.getShape().back()}, xType.getElementType());
  Value gamma, beta;
  if (g.norm.op) {
    if (g.norm.gamma) {
      FailureOr<Value> v = get(g.norm.gamma);
      if (failed(v))
        return failure();
      gamma = *v;
    } else {
      gamma = ones(loc, vec);
    }
    if (g.norm.beta) {
      FailureOr<Value> v = get(g.norm.beta);
      if (failed(v))
        return failure();
      beta = *v;
    }
  }
  auto getOpt = [&](Value v) -> FailureOr<Value> {
    if (!v)
      return Value();
    return get(v);
  };
  FailureOr<Value> w1 = get(g.fc1.weight), b1 = getOpt(g.fc1.bias);
  if (failed(w1) || failed(b1))
    return failure();
  Value fc1W = *w1, fc1B = *b1;
  if (g.fc1b.op) {
    FailureOr<Value> w1b = get(g.fc1b.weight), b1b = getOpt(g.fc1b.bias);
    if (failed(w1b) || failed(b1b))
      return failure();
    fc1W = concatRows(loc, fc1W, *w1b);
    if (fc1B || *b1b) {
      auto half = [&](Value b, Value w) {
        return b ? b
                 : zeros(
                       loc,
                       RankedTensorType::get(
                           {cast<RankedTensorType>(w.getType()).getDimSize(0)},
                           xType.getElementType()));
      };
      fc1B = concatRows(loc, half(fc1B, *w1), half(*b1b, *w1b));
    }
  } else if (g.swapHalves) {
    // The activation reads the second half: move it first.
    auto wType = cast<RankedTensorType>(fc1W.getType());
    int64_t half = wType.getDimSize(0) / 2;
    auto slice = [&](Value v, int64_t offset) -> Value {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<OpFoldResult> offsets(t.getRank(), builder.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes,
          strides(t.getRank(), builder.getIndexAttr(1));
      offsets[0] = builder.getIndexAttr(offset);
      for (int64_t d : t.getShape())
        sizes.push_back(builder.getIndexAttr(d));
      sizes[0] = builder.getIndexAttr(half);
      return tensor::ExtractSliceOp::create(builder, loc, v, offsets, sizes,
                                            strides);
    };
    fc1W = concatRows(loc, slice(fc1W, half), slice(fc1W, 0));
    if (fc1B)
      fc1B = concatRows(loc, slice(fc1B, half), slice(fc1B, 0));
  }

  Operation *created = nullptr;
  FloatAttr eps = builder.getF64FloatAttr(g.norm.eps);
  UnitAttr zc = g.norm.zeroCentered ? builder.getUnitAttr() : UnitAttr();
  UnitAttr ret = g.returnsNorm ? builder.getUnitAttr() : UnitAttr();
  auto normAttr = NormalizationKindAttr::get(builder.getContext(), g.norm.kind);
  SmallVector<Type> inferred;
  if (g.kind == Group::NormLinear) {
    OperationState state(loc, LayerNormLinearOp::getOperationName());
    LayerNormLinearOp::build(builder, state, *x, gamma, beta, fc1W, fc1B,
                             /*scales=*/Value(), normAttr, eps, zc, ret,
                             recipe, /*tp=*/TensorParallelAttr());
    created = builder.create(state);
  } else {
    FailureOr<Value> w2 = get(g.fc2.weight), b2 = getOpt(g.fc2.bias);
    if (failed(w2) || failed(b2))
      return failure();
    OperationState state(loc, LayerNormMLPOp::getOperationName());
    LayerNormMLPOp::build(
        builder, state, *x, gamma, beta, fc1W, fc1B, *w2, *b2,
        /*scales=*/Value(), normAttr,
        ActivationAttr::get(builder.getContext(), g.activation), eps, zc, ret,
        UnitAttr(), recipe, /*tp=*/TensorParallelAttr());
    created = builder.create(state);
  }
  if (failed(verifyCreated(created))) {
    created->erase();
    if (partial) {
      lastWhy = "the recognized module does not satisfy the te op's rules: " +
                lastWhy;
      return failure();
    }
    return unsupported(g.anchor,
                       "the recognized module does not satisfy the te op's "
                       "rules (see the error above)");
  }
  Operation *last = g.kind == Group::NormMLP ? g.fc2.op : g.fc1.op;
  mapping.map(last->getResult(0), created->getResult(0));
  emitted.assign({{last->getResult(0), created->getResult(0)}});
  if (g.returnsNorm) {
    mapping.map(g.normResult, created->getResult(1));
    emitted.push_back({g.normResult, created->getResult(1)});
  }
  return success();
}

LogicalResult FunctionImporter::run() {
  if (!func.getBody().hasOneBlock())
    return func.emitError("te-import-torch: functions must have one block");
  if (failed(verifyTorchSignatures(func)))
    return failure();
  recomposeDecomposedForms(func);
  if (failed(findGroups()))
    return failure();

  // The new signature.
  SmallVector<Type> inputs, results;
  for (Type t : func.getArgumentTypes()) {
    FailureOr<Type> c = convertType(func, t);
    if (failed(c))
      return failure();
    inputs.push_back(*c);
  }
  for (Type t : func.getResultTypes()) {
    FailureOr<Type> c = convertType(func, t);
    if (failed(c))
      return failure();
    results.push_back(*c);
  }

  Block &oldBody = func.getBody().front();
  auto newBlock = std::make_unique<Block>();
  for (auto [arg, type] : llvm::zip(oldBody.getArguments(), inputs))
    mapping.map(arg, newBlock->addArgument(type, arg.getLoc()));
  builder.setInsertionPointToStart(newBlock.get());

  for (Operation &op : oldBody) {
    StringRef name = op.getName().getStringRef();
    if (auto it = anchors.find(&op); it != anchors.end()) {
      if (failed(emitGroup(*it->second)))
        return failure();
      continue;
    }
    if (consumed.contains(&op))
      continue;
    if (isa<func::ReturnOp>(op)) {
      SmallVector<Value> values;
      for (Value v : op.getOperands()) {
        FailureOr<Value> m = lookup(&op, v);
        if (failed(m))
          return failure();
        values.push_back(*m);
      }
      func::ReturnOp::create(builder, op.getLoc(), values);
      continue;
    }
    // Scalars, lists and shape bookkeeping: read by the patterns above.
    if (name.starts_with("torch.constant.") ||
        name == "torch.prim.ListConstruct" || name == "torch.symbolic_int" ||
        name == "torch.bind_symbolic_shape" ||
        name == "torch.aten._assert_tensor_metadata")
      continue;
    if (name == "torch.vtensor.literal") {
      auto value = dyn_cast<ElementsAttr>(op.getAttr("value"));
      FailureOr<Type> type = convertType(&op, op.getResult(0).getType());
      if (!value || failed(type) || value.getType() != *type)
        return unsupported(&op, "the literal must be a dense tensor of the "
                                "result's shape and dtype");
      mapping.map(op.getResult(0),
                  arith::ConstantOp::create(builder, op.getLoc(),
                                            cast<TypedAttr>(value)));
      continue;
    }
    if (auto linMatch = matchLinear(&op)) {
      LinearMatch lin = *linMatch;
      FailureOr<Value> x = lookup(&op, lin.input), w = lookup(&op, lin.weight);
      if (failed(x) || failed(w))
        return failure();
      Value b;
      if (lin.bias) {
        FailureOr<Value> bm = lookup(&op, lin.bias);
        if (failed(bm))
          return failure();
        b = *bm;
      }
      OperationState state(op.getLoc(), LinearOp::getOperationName());
      LinearOp::build(builder, state, *x, *w, b, /*scales=*/Value(), recipe);
      Operation *created = builder.create(state);
      if (failed(mlir::verify(created))) {
        created->erase();
        return unsupported(&op, "its operands do not form a TransformerEngine "
                                "Linear (see the error above)");
      }
      mapping.map(op.getResult(0), created->getResult(0));
      continue;
    }
    if (name == "torch.aten.view" || name == "torch.aten.reshape" ||
        name == "torch.aten._unsafe_view") {
      // A reshape between modules (static shapes).
      FailureOr<Value> src = lookup(&op, op.getOperand(0));
      FailureOr<Type> type = convertType(&op, op.getResult(0).getType());
      if (failed(src) || failed(type))
        return failure();
      auto resultType = cast<RankedTensorType>(*type);
      if (!resultType.hasStaticShape() ||
          !cast<RankedTensorType>(src->getType()).hasStaticShape())
        return unsupported(&op, "a reshape between modules needs static "
                                "shapes (dynamic ones are supported inside "
                                "recognized modules only)");
      auto shapeType =
          RankedTensorType::get({resultType.getRank()}, builder.getI64Type());
      Value shape = arith::ConstantOp::create(
          builder, op.getLoc(),
          DenseElementsAttr::get(shapeType, resultType.getShape()));
      mapping.map(op.getResult(0),
                  tensor::ReshapeOp::create(builder, op.getLoc(), resultType,
                                            *src, shape));
      continue;
    }
    if (castSource(&op)) {
      // A float cast between modules.
      FailureOr<Value> src = lookup(&op, op.getOperand(0));
      FailureOr<Type> type = convertType(&op, op.getResult(0).getType());
      if (failed(src) || failed(type))
        return failure();
      auto from = cast<RankedTensorType>(src->getType()).getElementType();
      auto to = cast<RankedTensorType>(*type).getElementType();
      Value v = *src;
      if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
        v = arith::ExtFOp::create(builder, op.getLoc(), *type, v);
      else if (from != to &&
               from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
        v = arith::TruncFOp::create(builder, op.getLoc(), *type, v);
      else if (from != to)
        return unsupported(&op, "casts between bf16 and f16 are not supported");
      mapping.map(op.getResult(0), v);
      continue;
    }
    if (name == "torch.aten.t" && rankOf(op.getOperand(0)) == 2) {
      // A transposed weight (GPT-2's Conv1D stores [in, out]).
      FailureOr<Value> w = lookup(&op, op.getOperand(0));
      if (failed(w))
        return failure();
      auto wType = cast<RankedTensorType>(w->getType());
      Value init = tensor::EmptyOp::create(
          builder, op.getLoc(),
          SmallVector<int64_t>{wType.getDimSize(1), wType.getDimSize(0)},
          wType.getElementType());
      auto transpose = linalg::TransposeOp::create(
          builder, op.getLoc(), *w, init, SmallVector<int64_t>{1, 0});
      mapping.map(op.getResult(0), transpose->getResult(0));
      continue;
    }
    if (name == "torch.aten.add.Tensor" &&
        constNumber(op.getOperand(2)) == 1.0) {
      FailureOr<Value> a = lookup(&op, op.getOperand(0)),
                       b = lookup(&op, op.getOperand(1));
      if (failed(a) || failed(b))
        return failure();
      if (a->getType() != b->getType())
        return unsupported(&op, "both operands must have the same tensor type "
                                "(broadcasting adds are not supported)");
      mapping.map(op.getResult(0),
                  arith::AddFOp::create(builder, op.getLoc(), *a, *b));
      continue;
    }
    if (name.starts_with("torch.")) {
      std::string why = explainUnraised(&op);
      return unsupported(&op, (why.empty() ? "not part of a recognized module"
                                           : why) +
                                  "; " + kSupported);
    }
    return unsupported(&op, "only torch operations are expected here");
  }

  // Swap in the new body and signature.
  func.getBody().front().dropAllDefinedValueUses();
  func.getBody().front().erase();
  func.getBody().push_back(newBlock.release());
  func.setType(FunctionType::get(func.getContext(), inputs, results));
  return success();
}

//===----------------------------------------------------------------------===//
// Partial raising
//===----------------------------------------------------------------------===//

std::string FunctionImporter::cannotBridge(Value v) {
  auto vt = dyn_cast<tt::ValueTensorType>(v.getType());
  RankedTensorType builtin = vt ? vt.toBuiltinTensor() : RankedTensorType();
  if (!builtin ||
      !isa<Float32Type, BFloat16Type, Float16Type>(builtin.getElementType())) {
    std::string why;
    llvm::raw_string_ostream os(why);
    os << "an operand of type " << v.getType()
       << " cannot be passed to a te op (it needs a !torch.vtensor with known "
          "sizes and an f32, bf16 or f16 dtype)";
    return why;
  }
  return "";
}

FailureOr<Value> FunctionImporter::bridge(Value v) {
  if (Value mapped = mapping.lookupOrNull(v))
    return mapped;
  std::string why = cannotBridge(v);
  if (!why.empty()) {
    lastWhy = why;
    return failure();
  }
  OpBuilder::InsertionGuard guard(builder);
  Operation *def = v.getDefiningOp();
  if (def)
    builder.setInsertionPointAfter(def);
  else if (lastArgBridge)
    builder.setInsertionPointAfter(lastArgBridge);
  else
    builder.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
  Location loc = def ? def->getLoc() : func.getLoc();
  Value result;
  if (isA(def, "torch.vtensor.literal")) {
    // A frozen weight: the same dense value as a builtin constant.
    auto value = dyn_cast<ElementsAttr>(def->getAttr("value"));
    if (value && value.getType() == builtinType(v.getType()))
      result = arith::ConstantOp::create(builder, loc, cast<TypedAttr>(value));
  } else if (isA(def, "torch.aten.t") && rankOf(def->getOperand(0)) == 2 &&
             cannotBridge(def->getOperand(0)).empty()) {
    // A transposed weight (GPT-2's Conv1D stores [in, out]): the transpose
    // moves with the module.
    FailureOr<Value> w = bridge(def->getOperand(0));
    if (failed(w))
      return failure();
    auto wType = cast<RankedTensorType>(w->getType());
    Value init = tensor::EmptyOp::create(
        builder, loc,
        SmallVector<int64_t>{wType.getDimSize(1), wType.getDimSize(0)},
        wType.getElementType());
    result = linalg::TransposeOp::create(builder, loc, *w, init,
                                         SmallVector<int64_t>{1, 0})
                 ->getResult(0);
  }
  if (!result) {
    result = torch_c::createToBuiltinTensor(builder, loc, v,
                                            builtinType(v.getType()));
    if (!def)
      lastArgBridge = result.getDefiningOp(); // arguments' bridges in order
  }
  mapping.map(v, result);
  return result;
}

void FunctionImporter::leave(ArrayRef<Operation *> ops, const Twine &why) {
  for (Operation *op : ops)
    leftWhy.try_emplace(op, why.str());
}

bool FunctionImporter::replaceOutputs(ArrayRef<Operation *> ops) {
  for (auto [torchValue, teValue] : emitted)
    if (teValue.getType() != builtinType(torchValue.getType())) {
      std::string why;
      llvm::raw_string_ostream os(why);
      os << "the te op's result type " << teValue.getType()
         << " differs from the torch result's " << torchValue.getType();
      lastWhy = why;
      return false;
    }
  for (auto [torchValue, teValue] : emitted) {
    mapping.erase(torchValue);
    if (torchValue.use_empty())
      continue;
    builder.setInsertionPointAfter(teValue.getDefiningOp());
    Value from = torch_c::createFromBuiltinTensor(
        builder, teValue.getLoc(), teValue, torchValue.getType());
    torchValue.replaceAllUsesWith(from);
    mapping.map(from, teValue);
  }
  // The module's torch ops, last first.
  SmallVector<Operation *> sorted(ops.begin(), ops.end());
  llvm::sort(sorted,
             [](Operation *a, Operation *b) { return b->isBeforeInBlock(a); });
  sorted.erase(llvm::unique(sorted), sorted.end());
  for (Operation *op : sorted) {
    for (Value r : op->getResults())
      mapping.erase(r);
    if (op->use_empty())
      op->erase();
  }
  return true;
}

void FunctionImporter::raiseGroup(Group &g) {
  llvm::SmallPtrSet<Operation *, 16> inGroup(g.ops.begin(), g.ops.end());
  Operation *last = g.kind == Group::NormMLP ? g.fc2.op : g.fc1.op;
  // The values the te op reads must be bridgeable; the module's
  // intermediates must stay inside it; its outputs must be read after it.
  SmallVector<Value> inputs = {g.norm.op ? g.norm.input : g.fc1.input,
                               g.norm.gamma,
                               g.norm.beta,
                               g.fc1.weight,
                               g.fc1.bias,
                               g.fc1b.weight,
                               g.fc1b.bias,
                               g.fc2.weight,
                               g.fc2.bias};
  for (Value v : inputs) {
    if (!v)
      continue;
    std::string why = cannotBridge(v);
    if (!why.empty())
      return leave(g.ops, why);
  }
  for (Operation *op : g.ops)
    for (Value r : op->getResults()) {
      bool output =
          r == last->getResult(0) || (g.returnsNorm && r == g.normResult);
      for (Operation *user : r.getUsers()) {
        if (inGroup.contains(user))
          continue;
        if (!output)
          return leave(g.ops, "an intermediate value of the module ('" +
                                  op->getName().getStringRef() +
                                  "') is also used outside it");
        if (user->isBeforeInBlock(g.anchor))
          return leave(g.ops, "an output of the module is used before the "
                              "module's last op");
      }
    }
  builder.setInsertionPoint(g.anchor);
  emitted.clear();
  if (failed(emitGroup(g)))
    return leave(g.ops, lastWhy);
  Operation *created = emitted.front().second.getDefiningOp();
  if (!replaceOutputs(g.ops)) {
    created->erase();
    return leave(g.ops, lastWhy);
  }
}

void FunctionImporter::raiseLinear(Operation *op, const LinearMatch &lin) {
  for (Value v : {lin.input, lin.weight, lin.bias}) {
    if (!v)
      continue;
    std::string why = cannotBridge(v);
    if (!why.empty())
      return leave(op, why);
  }
  builder.setInsertionPoint(op);
  FailureOr<Value> x = bridge(lin.input), w = bridge(lin.weight);
  FailureOr<Value> b = lin.bias ? bridge(lin.bias) : FailureOr<Value>(Value());
  if (failed(x) || failed(w) || failed(b))
    return leave(op, lastWhy);
  builder.setInsertionPoint(op);
  OperationState state(op->getLoc(), LinearOp::getOperationName());
  LinearOp::build(builder, state, *x, *w, *b, /*scales=*/Value(), recipe);
  Operation *created = builder.create(state);
  if (failed(verifyCreated(created))) {
    created->erase();
    return leave(op, "its operands do not form a TransformerEngine Linear: " +
                         lastWhy);
  }
  emitted.assign({{op->getResult(0), created->getResult(0)}});
  if (!replaceOutputs(op)) {
    created->erase();
    return leave(op, lastWhy);
  }
}

/// The bookkeeping of an export: no remark when left, erased when dead.
static bool isBookkeeping(Operation *op) {
  StringRef name = op->getName().getStringRef();
  return name.starts_with("torch.constant.") ||
         name == "torch.prim.ListConstruct" || name == "torch.symbolic_int" ||
         name == "torch.bind_symbolic_shape" ||
         name == "torch.aten._assert_tensor_metadata" ||
         name == "torch.aten.size.int" || name == "torch.aten.mul.int" ||
         name == "torch.vtensor.literal";
}

void FunctionImporter::eraseDeadBridges() {
  Block &body = func.getBody().front();
  bool erased = true;
  while (erased) {
    erased = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body))) {
      if (!op.use_empty() || op.getNumResults() == 0)
        continue;
      bool dead = torch_c::isBridge(&op) ||
                  (isBookkeeping(&op) && op.getName().getStringRef() !=
                                             "torch.bind_symbolic_shape") ||
                  isA(&op, "torch.aten.t") ||
                  (op.isRegistered() && wouldOpBeTriviallyDead(&op));
      if (dead) {
        op.erase();
        erased = true;
      }
    }
  }
}

void FunctionImporter::remarkLeftOps() {
  for (Operation &op : func.getBody().front()) {
    StringRef ns = op.getName().getDialectNamespace();
    if (ns != "torch" || isBookkeeping(&op))
      continue;
    auto it = leftWhy.find(&op);
    std::string why =
        it != leftWhy.end() ? it->second : explainUnraised(&op);
    op.emitRemark() << "te-import-torch: left '" << op.getName() << "' as is: "
                    << (why.empty() ? "not part of a recognized module"
                                    : StringRef(why));
  }
}

LogicalResult FunctionImporter::runPartial() {
  if (!func.getBody().hasOneBlock()) {
    func.emitRemark("te-import-torch: left the function as is: functions must "
                    "have one block");
    return success();
  }
  if (failed(verifyTorchSignatures(func)))
    return failure();
  recomposeDecomposedForms(func);
  if (failed(findGroups()))
    return failure();
  // Program order; raising erases ops at or before the one it visits.
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front())
    ops.push_back(&op);
  llvm::DenseSet<Operation *> erased;
  for (Operation *op : ops) {
    if (auto it = anchors.find(op); it != anchors.end()) {
      for (Operation *o : it->second->ops)
        erased.insert(o);
      raiseGroup(*it->second);
      continue;
    }
    if (consumed.contains(op) || erased.contains(op))
      continue;
    if (std::optional<LinearMatch> lin = matchLinear(op)) {
      erased.insert(op);
      raiseLinear(op, *lin);
    }
  }
  eraseDeadBridges();
  remarkLeftOps();
  return success();
}

/// True when the function's signature or body uses the torch dialect.
bool usesTorch(func::FuncOp func) {
  auto isTorch = [](Type t) {
    return t.getDialect().getNamespace() == "torch";
  };
  if (llvm::any_of(func.getArgumentTypes(), isTorch) ||
      llvm::any_of(func.getResultTypes(), isTorch))
    return true;
  return func
      .walk([&](Operation *op) {
        if (op->getDialect() && op->getDialect()->getNamespace() == "torch")
          return WalkResult::interrupt();
        if (llvm::any_of(op->getResultTypes(), isTorch))
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

struct TEImportTorchPass
    : public mlir::te::impl::TEImportTorchPassBase<TEImportTorchPass> {
  using Base::Base;

  void runOnOperation() override {
    RecipeAttrInterface recipeAttr;
    if (!recipe.empty()) {
      recipeAttr = getDefaultRecipe(&getContext(), recipe);
      if (!recipeAttr) {
        getOperation().emitError()
            << "te-import-torch: unknown recipe '" << recipe
            << "'; expected one of: " << llvm::join(getRecipeNames(), ", ")
            << ", or a recipe attribute such as '#te.nvfp4<rht = false>'";
        return signalPassFailure();
      }
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !usesTorch(func))
        continue; // already te IR (or plain tensors): nothing to import
      if (strict) {
        FunctionImporter importer(func, recipeAttr);
        if (failed(importer.run()))
          return signalPassFailure();
        continue;
      }
      // A function recognized as a whole is imported exactly as in strict
      // mode; the diagnostics of a failed attempt are dropped (its changes
      // are the recompositions alone, which partial raising redoes).
      // Its warnings and remarks are kept, to be emitted when it succeeds.
      LogicalResult whole = failure();
      SmallVector<std::tuple<Location, DiagnosticSeverity, std::string>> kept;
      {
        ScopedDiagnosticHandler quiet(&getContext(), [&](Diagnostic &d) {
          if (d.getSeverity() != DiagnosticSeverity::Error)
            kept.emplace_back(d.getLocation(), d.getSeverity(), d.str());
          return success();
        });
        FunctionImporter importer(func, recipeAttr);
        whole = importer.run();
      }
      if (succeeded(whole)) {
        for (auto &[loc, severity, message] : kept) {
          if (severity == DiagnosticSeverity::Warning)
            emitWarning(loc) << message;
          else if (severity == DiagnosticSeverity::Remark)
            emitRemark(loc) << message;
        }
        continue;
      }
      FunctionImporter importer(func, recipeAttr, /*partial=*/true);
      if (failed(importer.runPartial()))
        return signalPassFailure();
    }
  }
};

} // namespace
