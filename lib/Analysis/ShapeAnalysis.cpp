//===- ShapeAnalysis.cpp - Dynamic dims of a function -----------*- C++ -*-===//
//
// Dim variables per dynamic argument dim, propagated through the ops and
// unified where an op requires two dims equal.
//
//===----------------------------------------------------------------------===//

#include "te/Analysis/ShapeAnalysis.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te {

/// The (logical) shape of a tensor or quantized tensor type.
std::optional<ArrayRef<int64_t>> shapeOfType(Type t) {
  if (auto r = dyn_cast<RankedTensorType>(t))
    return r.getShape();
  if (auto q = dyn_cast<QuantizedTensorType>(t))
    return q.getShape();
  return std::nullopt;
}

SmallVector<Dim> staticDims(ArrayRef<int64_t> shape) {
  SmallVector<Dim> out;
  for (int64_t d : shape)
    out.push_back(Dim{ShapedType::isDynamic(d) ? 0 : d, {}});
  return out;
}

LogicalResult ShapeAnalysis::define(Operation *op) {
  for (Value result : op->getResults()) {
    std::optional<ArrayRef<int64_t>> shape = shapeOfType(result.getType());
    if (!shape)
      continue;
    SmallVector<Dim> d = staticDims(*shape);
    for (unsigned i = 0; i < d.size(); ++i) {
      if (!ShapedType::isDynamic((*shape)[i]))
        continue;
      // Rank-1 fp32 statistics have the rows of the normalized input.
      if (shape->size() == 1 && isa<NormFwdOp, NormQuantizeOp>(op)) {
        SmallVector<Dim> in = shapes.lookup(op->getOperand(0));
        // rows = the product of the leading dims.
        Dim rows{1, {}};
        for (unsigned j = 0; j + 1 < in.size(); ++j) {
          rows.value *= in[j].value;
          llvm::append_range(rows.vars, in[j].vars);
        }
        d[i] = rows;
        continue;
      }
      // A collective's dim 0 is its input's times (all-gather) or divided
      // by (reduce-scatter) the group size. A dynamic dim that the group
      // size does not divide (the gathered rows of a backward's argument)
      // is a fresh variable, defined later by the unifications it meets
      // (`scaled`: input var = size x the fresh one).
      if (i == 0 && isa<AllGatherOp, ReduceScatterOp>(op)) {
        Dim in = shapes.lookup(op->getOperand(0))[0];
        if (auto gather = dyn_cast<AllGatherOp>(op)) {
          in.value *= gather.getGroupSize();
        } else {
          int64_t size = cast<ReduceScatterOp>(op).getGroupSize();
          if (in.value % size == 0) {
            in.value /= size;
          } else if (in.vars.size() == 1 && in.value == 1) {
            int fresh = numVars++;
            classes.insert(fresh);
            scaled.push_back({in.vars[0], size, fresh});
            in = Dim{1, {fresh}};
          } else {
            return op->emitError() << "te-lower-to-runtime: cannot divide "
                                      "dim 0 of the reduce-scatter's input "
                                      "by the group size "
                                   << size;
          }
        }
        d[i] = in;
        continue;
      }
      // Otherwise a leading dim of an operand of the same rank.
      bool found = false;
      for (Value operand : op->getOperands()) {
        std::optional<ArrayRef<int64_t>> os = shapeOfType(operand.getType());
        if (os && os->size() == shape->size() &&
            ShapedType::isDynamic((*os)[i])) {
          d[i] = shapes.lookup(operand)[i];
          found = true;
          break;
        }
      }
      if (!found)
        return op->emitError() << "te-lower-to-runtime: cannot tell the size "
                                  "of dynamic dim "
                               << i << " of " << result.getType();
    }
    shapes[result] = d;
  }
  // Operands whose leading dims the op requires to be equal.
  auto dimsOf = [&](Value v) { return ArrayRef<Dim>(shapes[v]); };
  if (isa<arith::AddFOp>(op))
    unify(op, dimsOf(op->getOperand(0)), dimsOf(op->getOperand(1)));
  if (auto gemm = dyn_cast<GemmOp>(op); gemm && gemm.getLayout() == GemmLayout::NT)
    unify(op, dimsOf(gemm.getLhs()).drop_back(), dimsOf(gemm.getRhs()).drop_back());
  if (auto nb = dyn_cast<NormBwdOp>(op)) {
    unify(op, dimsOf(nb.getGrad()), dimsOf(nb.getInput()));
    // Per-row statistics of a [?, K] input have its rows.
    ArrayRef<Dim> in = dimsOf(nb.getInput());
    if (in.size() == 2)
      for (Value stat : {nb.getRsigma(), nb.getMu()})
        if (stat)
          unify(op, in.take_front(), dimsOf(stat));
  }
  if (auto da = dyn_cast<DActOp>(op))
    unify(op, dimsOf(da.getGrad()).drop_back(), dimsOf(da.getInput()).drop_back());
  if (auto da = dyn_cast<DBiasDActOp>(op))
    unify(op, dimsOf(da.getGrad()).drop_back(), dimsOf(da.getInput()).drop_back());
  if (auto da = dyn_cast<DActQuantizeOp>(op))
    unify(op, dimsOf(da.getGrad()).drop_back(),
          dimsOf(da.getInput()).drop_back());
  if (auto g = dyn_cast<GemmDActOp>(op))
    unify(op, dimsOf(g.getLhs()).drop_back(), dimsOf(g.getPre()).drop_back());
  if (auto ret = dyn_cast<func::ReturnOp>(op))
    for (auto [v, type] : llvm::zip(ret.getOperands(),
                                    op->getParentOfType<func::FuncOp>()
                                        .getResultTypes()))
      (void)type;
  return success();
}

LogicalResult ShapeAnalysis::run(func::FuncOp func) {
  for (BlockArgument arg : func.getArguments()) {
    std::optional<ArrayRef<int64_t>> shape = shapeOfType(arg.getType());
    if (!shape)
      return func.emitError() << "te-lower-to-runtime: argument #"
                              << arg.getArgNumber()
                              << " must be a ranked tensor or a quantized "
                                 "tensor, got "
                              << arg.getType();
    SmallVector<Dim> d = staticDims(*shape);
    for (unsigned i = 0; i < d.size(); ++i)
      if (ShapedType::isDynamic((*shape)[i])) {
        d[i] = Dim{1, {numVars++}};
        classes.insert(d[i].vars[0]);
      }
    shapes[arg] = d;
  }
  for (Operation &op : func.getBody().front())
    if (failed(define(&op)))
      return failure();
  // Variables that are a multiple of another (a sequence-parallel
  // backward's gathered rows): every dim with one is rewritten over the
  // other, so that the argument shapes say `2*d0` and te_module_bind_dims
  // checks the relation.
  for (unsigned round = 0; round < scaled.size(); ++round) {
    bool changed = false;
    for (const Scaled &sc : scaled) {
      int from = leader(sc.var), to = leader(sc.base);
      if (from == to)
        return func.emitError()
               << "te-lower-to-runtime: a dynamic dim would be " << sc.factor
               << " times itself (inconsistent gathered rows)";
      for (auto &entry : shapes)
        for (Dim &dim : entry.second)
          for (int &v : dim.vars)
            if (leader(v) == from) {
              v = to;
              dim.value *= sc.factor;
              changed = true;
            }
    }
    if (!changed)
      break;
  }
  // Class leaders in order of first appearance in the arguments.
  llvm::DenseSet<int> seen;
  for (BlockArgument arg : func.getArguments())
    for (Dim d : dims(arg))
      if (!d.isStatic() && seen.insert(d.vars[0]).second)
        dimClasses.push_back(d.vars[0]);
  // Every class must be given by some argument dim as it is (the caller
  // binds it from there).
  for (int var : dimClasses) {
    bool given = llvm::any_of(func.getArguments(), [&](BlockArgument arg) {
      return llvm::any_of(dims(arg), [&](const Dim &d) { return d.isVar(var); });
    });
    if (!given)
      return func.emitError()
             << "te-lower-to-runtime: a dynamic dim appears in the arguments "
                "only as a multiple of itself; no argument gives it";
  }
  return success();
}

} // namespace mlir::te
