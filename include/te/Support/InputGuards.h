//===- InputGuards.h - Checks before upstream MLIR sees input ---*- C++ -*-===//
//
// Inputs that crash code te-mlir does not own (Debian's MLIR 22): te-opt and
// te-compile run these checks first and report a diagnostic with a location
// instead. docs/robustness.md lists each upstream crash with a reproducer.
//
//===----------------------------------------------------------------------===//

#ifndef TE_SUPPORT_INPUTGUARDS_H
#define TE_SUPPORT_INPUTGUARDS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

namespace llvm {
class MemoryBuffer;
class SourceMgr;
} // namespace llvm

namespace mlir::te {

/// Lexical checks of a whole input buffer, before any parse: every SSA use
/// `%name#N` names a result number of at most 2^20 (MLIR 22's parser
/// allocates in proportion to N for an out-of-range one, and aborts for N
/// near 2^31); every string literal inside the `{-# ... #-}` file metadata
/// (dialect_resources blobs, which torch-mlir exports carry) is terminated
/// on its line (MLIR 22's lexer reads past the end of the buffer after such
/// a string). Errors go to `sourceMgr`'s diagnostics (file:line:col).
LogicalResult checkInputText(llvm::SourceMgr &sourceMgr, unsigned bufferId);

/// Structural checks of a module parsed with verification off, before the
/// verifier runs: ops whose upstream verifier crashes on out-of-range
/// attributes (`tensor.concat` with a negative `dim`). Emits an error at the
/// op and fails.
LogicalResult checkBeforeVerify(Operation *root);

/// Whether the text can need checkBeforeVerify (a cheap scan: only inputs
/// that name such an op are parsed twice by te-opt).
bool mayNeedCheckBeforeVerify(llvm::StringRef text);

} // namespace mlir::te

#endif // TE_SUPPORT_INPUTGUARDS_H
