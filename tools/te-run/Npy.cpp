//===- Npy.cpp - NumPy .npy files for te-run --------------------*- C++ -*-===//
//
// The .npy format (numpy.lib.format): the magic "\x93NUMPY", a major and a
// minor version byte, the header length (2 bytes little-endian in 1.0, 4 in
// 2.0 and 3.0), the header (a Python dict literal padded with spaces and
// ended by a newline), then the data. The header grammar accepted here:
//
//   header := ws '{' ws [item (ws ',' ws item)* ws [',']] ws '}' ws
//   item   := key ws ':' ws value      key := STRING
//   'descr': STRING    'fortran_order': True | False
//   'shape': '(' ws ')' | '(' ws INT ws ',' ws ')'
//          | '(' ws INT (ws ',' ws INT)+ ws [','] ws ')'
//   STRING := '...' | "..." (printable ASCII, no escapes)
//   INT    := '0' | [1-9][0-9]*          (fits in int64)
//
// with each of the three keys exactly once. The element count and the byte
// count are checked for overflow and compared with the file's size before
// any data is allocated; the data must fill the rest of the file exactly.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>

namespace te::npy {

namespace {

/// A cursor over the header text; every failure names the field and the
/// byte offset.
class HeaderParser {
public:
  HeaderParser(std::string_view text, std::string &error)
      : s(text), error(error) {}

  bool parse(Header &out) {
    skipSpaces();
    if (!consume('{'))
      return fail("the header is not a dict (expected '{')");
    bool haveDescr = false, haveOrder = false, haveShape = false;
    while (true) {
      skipSpaces();
      if (atEnd())
        return fail("unterminated dict (no closing '}')");
      if (consume('}'))
        break;
      std::string key;
      if (!string(key, "a key"))
        return false;
      skipSpaces();
      if (!consume(':'))
        return fail("expected ':' after the key '" + key + "'");
      skipSpaces();
      bool *seen = key == "descr"           ? &haveDescr
                   : key == "fortran_order" ? &haveOrder
                   : key == "shape"         ? &haveShape
                                            : nullptr;
      if (!seen)
        return fail("unknown key '" + printable(key) +
                    "' (a .npy header has 'descr', 'fortran_order' and "
                    "'shape')");
      if (*seen)
        return fail("duplicate key '" + key + "'");
      *seen = true;
      field = key;
      if (key == "descr" && !string(out.descr, "a string"))
        return false;
      if (key == "fortran_order" && !boolean(out.fortranOrder))
        return false;
      if (key == "shape" && !shape(out.shape))
        return false;
      field.clear();
      skipSpaces();
      if (consume(','))
        continue;
      if (atEnd())
        return fail("unterminated dict (no closing '}')");
      if (peek() != '}')
        return fail("expected ',' or '}' after the value of '" + key + "'");
    }
    skipSpaces();
    if (!atEnd())
      return fail("trailing characters after the header dict");
    for (auto [have, key] : {std::pair{haveDescr, "descr"},
                             {haveOrder, "fortran_order"},
                             {haveShape, "shape"}})
      if (!have)
        return fail(std::string("missing key '") + key + "'");
    return true;
  }

private:
  bool atEnd() const { return i >= s.size(); }
  char peek() const { return atEnd() ? '\0' : s[i]; }
  bool consume(char c) {
    if (peek() != c || atEnd())
      return false;
    ++i;
    return true;
  }
  void skipSpaces() {
    while (!atEnd() &&
           (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
      ++i;
  }
  static std::string printable(std::string_view text) {
    std::string out;
    for (char c : text.substr(0, 40))
      out += (c >= 0x20 && c < 0x7f) ? c : '?';
    return out;
  }
  bool fail(const std::string &what) {
    error = (field.empty() ? "malformed header: "
                           : "malformed header field '" + field + "': ") +
            what + " (at byte " + std::to_string(i) + " of the header)";
    return false;
  }
  /// The next token's text, for messages.
  std::string token() const {
    size_t end = i;
    while (end < s.size() && end - i < 40 && s[end] != ',' && s[end] != ')' &&
           s[end] != '}' && s[end] != ' ')
      ++end;
    return printable(s.substr(i, end - i));
  }
  bool string(std::string &out, const char *what) {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      return fail(std::string("expected ") + what +
                  " (a quoted string), got '" + token() + "'");
    ++i;
    out.clear();
    while (true) {
      if (atEnd())
        return fail("unterminated string");
      char c = s[i];
      if (c == quote)
        break;
      if (c == '\\')
        return fail("escape sequences are not supported in strings");
      if (c < 0x20 || c >= 0x7f)
        return fail("a non-printable character in a string");
      out.push_back(c);
      ++i;
    }
    ++i;
    return true;
  }
  bool boolean(bool &out) {
    if (s.substr(i, 4) == "True")
      out = true, i += 4;
    else if (s.substr(i, 5) == "False")
      out = false, i += 5;
    else
      return fail("expected True or False, got '" + token() + "'");
    // No identifier may continue the word (e.g. `Falsehood`).
    char c = peek();
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_')
      return fail("expected True or False");
    return true;
  }
  bool integer(size_t index, int64_t &out) {
    size_t begin = i;
    uint64_t v = 0;
    while (!atEnd() && s[i] >= '0' && s[i] <= '9') {
      uint64_t digit = uint64_t(s[i] - '0');
      if (v > (uint64_t(INT64_MAX) - digit) / 10) {
        i = begin;
        return fail("dim " + std::to_string(index) + " is too large (" +
                    token() + " does not fit in int64)");
      }
      v = v * 10 + digit;
      ++i;
    }
    char next = peek();
    bool bad = i == begin || (s[begin] == '0' && i - begin > 1) ||
               std::isalnum(static_cast<unsigned char>(next)) || next == '.' ||
               next == '_';
    if (bad) {
      i = begin;
      return fail("dim " + std::to_string(index) + " is '" + token() +
                  "', not a non-negative integer");
    }
    out = int64_t(v);
    return true;
  }
  bool shape(std::vector<int64_t> &out) {
    if (!consume('('))
      return fail("expected a tuple '(...)', got '" + token() + "'");
    out.clear();
    bool trailingComma = false;
    while (true) {
      skipSpaces();
      if (atEnd())
        return fail("unterminated tuple (no closing ')')");
      if (consume(')'))
        break;
      if (!out.empty() && !trailingComma)
        return fail("expected ',' or ')' after dim " +
                    std::to_string(out.size() - 1));
      if (out.size() >= 64)
        return fail("more than 64 dims");
      int64_t d;
      if (!integer(out.size(), d))
        return false;
      out.push_back(d);
      skipSpaces();
      trailingComma = consume(',');
    }
    // `(8)` is the integer 8 in Python, not a tuple.
    if (out.size() == 1 && !trailingComma)
      return fail("a one-dim shape needs a trailing comma, e.g. (8,)");
    return true;
  }

  std::string_view s;
  std::string &error;
  std::string field;
  size_t i = 0;
};

/// Random access to the bytes of a file or of a buffer.
class Source {
public:
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  /// Reads `n` bytes at `offset` (inside size()) into `dst`.
  virtual bool readAt(uint64_t offset, size_t n, char *dst) = 0;
};

class BufferSource : public Source {
public:
  explicit BufferSource(std::string_view bytes) : bytes(bytes) {}
  uint64_t size() const override { return bytes.size(); }
  bool readAt(uint64_t offset, size_t n, char *dst) override {
    if (offset > bytes.size() || n > bytes.size() - offset)
      return false;
    if (n)
      std::memcpy(dst, bytes.data() + offset, n);
    return true;
  }

private:
  std::string_view bytes;
};

class FileSource : public Source {
public:
  FileSource(std::ifstream &in, uint64_t bytes) : in(in), bytes(bytes) {}
  uint64_t size() const override { return bytes; }
  bool readAt(uint64_t offset, size_t n, char *dst) override {
    in.clear();
    in.seekg(std::streamoff(offset));
    return bool(in.read(dst, std::streamsize(n)));
  }

private:
  std::ifstream &in;
  uint64_t bytes;
};

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

bool parseSource(Source &src, const std::string &name, Array &out,
                 std::string &error) {
  auto fail = [&](const std::string &what) {
    error = "'" + name + "': " + what;
    return false;
  };
  uint64_t fileSize = src.size();
  unsigned char prefix[12];
  if (fileSize < 8 || !src.readAt(0, 8, reinterpret_cast<char *>(prefix)) ||
      std::memcmp(prefix, "\x93NUMPY", 6) != 0) {
    error = "'" + name + "' is not a .npy file (bad magic)";
    return false;
  }
  unsigned major = prefix[6], minor = prefix[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return fail("unsupported .npy version " + std::to_string(major) + "." +
                std::to_string(minor) + " (1.0, 2.0 and 3.0 are read)");
  uint64_t lenBytes = major == 1 ? 2 : 4;
  if (fileSize < 8 + lenBytes ||
      !src.readAt(8, lenBytes, reinterpret_cast<char *>(prefix + 8)))
    return fail("truncated header (the file ends in the header length)");
  uint64_t headerLen = prefix[8] | (uint64_t(prefix[9]) << 8);
  if (major != 1)
    headerLen |= (uint64_t(prefix[10]) << 16) | (uint64_t(prefix[11]) << 24);
  uint64_t dataOffset = 8 + lenBytes + headerLen;
  if (headerLen > fileSize - 8 - lenBytes)
    return fail("truncated header (the header length says " +
                std::to_string(headerLen) + " bytes, the file has " +
                std::to_string(fileSize - 8 - lenBytes) + " after it)");
  if (headerLen > (1u << 20))
    return fail("header too large (" + std::to_string(headerLen) +
                " bytes; at most 1 MiB)");
  std::string text(headerLen, '\0');
  if (!src.readAt(8 + lenBytes, headerLen, text.data()))
    return fail("cannot read the header");
  Header header;
  std::string why;
  if (!parseHeader(text, header, why))
    return fail(why);
  int64_t elem = elementBytes(header.descr);
  if (!elem)
    return fail("unsupported dtype '" + header.descr +
                "' (expected '<f4' float32, '<f2' float16, '<u2' bf16 bits "
                "or '|u1' quantized-tensor bytes)");
  if (header.fortranOrder)
    return fail("Fortran-ordered arrays are not supported");
  // Elements and bytes, checked, before anything is allocated.
  int64_t count = 1, bytes = 0;
  for (int64_t d : header.shape)
    if (__builtin_mul_overflow(count, d, &count))
      return fail("header field 'shape': " + shapeText(header.shape) +
                  " has more elements than fit in int64");
  if (__builtin_mul_overflow(count, elem, &bytes))
    return fail("header field 'shape': " + shapeText(header.shape) + " of " +
                dtypeName(header.descr) +
                " needs more bytes than fit in "
                "int64");
  uint64_t available = fileSize - dataOffset;
  if (uint64_t(bytes) > available)
    return fail("truncated data: shape " + shapeText(header.shape) + " of " +
                dtypeName(header.descr) + " needs " + std::to_string(bytes) +
                " bytes, the file has " + std::to_string(available) +
                " after the header");
  if (uint64_t(bytes) < available)
    return fail("trailing bytes after the data: shape " +
                shapeText(header.shape) + " of " + dtypeName(header.descr) +
                " needs " + std::to_string(bytes) + " bytes, the file has " +
                std::to_string(available) + " after the header");
  try {
    out.data.assign(static_cast<size_t>(bytes), '\0');
  } catch (const std::bad_alloc &) {
    return fail("out of memory reading " + std::to_string(bytes) +
                " bytes of data");
  }
  if (bytes && !src.readAt(dataOffset, size_t(bytes), out.data.data()))
    return fail("cannot read the data");
  out.descr = header.descr;
  out.shape = header.shape;
  return true;
}

} // namespace

bool parseHeader(std::string_view text, Header &out, std::string &error) {
  return HeaderParser(text, error).parse(out);
}

int64_t elementBytes(std::string_view descr) {
  if (descr == "<f4")
    return 4;
  if (descr == "<u2" || descr == "<f2")
    return 2;
  if (descr == "|u1")
    return 1;
  return 0;
}

std::string dtypeName(std::string_view descr) {
  if (descr == "<f4")
    return "float32";
  if (descr == "<f2")
    return "float16";
  if (descr == "<u2")
    return "uint16";
  if (descr == "|u1")
    return "uint8";
  return "'" + std::string(descr) + "'";
}

bool parse(std::string_view bytes, const std::string &name, Array &out,
           std::string &error) {
  BufferSource src(bytes);
  return parseSource(src, name, out, error);
}

bool read(const std::string &path, Array &out, std::string &error) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) &&
      !std::filesystem::is_regular_file(path, ec)) {
    error = "cannot read '" + path + "': not a regular file";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "'";
    return false;
  }
  in.seekg(0, std::ios::end);
  std::streamoff end = in.tellg();
  if (!in || end < 0) {
    error = "cannot read '" + path + "' (not a regular file?)";
    return false;
  }
  FileSource src(in, uint64_t(end));
  return parseSource(src, path, out, error);
}

bool write(const std::string &path, const Array &array, std::string &error) {
  std::string shape = shapeText(array.shape);
  std::string header = "{'descr': '" + array.descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts at a multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) {
    error = "cannot write '" + path + "'";
    return false;
  }
  out.write("\x93NUMPY\x01\x00", 8);
  unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                          static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<char *>(len), 2);
  out.write(header.data(), header.size());
  out.write(array.data.data(), array.data.size());
  if (!out) {
    error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}

} // namespace te::npy
