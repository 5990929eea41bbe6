//===- ShapeAnalysis.h - Dynamic dims of a function -------------*- C++ -*-===//
//
// Which dynamic dims of a function of L2 primitives must be equal, and the
// dims of every tensor value as products of dim variables (a class per
// set of equal argument dims): what te-lower-to-runtime's ABI passes as
// `dims` and sizes buffers with.
//
//===----------------------------------------------------------------------===//

#ifndef TE_ANALYSIS_SHAPEANALYSIS_H
#define TE_ANALYSIS_SHAPEANALYSIS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::te {


/// A tensor dim: a constant, or a variable (a dynamic dim of an argument,
/// up to equality).
struct Dim {
  int64_t value = 0;          ///< when static; the constant factor otherwise
  SmallVector<int, 1> vars;   ///< dim variables multiplied in; none if static
  bool isStatic() const { return vars.empty(); }
  /// Exactly the variable `v` (an argument's dynamic dim).
  bool isVar(int v) const {
    return vars.size() == 1 && vars[0] == v && value == 1;
  }
};

class ShapeAnalysis {
public:
  LogicalResult run(func::FuncOp func);

  /// The dims of a tensor value (variables resolved to class leaders).
  SmallVector<Dim> dims(Value v) const {
    SmallVector<Dim> out = shapes.lookup(v);
    for (Dim &d : out)
      for (int &v : d.vars)
        v = leader(v);
    return out;
  }
  int leader(int var) const { return classes.getLeaderValue(var); }
  /// Class leaders in order of first appearance in the arguments.
  SmallVector<int> dimClasses;

private:
  void unify(Operation *op, ArrayRef<Dim> a, ArrayRef<Dim> b) {
    for (auto [x, y] : llvm::zip(a, b)) {
      if (x.vars.size() != 1 || y.vars.size() != 1)
        continue;
      if (x.value == y.value)
        classes.unionSets(x.vars[0], y.vars[0]);
      // c*u == v (a gathered tensor against an argument of its rows):
      // v is c times u.
      else if (y.value == 1 && x.value > 1)
        scaled.push_back({y.vars[0], x.value, x.vars[0]});
      else if (x.value == 1 && y.value > 1)
        scaled.push_back({x.vars[0], y.value, y.vars[0]});
    }
  }
  /// var = factor x base.
  struct Scaled {
    int var;
    int64_t factor;
    int base;
  };
  SmallVector<Scaled> scaled;
  LogicalResult define(Operation *op);

  llvm::DenseMap<Value, SmallVector<Dim>> shapes;
  llvm::EquivalenceClasses<int> classes;
  int numVars = 0;
};

/// The (logical) shape of a tensor or quantized tensor type.
std::optional<ArrayRef<int64_t>> shapeOfType(Type t);

/// The dims of `shape`, dynamic ones as 0 (no variable).
SmallVector<Dim> staticDims(ArrayRef<int64_t> shape);

} // namespace mlir::te

#endif // TE_ANALYSIS_SHAPEANALYSIS_H
