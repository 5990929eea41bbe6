//===- InputGuards.cpp - Checks before upstream MLIR sees input -*- C++ -*-===//
//
// Guards for inputs that crash Debian's MLIR 22 (see InputGuards.h and
// docs/robustness.md).
//
//===----------------------------------------------------------------------===//

#include "te/Support/InputGuards.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

namespace {

/// The largest result number an SSA use `%name#N` may name.
constexpr uint64_t kMaxResultNumber = uint64_t(1) << 20;

bool isIdentifierChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.' || c == '-';
}

/// Result numbers of SSA uses (`%name#N`) above kMaxResultNumber, outside
/// string literals and `//` comments. MLIR 22's parser takes a use of an
/// out-of-range result as a forward reference and resizes the value's
/// result table to N + 1 entries first: memory in proportion to N, then
/// LLVM's "out of memory" abort for N around 2^31.
LogicalResult checkResultNumbers(llvm::SourceMgr &sourceMgr, StringRef text) {
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') { // a string literal: to its closing quote or the line end
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == StringRef::npos)
        break;
      continue;
    }
    if (c != '%')
      continue;
    size_t j = i + 1;
    while (j < text.size() && isIdentifierChar(text[j]))
      ++j;
    if (j == i + 1 || j + 1 >= text.size() || text[j] != '#' ||
        !llvm::isDigit(text[j + 1]))
      continue;
    size_t k = j + 1;
    uint64_t number = 0;
    bool tooBig = false;
    for (; k < text.size() && llvm::isDigit(text[k]); ++k) {
      number = number * 10 + static_cast<uint64_t>(text[k] - '0');
      tooBig |= number > kMaxResultNumber;
      if (tooBig)
        number = kMaxResultNumber + 1; // no wrap on long digit strings
    }
    if (tooBig) {
      sourceMgr.PrintMessage(
          llvm::SMLoc::getFromPointer(text.data() + i),
          llvm::SourceMgr::DK_Error,
          "result number " + text.slice(j + 1, k) + " of " + text.slice(i, j) +
              " is out of range (at most " + Twine(kMaxResultNumber) + ")");
      return failure();
    }
    i = k - 1;
  }
  return success();
}

} // namespace

LogicalResult mlir::te::checkInputText(llvm::SourceMgr &sourceMgr,
                                       unsigned bufferId) {
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(bufferId);
  StringRef text = buffer->getBuffer();
  if (failed(checkResultNumbers(sourceMgr, text)))
    return failure();
  // The file metadata section: `{-#` to its closing `#-}` (or the end).
  size_t start = text.find("{-#");
  while (start != StringRef::npos) {
    size_t end = text.find("#-}", start + 3);
    StringRef section =
        text.slice(start, end == StringRef::npos ? text.size() : end);
    // Strings in it: a blob is one string on one line.
    for (size_t i = 0; i < section.size(); ++i) {
      if (section[i] != '"')
        continue;
      size_t j = i + 1;
      while (j < section.size() && section[j] != '"' && section[j] != '\n') {
        if (section[j] == '\\' && j + 1 < section.size())
          ++j;
        ++j;
      }
      if (j >= section.size() || section[j] != '"') {
        sourceMgr.PrintMessage(
            llvm::SMLoc::getFromPointer(section.data() + i),
            llvm::SourceMgr::DK_Error,
            "unterminated string in the file metadata (dialect_resources): "
            "the input looks truncated");
        return failure();
      }
      i = j;
    }
    if (end == StringRef::npos)
      break;
    start = text.find("{-#", end + 3);
  }
  return success();
}

bool mlir::te::mayNeedCheckBeforeVerify(StringRef text) {
  return text.contains("tensor.concat");
}

LogicalResult mlir::te::checkBeforeVerify(Operation *root) {
  WalkResult r = root->walk([&](Operation *op) {
    if (op->getName().getStringRef() != tensor::ConcatOp::getOperationName())
      return WalkResult::advance();
    // Read the attribute generically: the op is not verified yet.
    std::optional<Attribute> dimAttr = op->getInherentAttr("dim");
    auto dim = dyn_cast_or_null<IntegerAttr>(dimAttr ? *dimAttr : Attribute());
    auto type = op->getNumResults() == 1
                    ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
                    : RankedTensorType();
    if (!dim || !type)
      return WalkResult::advance(); // the verifier reports these itself
    int64_t d = dim.getValue().getSExtValue();
    if (d < 0 || d >= type.getRank()) {
      op->emitOpError() << "concatenation dim must be in [0, " << type.getRank()
                        << "), got " << d;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}
