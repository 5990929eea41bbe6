//===- InitAll.h - Register te-mlir dialects and passes ---------*- C++ -*-===//
//
// One place that registers what te-opt and the mlir-opt plugin provide.
//
//===----------------------------------------------------------------------===//

#ifndef TE_INITALL_H
#define TE_INITALL_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "te/Conversion/Passes.h"
#include "te/Conversion/TorchConversion.h"
#include "te/Dialect/TE/IR/TEDialect.h"
#include "te/Dialect/Torch/TorchDialect.h"
#include "te/Transforms/BackwardRules.h"
#include "te/Transforms/Passes.h"
#include "te/Transforms/Pipeline.h"

namespace mlir::te {

/// The `te` dialect alone (what the plugin adds to mlir-opt).
inline void registerTEDialect(DialectRegistry &registry) {
  registry.insert<TEDialect>();
}

/// The minimal registry of te-opt: `te`, the `torch` import subset, the
/// upstream dialects the pipeline produces and their backward rules.
inline void registerAllTEDialects(DialectRegistry &registry) {
  registry
      .insert<TEDialect, torch::TorchDialect, torch_c::TorchConversionDialect,
              arith::ArithDialect,
              func::FuncDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
              memref::MemRefDialect, scf::SCFDialect, tensor::TensorDialect>();
  registerBackwardOpInterfaceExternalModels(registry);
}

/// Every te-mlir pass.
inline void registerAllTEPasses() {
  registerTEConversionPasses();
  registerTEPasses();
  registerTEPipeline();
}

} // namespace mlir::te

#endif // TE_INITALL_H
