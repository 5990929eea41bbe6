//===- Passes.h - TE conversion passes --------------------------*- C++ -*-===//
//
// Declarations and registration of the lowerings between levels:
// te-import-torch (torch-mlir to te) and te-lower-to-runtime (te primitives
// to LLVM-dialect entry points calling te_rt_*).
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_PASSES_H
#define TE_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "te/Conversion/TorchConversion.h"
#include "te/Dialect/TE/IR/TEDialect.h"
#include "te/Transforms/PassOptions.h"

namespace mlir::te {

#define GEN_PASS_DECL
#include "te/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "te/Conversion/Passes.h.inc"

} // namespace mlir::te

#endif // TE_CONVERSION_PASSES_H
