//===- TEDialect.h - TE dialect ---------------------------------*- C++ -*-===//
//
// Declares the `te` dialect class.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEDIALECT_H
#define TE_DIALECT_TE_IR_TEDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "te/Dialect/TE/IR/TEOpsDialect.h.inc"

#endif // TE_DIALECT_TE_IR_TEDIALECT_H
