//===- Npy.cpp - NumPy .npy files for te-run --------------------*- C++ -*-===//

#include "Npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace te::npy {

namespace {
/// The value of `key` in the header dict, e.g. `'descr': '<f4'`.
bool field(const std::string &header, const std::string &key,
           std::string &value) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos)
    return false;
  size_t colon = header.find(':', k);
  if (colon == std::string::npos)
    return false;
  size_t start = header.find_first_not_of(" ", colon + 1);
  if (start == std::string::npos)
    return false;
  size_t end;
  if (header[start] == '\'') {
    end = header.find('\'', start + 1);
    if (end == std::string::npos)
      return false;
    value = header.substr(start + 1, end - start - 1);
  } else if (header[start] == '(') {
    end = header.find(')', start);
    if (end == std::string::npos)
      return false;
    value = header.substr(start + 1, end - start - 1);
  } else {
    end = header.find_first_of(",}", start);
    value = header.substr(start, end - start);
  }
  return true;
}

int64_t elementBytes(const std::string &descr) {
  if (descr == "<f4")
    return 4;
  if (descr == "<u2" || descr == "<f2")
    return 2;
  if (descr == "|u1")
    return 1;
  return 0;
}
} // namespace

bool read(const std::string &path, Array &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "'";
    return false;
  }
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    error = "'" + path + "' is not a .npy file (bad magic)";
    return false;
  }
  uint32_t headerLen = 0;
  if (magic[6] == 1) {
    unsigned char len[2];
    if (!in.read(reinterpret_cast<char *>(len), 2)) {
      error = "'" + path + "': truncated header";
      return false;
    }
    headerLen = len[0] | (len[1] << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char len[4];
    if (!in.read(reinterpret_cast<char *>(len), 4)) {
      error = "'" + path + "': truncated header";
      return false;
    }
    headerLen = len[0] | (len[1] << 8) | (len[2] << 16) | (uint32_t(len[3]) << 24);
  } else {
    error = "'" + path + "': unsupported .npy version " +
            std::to_string(int(magic[6]));
    return false;
  }
  if (headerLen > (1u << 20)) {
    error = "'" + path + "': header too large";
    return false;
  }
  std::string header(headerLen, '\0');
  if (!in.read(header.data(), headerLen)) {
    error = "'" + path + "': truncated header";
    return false;
  }
  std::string descr, order, shape;
  if (!field(header, "descr", descr) || !field(header, "fortran_order", order) ||
      !field(header, "shape", shape)) {
    error = "'" + path + "': malformed header";
    return false;
  }
  if (order.find("False") == std::string::npos) {
    error = "'" + path + "': Fortran-ordered arrays are not supported";
    return false;
  }
  if (!elementBytes(descr)) {
    error = "'" + path + "': unsupported dtype '" + descr +
            "' (expected '<f4' float32, '<f2' float16, '<u2' bf16 bits or '|u1' quantized-tensor bytes)";
    return false;
  }
  out.descr = descr;
  out.shape.clear();
  std::stringstream ss(shape);
  std::string item;
  int64_t count = 1;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find_first_not_of(" ");
    if (a == std::string::npos)
      continue;
    char *end = nullptr;
    long long d = std::strtoll(item.c_str() + a, &end, 10);
    if (end == item.c_str() + a || d < 0) {
      error = "'" + path + "': malformed shape (" + shape + ")";
      return false;
    }
    out.shape.push_back(d);
    count *= d;
  }
  int64_t bytes = count * elementBytes(descr);
  out.data.resize(bytes);
  if (bytes && !in.read(out.data.data(), bytes)) {
    error = "'" + path + "': truncated data (expected " +
            std::to_string(bytes) + " bytes)";
    return false;
  }
  if (in.peek() != std::char_traits<char>::eof()) {
    error = "'" + path + "': trailing bytes after the data";
    return false;
  }
  return true;
}

bool write(const std::string &path, const Array &array, std::string &error) {
  std::string shape = "(";
  for (size_t i = 0; i < array.shape.size(); ++i)
    shape += std::to_string(array.shape[i]) +
             (array.shape.size() == 1 || i + 1 < array.shape.size() ? "," : "");
  shape += ")";
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
