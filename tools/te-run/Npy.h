//===- Npy.h - NumPy .npy files for te-run ----------------------*- C++ -*-===//
//
// Reads and writes the .npy files te-run exchanges (format version 1.0, 2.0
// or 3.0, little-endian, C order). bf16 tensors are stored as uint16 ('<u2')
// with the raw bf16 bits, in files named *.bf16.npy (the repository's
// convention). The reader is a strict parser of NumPy's header grammar and
// checks the data size against the file before it allocates anything.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_RUN_NPY_H
#define TE_TOOLS_TE_RUN_NPY_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace te::npy {

struct Array {
  std::string descr; ///< '<f4', '<u2' (bf16 bits), '<f2', '|u1'
  std::vector<int64_t> shape;
  std::vector<char> data;
};

/// The header dict of a .npy file: exactly the keys 'descr',
/// 'fortran_order' and 'shape'.
struct Header {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// Parses the text of a header dict, e.g.
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (8, 32), }` followed
/// by padding spaces and a newline. On failure returns false with `error`
/// naming the field and what is wrong.
bool parseHeader(std::string_view text, Header &out, std::string &error);

/// The element size of a supported descr, 0 for others.
int64_t elementBytes(std::string_view descr);

/// A readable name of a descr: "float32", "float16", "uint16", "uint8" (or
/// the descr itself when unknown).
std::string dtypeName(std::string_view descr);

/// Parses the bytes of a whole .npy file (named `name` in messages).
bool parse(std::string_view bytes, const std::string &name, Array &out,
           std::string &error);

/// Reads `path`; on failure returns false with `error` saying why (missing
/// file, not an .npy, malformed header, unsupported dtype or order, data
/// size different from what the shape needs).
bool read(const std::string &path, Array &out, std::string &error);

/// Writes `array` to `path`; false with `error` on failure.
bool write(const std::string &path, const Array &array, std::string &error);

} // namespace te::npy

#endif // TE_TOOLS_TE_RUN_NPY_H
