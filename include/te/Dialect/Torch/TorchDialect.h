//===- TorchDialect.h - torch-mlir import subset ----------------*- C++ -*-===//
//
// The `torch` dialect subset that te-import-torch reads.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TORCH_TORCHDIALECT_H
#define TE_DIALECT_TORCH_TORCHDIALECT_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpImplementation.h"

#include "te/Dialect/Torch/TorchDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "te/Dialect/Torch/TorchTypes.h.inc"

#endif // TE_DIALECT_TORCH_TORCHDIALECT_H
