//===- Json.h - the JSON te-run reads ---------------------------*- C++ -*-===//
//
// A small JSON reader for te_module_info(): te-run runs on machines with no
// LLVM or MLIR (the GPU test machine), so it depends on the runtime and the
// C++ standard library only.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_RUN_JSON_H
#define TE_TOOLS_TE_RUN_JSON_H

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace te::json {

class Value;
using Array = std::vector<Value>;

class Object {
public:
  const Value *get(const std::string &key) const;
  std::optional<std::string> getString(const std::string &key) const;
  std::optional<int64_t> getInteger(const std::string &key) const;
  const Array *getArray(const std::string &key) const;
  const Object *getObject(const std::string &key) const;

  std::map<std::string, Value> members;
};

class Value {
public:
  enum Kind { Null, Bool, Number, String, ArrayKind, ObjectKind };

  Kind kind = Null;
  bool boolean = false;
  double number = 0;
  /// A number written without fraction or exponent that fits in int64:
  /// its exact value is `integer`.
  bool integral = false;
  int64_t integer = 0;
  std::string string;
  std::shared_ptr<Array> array;
  std::shared_ptr<Object> object;

  std::optional<std::string> getAsString() const {
    if (kind == String)
      return string;
    return std::nullopt;
  }
  std::optional<int64_t> getAsInteger() const {
    if (kind == Number && integral)
      return integer;
    return std::nullopt;
  }
  const Array *getAsArray() const {
    return kind == ArrayKind ? array.get() : nullptr;
  }
  const Object *getAsObject() const {
    return kind == ObjectKind ? object.get() : nullptr;
  }
  /// Compact JSON text.
  std::string str() const;
};

/// Parses `text` (RFC 8259 JSON: strict numbers, escapes including \uXXXX,
/// no duplicate object keys, at most 256 levels of nesting); on failure
/// returns nullopt and sets `error` to what is wrong and its offset.
std::optional<Value> parse(const std::string &text, std::string &error);

} // namespace te::json

#endif // TE_TOOLS_TE_RUN_JSON_H
