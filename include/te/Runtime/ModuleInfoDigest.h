/*===- ModuleInfoDigest.h - the digest of a library's module info -*- C -*-===*\
|*                                                                          *|
|* te-compile records the FNV-1a 64 digest of a library's te_module_info()  *|
|* text as te_module_info_digest(); te_module_open recomputes it and        *|
|* refuses a library whose description no longer matches (edited or         *|
|* damaged after compilation). One definition for both sides. Plain C.      *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef TE_RUNTIME_MODULEINFODIGEST_H
#define TE_RUNTIME_MODULEINFODIGEST_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a 64 of the `size` bytes at `text` (no terminating NUL). */
static inline uint64_t te_module_info_digest_of(const char *text, size_t size) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < size; ++i)
    h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
  return h;
}

/* The library trailer. te-compile appends 16 bytes to each library it links:
 * the digest above of every byte before them (8 bytes, little-endian), then
 * the 8 bytes of TE_LIBRARY_TRAILER_MAGIC. The loader ignores bytes past the
 * last section; te_module_open recomputes the digest before dlopen and
 * refuses a file whose bytes changed (one flipped byte of a header or symbol
 * table can crash the loader, or send a call anywhere). A file without the
 * trailer (a hand-made library, an older te-compile) is not checked. */
#define TE_LIBRARY_TRAILER_MAGIC "TEMLSUM1"
#define TE_LIBRARY_TRAILER_BYTES 16

#endif /* TE_RUNTIME_MODULEINFODIGEST_H */
