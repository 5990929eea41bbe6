//===- dim_expr_fuzzer.cpp - libFuzzer target: dim expressions ---*- C++
//-*-===//
//
// The input's first byte gives the number of dim symbols (0-3) and the
// next 8 bytes each their values (any int64, negative and huge ones
// included); the rest is the expression. Evaluation must not crash or hit
// undefined behaviour (UBSan aborts on signed overflow), must agree with
// the syntax-only check, and its failures must carry a message.
//
//===----------------------------------------------------------------------===//

#include "DimExpr.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  size_t numDims = data[0] % 4;
  size_t header = 1 + 8 * numDims;
  if (size < header)
    return 0;
  std::vector<int64_t> dims(numDims);
  for (size_t k = 0; k < numDims; ++k)
    std::memcpy(&dims[k], data + 1 + 8 * k, 8);
  std::string text(reinterpret_cast<const char *>(data + header),
                   size - header);
  te::dimexpr::Failure failure, syntax;
  std::optional<int64_t> v = te::dimexpr::evaluate(text, dims, failure);
  bool wellFormed = te::dimexpr::checkSyntax(text, numDims, syntax);
  if (!wellFormed && syntax.message.empty())
    std::abort();
  if (v && !wellFormed)
    std::abort(); // a value for an expression the syntax check refuses
  if (!v && failure.message.empty())
    std::abort();
  if (!v && failure.kind == te::dimexpr::Failure::Syntax && wellFormed)
    std::abort(); // a syntax error the syntax check missed
  if (!v && failure.kind != te::dimexpr::Failure::Syntax && !wellFormed)
    std::abort(); // a malformed expression reported as a value's failure
  (void)te::dimexpr::symbolIndex(text);
  return 0;
}
