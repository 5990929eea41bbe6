//===- ModuleInfo.h - a lowered module's te_module_info() -------*- C++ -*-===//
//
// te-lower-to-runtime stores the library's JSON description in the global
// `te_module_info.json` (returned by te_module_info()) and its digest
// (te/Runtime/ModuleInfoDigest.h) as the constant of te_module_info_digest(),
// which te_module_open recomputes: a library whose description was edited or
// damaged after te-compile wrote it is refused at open. Tools that amend the
// description (te-compile adds the target, arch and source) go through
// setModuleInfo so the digest follows.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_MODULEINFO_H
#define TE_CONVERSION_MODULEINFO_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::te {

/// The module description of a lowered module ("" when it has none).
std::string getModuleInfo(ModuleOp module);

/// Replaces the lowered module's description by `json` and its digest by
/// json's; fails when the module has no te_module_info.json /
/// te_module_info_digest.
LogicalResult setModuleInfo(ModuleOp module, StringRef json);

} // namespace mlir::te

#endif // TE_CONVERSION_MODULEINFO_H
