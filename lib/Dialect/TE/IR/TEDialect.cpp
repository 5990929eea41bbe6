//===- TEDialect.cpp - TE dialect -------------------------------*- C++ -*-===//
//
// Registers the `te` dialect's operations and attributes.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEDialect.h"
#include "te/Dialect/TE/IR/TEAttrs.h"
#include "te/Dialect/TE/IR/TEOps.h"

using namespace mlir;
using namespace mlir::te;

#include "te/Dialect/TE/IR/TEOpsDialect.cpp.inc"

void TEDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "te/Dialect/TE/IR/TEOps.cpp.inc"
      >();
  registerAttributes();
  registerTypes();
}
