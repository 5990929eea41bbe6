//===- ModuleInfo.h - checks of a library's te_module_info() ----*- C++ -*-===//
//
// te_module_info() is the JSON a te-compile library describes itself with
// (see te-lower-to-runtime). te-run trusts nothing in it: validate() checks
// every field te-run reads before any of them is used, so that a malformed
// or hostile description gives a message naming the field, never a crash.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_RUN_MODULEINFO_H
#define TE_TOOLS_TE_RUN_MODULEINFO_H

#include "Json.h"

#include <cstdint>
#include <string>

namespace te::moduleinfo {

/// The dtypes of non-quantized arguments and results.
bool isTensorDtype(const std::string &dtype);

/// Checks `root` (the parsed te_module_info() of `library`); false with
/// `error` naming the library and the field, e.g. "'m.so': malformed module
/// info: entries[0].args[1].shape[0]: 9.22337e+18 is neither a non-negative
/// integer nor a string".
bool validate(const json::Value &root, const std::string &library,
              std::string &error);

/// `v` as 16 lowercase hex digits.
std::string hex(uint64_t v);

} // namespace te::moduleinfo

#endif // TE_TOOLS_TE_RUN_MODULEINFO_H
