//===- module_info_fuzzer.cpp - libFuzzer target: module info ----*- C++
//-*-===//
//
// Feeds arbitrary text to te-run's JSON parser and, when it parses, to the
// module-info validation; a description that validates is then walked the
// way te-run walks it (every entry's shapes evaluated at dims of 8 and 32,
// labels and listings printed to a string), which must not crash.
//
//===----------------------------------------------------------------------===//

#include "DimExpr.h"
#include "Json.h"
#include "ModuleInfo.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using te::json::Array;
using te::json::Object;
using te::json::Value;

namespace {
void walkShape(const Array &shape, const std::vector<int64_t> &dims) {
  for (const Value &d : shape) {
    if (d.getAsInteger())
      continue;
    std::optional<std::string> s = d.getAsString();
    if (!s)
      std::abort(); // validate() let through a dim that is neither
    te::dimexpr::Failure failure;
    if (!te::dimexpr::evaluate(*s, dims, failure) &&
        failure.kind == te::dimexpr::Failure::Syntax)
      std::abort(); // validate() checked the syntax
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::optional<Value> root = te::json::parse(text, error);
  if (!root) {
    if (error.empty())
      std::abort();
    return 0;
  }
  (void)root->str();
  if (!te::moduleinfo::validate(*root, "fuzz.so", error)) {
    if (error.find("fuzz.so") == std::string::npos)
      std::abort(); // every refusal names the library
    return 0;
  }
  const Object *module = root->getAsObject();
  for (const Value &v : *module->getArray("entries")) {
    const Object *e = v.getAsObject();
    (void)*e->getString("name");
    (void)*e->getString("symbol");
    size_t numDims = e->getArray("dims")->size();
    for (int64_t value : {int64_t(8), int64_t(32)}) {
      std::vector<int64_t> dims(numDims, value);
      for (const char *list : {"args", "results"})
        for (const Value &t : *e->getArray(list)) {
          const Object *o = t.getAsObject();
          (void)*o->getString("dtype");
          walkShape(*o->getArray("shape"), dims);
          if (const Array *inner = o->getArray("inner"))
            for (const Value &p : *inner)
              walkShape(*p.getAsObject()->getArray("shape"), dims);
        }
    }
    (void)e->get("arena_bytes")->str();
  }
  return 0;
}
