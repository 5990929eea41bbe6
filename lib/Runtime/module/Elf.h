//===- Elf.h - checks of a library file before dlopen -----------*- C++ -*-===//
//
// dlopen maps a shared library's segments and trusts its headers: a file
// cut short (a copy interrupted, a full disk) dies with SIGBUS inside the
// loader. checkLibrary() reads the file first and refuses what the loader
// would trip on: not a regular file, not a 64-bit little-endian ELF shared
// object for this machine, header tables or PT_LOAD / PT_DYNAMIC file
// ranges or section contents outside the file.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_RUN_ELF_H
#define TE_TOOLS_TE_RUN_ELF_H

#include <string>
#include <string_view>

namespace te::elf {

/// Checks the ELF image `bytes` (the whole file); false with `error` saying
/// what is wrong (e.g. "PT_LOAD segment 2 (file bytes 16384..20480) ends
/// past the end of the file (4000 bytes)").
bool checkImage(std::string_view bytes, std::string &error);

/// Checks the file at `path`: exists, is a regular file, then checkImage.
bool checkLibrary(const std::string &path, std::string &error);

} // namespace te::elf

#endif // TE_TOOLS_TE_RUN_ELF_H
