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
// and MLP.cpp; the recomposition of decomposed forms in Recompose.cpp; the
// partial import in PartialImport.cpp.
//
//===----------------------------------------------------------------------===//

#include "ImportTorchInternal.h"
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

bool mlir::te::torch_import::isExportMetadata(Operation *op) {
  StringRef name = op->getName().getStringRef();
  return name.starts_with("torch.constant.") ||
         name == "torch.prim.ListConstruct" || name == "torch.symbolic_int" ||
         name == "torch.bind_symbolic_shape" ||
         name == "torch.aten._assert_tensor_metadata";
}

bool mlir::te::torch_import::isBookkeeping(Operation *op) {
  StringRef name = op->getName().getStringRef();
  return isExportMetadata(op) || name == "torch.aten.size.int" ||
         name == "torch.aten.mul.int" || name == "torch.vtensor.literal";
}

//===----------------------------------------------------------------------===//
// Rewriting one function
//===----------------------------------------------------------------------===//

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

Value FunctionImporter::literalConstant(Operation *literal, Type type) {
  auto value = dyn_cast_if_present<ElementsAttr>(literal->getAttr("value"));
  if (!value || value.getType() != type)
    return Value();
  return arith::ConstantOp::create(builder, literal->getLoc(),
                                   cast<TypedAttr>(value));
}

Value FunctionImporter::transposeWeight(Location loc, Value w) {
  auto wType = cast<RankedTensorType>(w.getType());
  Value init = tensor::EmptyOp::create(
      builder, loc,
      SmallVector<int64_t>{wType.getDimSize(1), wType.getDimSize(0)},
      wType.getElementType());
  return linalg::TransposeOp::create(builder, loc, w, init,
                                     SmallVector<int64_t>{1, 0})
      ->getResult(0);
}

FailureOr<Value> FunctionImporter::emitLinear(Operation *op,
                                              const LinearMatch &lin) {
  FailureOr<Value> x = lookup(op, lin.input), w = lookup(op, lin.weight);
  if (failed(x) || failed(w))
    return failure();
  Value b;
  if (lin.bias) {
    FailureOr<Value> bm = lookup(op, lin.bias);
    if (failed(bm))
      return failure();
    b = *bm;
  }
  OperationState state(op->getLoc(), LinearOp::getOperationName());
  LinearOp::build(builder, state, *x, *w, b, /*scales=*/Value(), recipe);
  Operation *created = builder.create(state);
  if (failed(verifyCreated(created))) {
    created->erase();
    if (partial) {
      lastWhy = "its operands do not form a TransformerEngine Linear: " +
                lastWhy;
      return failure();
    }
    return unsupported(op, "its operands do not form a TransformerEngine "
                           "Linear (see the error above)");
  }
  return created->getResult(0);
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

//===----------------------------------------------------------------------===//
// The whole import
//===----------------------------------------------------------------------===//

const llvm::StringMap<FunctionImporter::Handler> &
FunctionImporter::handlers() {
  static const llvm::StringMap<Handler> table = {
      {"torch.vtensor.literal", &FunctionImporter::importLiteral},
      {"torch.aten.linear", &FunctionImporter::importLinear},
      {"torch.aten.view", &FunctionImporter::importReshape},
      {"torch.aten.reshape", &FunctionImporter::importReshape},
      {"torch.aten._unsafe_view", &FunctionImporter::importReshape},
      // The casts of castSource.
      {"torch.prims.convert_element_type", &FunctionImporter::importCast},
      {"torch.aten.to.dtype", &FunctionImporter::importCast},
      {"torch.aten.type_as", &FunctionImporter::importCast},
      {"torch.aten.t", &FunctionImporter::importTranspose},
      {"torch.aten.add.Tensor", &FunctionImporter::importAdd},
  };
  return table;
}

LogicalResult
FunctionImporter::convertSignature(SmallVectorImpl<Type> &inputs,
                                   SmallVectorImpl<Type> &results) {
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
  return success();
}

LogicalResult FunctionImporter::importOp(Operation &op) {
  if (auto it = anchors.find(&op); it != anchors.end())
    return emitGroup(*it->second);
  if (consumed.contains(&op))
    return success();
  if (isa<func::ReturnOp>(op))
    return importReturn(op);
  // Scalars, lists and shape bookkeeping: read by the patterns above.
  if (isExportMetadata(&op))
    return success();
  const llvm::StringMap<Handler> &table = handlers();
  if (auto it = table.find(op.getName().getStringRef()); it != table.end())
    return (this->*it->second)(op);
  return notImported(op);
}

LogicalResult FunctionImporter::notImported(Operation &op) {
  if (op.getName().getStringRef().starts_with("torch.")) {
    std::string why = explainUnraised(&op);
    return unsupported(&op, (why.empty() ? "not part of a recognized module"
                                         : why) +
                                "; " + kSupported);
  }
  return unsupported(&op, "only torch operations are expected here");
}

LogicalResult FunctionImporter::importReturn(Operation &op) {
  SmallVector<Value> values;
  for (Value v : op.getOperands()) {
    FailureOr<Value> m = lookup(&op, v);
    if (failed(m))
      return failure();
    values.push_back(*m);
  }
  func::ReturnOp::create(builder, op.getLoc(), values);
  return success();
}

LogicalResult FunctionImporter::importLiteral(Operation &op) {
  FailureOr<Type> type = convertType(&op, op.getResult(0).getType());
  Value constant = succeeded(type) ? literalConstant(&op, *type) : Value();
  if (!constant)
    return unsupported(&op, "the literal must be a dense tensor of the "
                            "result's shape and dtype");
  mapping.map(op.getResult(0), constant);
  return success();
}

LogicalResult FunctionImporter::importLinear(Operation &op) {
  std::optional<LinearMatch> lin = matchLinear(&op);
  if (!lin)
    return notImported(op);
  FailureOr<Value> result = emitLinear(&op, *lin);
  if (failed(result))
    return failure();
  mapping.map(op.getResult(0), *result);
  return success();
}

LogicalResult FunctionImporter::importReshape(Operation &op) {
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
  mapping.map(op.getResult(0), tensor::ReshapeOp::create(
                                   builder, op.getLoc(), resultType, *src,
                                   shape));
  return success();
}

LogicalResult FunctionImporter::importCast(Operation &op) {
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
  return success();
}

LogicalResult FunctionImporter::importTranspose(Operation &op) {
  if (rankOf(op.getOperand(0)) != 2)
    return notImported(op);
  // A transposed weight (GPT-2's Conv1D stores [in, out]).
  FailureOr<Value> w = lookup(&op, op.getOperand(0));
  if (failed(w))
    return failure();
  mapping.map(op.getResult(0), transposeWeight(op.getLoc(), *w));
  return success();
}

LogicalResult FunctionImporter::importAdd(Operation &op) {
  if (constNumber(op.getOperand(2)) != 1.0)
    return notImported(op);
  FailureOr<Value> a = lookup(&op, op.getOperand(0)),
                   b = lookup(&op, op.getOperand(1));
  if (failed(a) || failed(b))
    return failure();
  if (a->getType() != b->getType())
    return unsupported(&op, "both operands must have the same tensor type "
                            "(broadcasting adds are not supported)");
  mapping.map(op.getResult(0),
              arith::AddFOp::create(builder, op.getLoc(), *a, *b));
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

  // The new signature, then each op of the old body into the new one.
  SmallVector<Type> inputs, results;
  if (failed(convertSignature(inputs, results)))
    return failure();
  Block &oldBody = func.getBody().front();
  auto newBlock = std::make_unique<Block>();
  for (auto [arg, type] : llvm::zip(oldBody.getArguments(), inputs))
    mapping.map(arg, newBlock->addArgument(type, arg.getLoc()));
  builder.setInsertionPointToStart(newBlock.get());
  for (Operation &op : oldBody)
    if (failed(importOp(op)))
      return failure();

  // Swap in the new body and signature.
  func.getBody().front().dropAllDefinedValueUses();
  func.getBody().front().erase();
  func.getBody().push_back(newBlock.release());
  func.setType(FunctionType::get(func.getContext(), inputs, results));
  return success();
}

namespace {

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
      std::string why;
      recipeAttr = getDefaultRecipe(&getContext(), recipe, &why);
      if (!recipeAttr && !why.empty()) {
        getOperation().emitError()
            << "te-import-torch: invalid recipe '" << recipe << "': " << why;
        return signalPassFailure();
      }
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
