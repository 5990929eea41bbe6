//===- Passes.h - TE transformation passes ----------------------*- C++ -*-===//
//
// Declarations and registration of the passes over the `te` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TRANSFORMS_PASSES_H
#define TE_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Pass/Pass.h"
#include "te/Dialect/TE/IR/TEDialect.h"
#include "te/Transforms/PassOptions.h"

namespace mlir::te {

#define GEN_PASS_DECL
#include "te/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "te/Transforms/Passes.h.inc"

} // namespace mlir::te

#endif // TE_TRANSFORMS_PASSES_H
