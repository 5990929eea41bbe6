//===- DimExpr.cpp - te-run's dim expressions -------------------*- C++ -*-===//

#include "DimExpr.h"

#include <cctype>
#include <string_view>

namespace te::dimexpr {

namespace {


/// Recursive descent over the grammar of DimExpr.h. With `syntaxOnly` no
/// arithmetic is done (every value is 0) and only the form is checked.
class Parser {
public:
  Parser(const std::string &text, const std::vector<int64_t> *dims,
         size_t numDims, Failure &failure)
      : text(text), dims(dims), numDims(numDims), failure(failure) {}

  std::optional<int64_t> run() {
    int64_t v = 0;
    if (!expr(v))
      return std::nullopt;
    skipSpaces();
    if (pos != text.size()) {
      fail("unexpected '" + text.substr(pos, 1) + "'");
      return std::nullopt;
    }
    return v;
  }

private:
  bool fail(const std::string &why) {
    failure.kind = Failure::Syntax;
    failure.message = "malformed dim expression '" + text + "' at column " +
                      std::to_string(pos + 1) + ": " + why;
    return false;
  }
  bool overflow() {
    failure.kind = Failure::Overflow;
    failure.message = "dim expression '" + text + "' overflows int64";
    return false;
  }
  void skipSpaces() {
    while (pos < text.size() && text[pos] == ' ')
      ++pos;
  }
  bool consume(char c) {
    skipSpaces();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool expect(char c) {
    return consume(c) || fail(std::string("expected '") + c + "'");
  }
  /// A positive divisor. Its value is known only when evaluating, so a
  /// well-formed expression can still fail here (kind Divisor, not Syntax).
  bool divisor(int64_t v, const char *op) {
    if (syntaxOnly() || v > 0)
      return true;
    failure.kind = Failure::Divisor;
    failure.message = "dim expression '" + text + "' at column " +
                      std::to_string(pos + 1) + ": " + op + " by " +
                      std::to_string(v) + ", not a positive divisor";
    return false;
  }
  bool syntaxOnly() const { return dims == nullptr; }

  bool expr(int64_t &v) {
    if (!term(v))
      return false;
    while (true) {
      bool plus = consume('+');
      if (!plus && !consume('-'))
        return true;
      int64_t r;
      if (!term(r))
        return false;
      if (syntaxOnly())
        continue;
      if (plus ? __builtin_add_overflow(v, r, &v)
               : __builtin_sub_overflow(v, r, &v))
        return overflow();
    }
  }
  bool term(int64_t &v) {
    if (!factor(v))
      return false;
    while (true) {
      if (consume('*')) {
        int64_t r;
        if (!factor(r))
          return false;
        if (!syntaxOnly() && __builtin_mul_overflow(v, r, &v))
          return overflow();
      } else if (consume('/')) {
        int64_t d;
        if (!factor(d) || !divisor(d, "division"))
          return false;
        if (syntaxOnly())
          continue;
        if (v % d != 0) {
          failure.kind = Failure::Inexact;
          failure.divisor = d;
          failure.message = "dim expression '" + text +
                            "': " + std::to_string(v) +
                            " is not divisible by " + std::to_string(d) +
                            " (the recipe needs a multiple of " +
                            std::to_string(d) + " there)";
          return false;
        }
        v /= d;
      } else {
        return true;
      }
    }
  }
  bool factor(int64_t &v) {
    v = 0;
    if (++depth > kMaxDepth)
      return fail("more than " + std::to_string(kMaxDepth) +
                  " levels of nesting");
    bool ok = factorBody(v);
    --depth;
    return ok;
  }
  bool factorBody(int64_t &v) {
    skipSpaces();
    if (consume('('))
      return expr(v) && expect(')');
    size_t begin = pos;
    while (pos < text.size() &&
           std::isalnum(static_cast<unsigned char>(text[pos])))
      ++pos;
    std::string word = text.substr(begin, pos - begin);
    if (word.empty())
      return fail(pos < text.size() ? "unexpected '" + text.substr(pos, 1) + "'"
                                    : "unexpected end");
    if (std::optional<uint64_t> n = parseUnsigned(word)) {
      v = int64_t(*n);
      return true;
    }
    if (word[0] == 'd' && word.size() > 1 &&
        std::isdigit(static_cast<unsigned char>(word[1]))) {
      std::optional<uint64_t> k =
          parseUnsigned(std::string_view(word).substr(1));
      if (!k || *k >= numDims)
        return fail("unknown dim symbol '" + word + "' (the entry has " +
                    std::to_string(numDims) + " dim symbols)");
      v = syntaxOnly() ? 0 : (*dims)[*k];
      return true;
    }
    if (word == "ceildiv" || word == "roundup") {
      int64_t a, b;
      if (!expect('(') || !expr(a) || !expect(',') || !expr(b) ||
          !divisor(b, word.c_str()) || !expect(')'))
        return false;
      if (syntaxOnly())
        return true;
      // ceil(a / b) for any sign of a; b > 0.
      int64_t q = a / b + (a % b > 0 ? 1 : 0);
      if (word == "roundup" && __builtin_mul_overflow(q, b, &q))
        return overflow();
      v = q;
      return true;
    }
    pos = begin;
    return fail("unknown word '" + word + "'");
  }

  static constexpr int kMaxDepth = 64;
  const std::string &text;
  const std::vector<int64_t> *dims;
  size_t numDims;
  Failure &failure;
  size_t pos = 0;
  int depth = 0;
};

} // namespace

std::optional<int64_t> evaluate(const std::string &text,
                                const std::vector<int64_t> &dims,
                                Failure &failure) {
  std::optional<int64_t> v = Parser(text, &dims, dims.size(), failure).run();
  // Evaluation stops at the first failing value; a malformed rest is the
  // error to report then (checked only on this failure path).
  if (!v && failure.kind != Failure::Syntax) {
    Failure syntax;
    if (!checkSyntax(text, dims.size(), syntax))
      failure = syntax;
  }
  return v;
}

bool checkSyntax(const std::string &text, size_t numDims, Failure &failure) {
  return Parser(text, nullptr, numDims, failure).run().has_value();
}


std::optional<uint64_t> parseUnsigned(std::string_view s) {
  if (s.empty() || s.size() > 18)
    return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + uint64_t(c - '0');
  }
  return v;
}

std::optional<size_t> symbolIndex(const std::string &text) {
  if (text.size() < 2 || text[0] != 'd')
    return std::nullopt;
  std::optional<uint64_t> k = parseUnsigned(std::string_view(text).substr(1));
  if (!k)
    return std::nullopt;
  return size_t(*k);
}

} // namespace te::dimexpr
