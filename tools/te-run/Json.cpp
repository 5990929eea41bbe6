//===- Json.cpp - the JSON te-run reads -------------------------*- C++ -*-===//

#include "Json.h"

#include <cmath>
#include <cstdlib>

namespace te::json {

const Value *Object::get(const std::string &key) const {
  auto it = members.find(key);
  return it == members.end() ? nullptr : &it->second;
}
std::optional<std::string> Object::getString(const std::string &key) const {
  const Value *v = get(key);
  return v ? v->getAsString() : std::nullopt;
}
std::optional<int64_t> Object::getInteger(const std::string &key) const {
  const Value *v = get(key);
  return v ? v->getAsInteger() : std::nullopt;
}
const Array *Object::getArray(const std::string &key) const {
  const Value *v = get(key);
  return v ? v->getAsArray() : nullptr;
}
const Object *Object::getObject(const std::string &key) const {
  const Value *v = get(key);
  return v ? v->getAsObject() : nullptr;
}

std::string Value::str() const {
  switch (kind) {
  case Null:
    return "null";
  case Bool:
    return boolean ? "true" : "false";
  case Number:
    return integral ? std::to_string(static_cast<int64_t>(number))
                    : std::to_string(number);
  case String:
    return "\"" + string + "\"";
  case ArrayKind: {
    std::string s = "[";
    for (size_t i = 0; i < array->size(); ++i)
      s += (i ? "," : "") + (*array)[i].str();
    return s + "]";
  }
  case ObjectKind: {
    std::string s = "{";
    bool first = true;
    for (const auto &[k, v] : object->members) {
      s += (first ? "\"" : ",\"") + k + "\":" + v.str();
      first = false;
    }
    return s + "}";
  }
  }
  return "";
}

namespace {
class Parser {
public:
  Parser(const std::string &text) : s(text) {}

  bool value(Value &out) {
    skip();
    if (i >= s.size())
      return fail("unexpected end");
    char c = s[i];
    if (c == '{')
      return object(out);
    if (c == '[')
      return array(out);
    if (c == '"') {
      out.kind = Value::String;
      return string(out.string);
    }
    if (s.compare(i, 4, "null") == 0) {
      i += 4;
      out.kind = Value::Null;
      return true;
    }
    if (s.compare(i, 4, "true") == 0 || s.compare(i, 5, "false") == 0) {
      out.kind = Value::Bool;
      out.boolean = s[i] == 't';
      i += out.boolean ? 4 : 5;
      return true;
    }
    return number(out);
  }
  bool done() {
    skip();
    return i == s.size();
  }
  std::string error;

private:
  void skip() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' ||
                            s[i] == '\r'))
      ++i;
  }
  bool fail(const std::string &what) {
    error = what + " at offset " + std::to_string(i);
    return false;
  }
  bool string(std::string &out) {
    ++i; // opening quote
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\') {
        if (++i >= s.size())
          return fail("bad escape");
        char e = s[i];
        out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
      } else {
        out.push_back(s[i]);
      }
      ++i;
    }
    if (i >= s.size())
      return fail("unterminated string");
    ++i;
    return true;
  }
  bool number(Value &out) {
    const char *begin = s.c_str() + i;
    char *end = nullptr;
    double v = std::strtod(begin, &end);
    if (end == begin)
      return fail("unexpected character");
    std::string text(begin, static_cast<size_t>(end - begin));
    out.kind = Value::Number;
    out.number = v;
    out.integral = text.find_first_of(".eE") == std::string::npos &&
                   std::fabs(v) < 9.0e15;
    i += end - begin;
    return true;
  }
  bool array(Value &out) {
    ++i;
    out.kind = Value::ArrayKind;
    out.array = std::make_shared<Array>();
    skip();
    if (i < s.size() && s[i] == ']') {
      ++i;
      return true;
    }
    while (true) {
      Value v;
      if (!value(v))
        return false;
      out.array->push_back(std::move(v));
      skip();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      if (i < s.size() && s[i] == ']') {
        ++i;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }
  bool object(Value &out) {
    ++i;
    out.kind = Value::ObjectKind;
    out.object = std::make_shared<Object>();
    skip();
    if (i < s.size() && s[i] == '}') {
      ++i;
      return true;
    }
    while (true) {
      skip();
      std::string key;
      if (i >= s.size() || s[i] != '"' || !string(key))
        return fail("expected a key");
      skip();
      if (i >= s.size() || s[i] != ':')
        return fail("expected ':'");
      ++i;
      Value v;
      if (!value(v))
        return false;
      out.object->members[key] = std::move(v);
      skip();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      if (i < s.size() && s[i] == '}') {
        ++i;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  const std::string &s;
  size_t i = 0;
};
} // namespace

std::optional<Value> parse(const std::string &text, std::string &error) {
  Parser p(text);
  Value v;
  if (!p.value(v)) {
    error = p.error;
    return std::nullopt;
  }
  if (!p.done()) {
    error = "trailing characters";
    return std::nullopt;
  }
  return v;
}

} // namespace te::json
