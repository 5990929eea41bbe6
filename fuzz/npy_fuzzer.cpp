//===- npy_fuzzer.cpp - libFuzzer target: te-run's .npy reader ---*- C++
//-*-===//
//
// Feeds arbitrary bytes to te::npy::parse (the whole-file reader te-run uses
// on --input files) and to te::npy::parseHeader. A file is accepted only
// with a well-formed header and exactly the data its shape needs; the
// checks below abort (a crash for libFuzzer) when an accepted file breaks
// that.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  te::npy::Array array;
  std::string error;
  if (te::npy::parse(bytes, "fuzz.npy", array, error)) {
    int64_t n = 1;
    for (int64_t d : array.shape) {
      if (d < 0 || __builtin_mul_overflow(n, d, &n))
        std::abort(); // an accepted shape must be valid
    }
    int64_t elem = te::npy::elementBytes(array.descr);
    if (!elem || int64_t(array.data.size()) != n * elem ||
        array.data.size() > size)
      std::abort(); // the data must be exactly what the shape needs
  } else if (error.empty() || error.find("fuzz.npy") == std::string::npos) {
    std::abort(); // every refusal names the file
  }
  // The header grammar on its own (the bytes as the dict text).
  te::npy::Header header;
  error.clear();
  if (!te::npy::parseHeader(bytes, header, error) && error.empty())
    std::abort();
  return 0;
}
