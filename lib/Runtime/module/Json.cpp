//===- Json.cpp - the JSON te-run reads -------------------------*- C++ -*-===//

#include "Json.h"

#include <cmath>
#include <cstdio>
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
    if (integral)
      return std::to_string(integer);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.17g", number);
    return buf;
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
    if (c == '{' || c == '[') {
      if (++depth > kMaxDepth)
        return fail("more than " + std::to_string(kMaxDepth) +
                    " levels of nesting");
      bool ok = c == '{' ? object(out) : array(out);
      --depth;
      return ok;
    }
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
    while (i < s.size() &&
           (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r'))
      ++i;
  }
  bool fail(const std::string &what) {
    error = what + " at offset " + std::to_string(i);
    return false;
  }
  static int hexDigit(char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  }
  /// Four hex digits at i (after "\u").
  bool hex4(uint32_t &out) {
    if (s.size() - i < 4)
      return fail("truncated \\u escape");
    out = 0;
    for (int k = 0; k < 4; ++k) {
      int d = hexDigit(s[i + k]);
      if (d < 0)
        return fail("bad \\u escape");
      out = out << 4 | uint32_t(d);
    }
    i += 4;
    return true;
  }
  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(char(cp));
    } else if (cp < 0x800) {
      out.push_back(char(0xc0 | cp >> 6));
      out.push_back(char(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out.push_back(char(0xe0 | cp >> 12));
      out.push_back(char(0x80 | (cp >> 6 & 0x3f)));
      out.push_back(char(0x80 | (cp & 0x3f)));
    } else {
      out.push_back(char(0xf0 | cp >> 18));
      out.push_back(char(0x80 | (cp >> 12 & 0x3f)));
      out.push_back(char(0x80 | (cp >> 6 & 0x3f)));
      out.push_back(char(0x80 | (cp & 0x3f)));
    }
  }
  bool string(std::string &out) {
    ++i; // opening quote
    while (i < s.size() && s[i] != '"') {
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out.push_back(s[i++]);
        continue;
      }
      if (++i >= s.size())
        return fail("unterminated string");
      char e = s[i++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out.push_back(e);
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        uint32_t cp = 0;
        if (!hex4(cp))
          return false;
        if (cp >= 0xd800 && cp < 0xdc00) {
          // A high surrogate needs its low half.
          uint32_t lo = 0;
          if (s.compare(i, 2, "\\u") != 0)
            return fail("unpaired surrogate in a \\u escape");
          i += 2;
          if (!hex4(lo))
            return false;
          if (lo < 0xdc00 || lo >= 0xe000)
            return fail("unpaired surrogate in a \\u escape");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        } else if (cp >= 0xdc00 && cp < 0xe000) {
          return fail("unpaired surrogate in a \\u escape");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        --i;
        return fail(std::string("bad escape '\\") + e + "'");
      }
    }
    if (i >= s.size())
      return fail("unterminated string");
    ++i;
    return true;
  }
  static bool digit(char c) { return c >= '0' && c <= '9'; }
  /// RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number(Value &out) {
    size_t begin = i;
    bool negative = i < s.size() && s[i] == '-';
    if (negative)
      ++i;
    if (i >= s.size() || !digit(s[i]))
      return i = begin, fail("unexpected character");
    if (s[i] == '0')
      ++i;
    else
      while (i < s.size() && digit(s[i]))
        ++i;
    bool integral = true;
    if (i < s.size() && s[i] == '.') {
      integral = false;
      if (++i >= s.size() || !digit(s[i]))
        return fail("expected a digit after '.'");
      while (i < s.size() && digit(s[i]))
        ++i;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      integral = false;
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-'))
        ++i;
      if (i >= s.size() || !digit(s[i]))
        return fail("expected a digit in the exponent");
      while (i < s.size() && digit(s[i]))
        ++i;
    }
    std::string text = s.substr(begin, i - begin);
    out.kind = Value::Number;
    out.number = std::strtod(text.c_str(), nullptr);
    out.integral = false;
    if (integral) {
      // Exact, when it fits: digits accumulated with overflow checks.
      int64_t v = 0;
      bool fits = true;
      for (size_t k = negative ? 1 : 0; k < text.size() && fits; ++k)
        fits = !__builtin_mul_overflow(v, 10, &v) &&
               !__builtin_add_overflow(
                   v, negative ? -(text[k] - '0') : text[k] - '0', &v);
      out.integral = fits;
      out.integer = fits ? v : 0;
    }
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
      if (!out.object->members.emplace(key, std::move(v)).second)
        return fail("duplicate key \"" + key + "\"");
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

  static constexpr int kMaxDepth = 256;
  const std::string &s;
  size_t i = 0;
  int depth = 0;
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
    error = "trailing characters after the JSON value";
    return std::nullopt;
  }
  return v;
}

} // namespace te::json
