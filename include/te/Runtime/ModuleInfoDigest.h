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

#endif /* TE_RUNTIME_MODULEINFODIGEST_H */
