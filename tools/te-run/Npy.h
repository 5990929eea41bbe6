//===- Npy.h - NumPy .npy files for te-run ----------------------*- C++ -*-===//
//
// Reads and writes the .npy files te-run exchanges (format version 1.0/2.0,
// little-endian, C order). bf16 tensors are stored as uint16 ('<u2') with the
// raw bf16 bits, in files named *.bf16.npy (the repository's convention).
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_RUN_NPY_H
#define TE_TOOLS_TE_RUN_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace te::npy {

struct Array {
  std::string descr; ///< '<f4', '<u2' (bf16 bits), '<f2'
  std::vector<int64_t> shape;
  std::vector<char> data;
};

/// Reads `path`; on failure returns false with `error` saying why (missing
/// file, not an .npy, unsupported dtype or order, truncated data).
bool read(const std::string &path, Array &out, std::string &error);

/// Writes `array` to `path`; false with `error` on failure.
bool write(const std::string &path, const Array &array, std::string &error);

} // namespace te::npy

#endif // TE_TOOLS_TE_RUN_NPY_H
