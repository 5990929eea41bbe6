//===- Elf.cpp - checks of a library file before dlopen ---------*- C++ -*-===//

#include "Elf.h"

#include "te/Runtime/ModuleInfoDigest.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <filesystem>
#include <fstream>
#include <vector>

namespace te::elf {

namespace {

#if defined(__x86_64__)
constexpr uint16_t kMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kMachine = EM_AARCH64;
#else
constexpr uint16_t kMachine = EM_NONE; // not checked
#endif

std::string range(uint64_t begin, uint64_t size) {
  return "file bytes " + std::to_string(begin) + ".." +
         (size > UINT64_MAX - begin ? std::string("2^64+")
                                    : std::to_string(begin + size));
}

/// [offset, offset + size) lies inside a file of `fileSize` bytes.
bool inside(uint64_t offset, uint64_t size, uint64_t fileSize) {
  return offset <= fileSize && size <= fileSize - offset;
}

template <typename T> T load(std::string_view bytes, uint64_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

} // namespace

bool checkImage(std::string_view bytes, std::string &error) {
  uint64_t size = bytes.size();
  auto fail = [&](const std::string &what) {
    error = what;
    return false;
  };
  // te-compile's trailer (te/Runtime/ModuleInfoDigest.h): the digest of every
  // byte before it.
  constexpr size_t kMagic = sizeof(TE_LIBRARY_TRAILER_MAGIC) - 1;
  const bool trailer = size >= TE_LIBRARY_TRAILER_BYTES &&
                       bytes.substr(size - kMagic) == TE_LIBRARY_TRAILER_MAGIC;
  if (trailer) {
    const size_t body = size - TE_LIBRARY_TRAILER_BYTES;
    uint64_t recorded = load<uint64_t>(bytes, body); // (little-endian)
    uint64_t digest = te_module_info_digest_of(bytes.data(), body);
    if (digest != recorded) {
      char text[80];
      std::snprintf(text, sizeof(text), "digest %016llx, recorded %016llx",
                    static_cast<unsigned long long>(digest),
                    static_cast<unsigned long long>(recorded));
      return fail("its bytes do not match the checksum te-compile recorded "
                  "(damaged or edited after compilation: " +
                  std::string(text) + "); compile it again");
    }
  }
  if (size < EI_NIDENT || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
    return fail("not an ELF file (bad magic)");
  if (bytes[EI_CLASS] != ELFCLASS64)
    return fail("not a 64-bit ELF file (te-run loads 64-bit libraries)");
  if (bytes[EI_DATA] != ELFDATA2LSB)
    return fail("not a little-endian ELF file");
  if (bytes[EI_VERSION] != EV_CURRENT)
    return fail("unknown ELF version " +
                std::to_string(int(bytes[EI_VERSION])));
  if (size < sizeof(Elf64_Ehdr))
    return fail("truncated ELF header (" + std::to_string(size) +
                " bytes; the header has " + std::to_string(sizeof(Elf64_Ehdr)) +
                ")");
  auto eh = load<Elf64_Ehdr>(bytes, 0);
  if (eh.e_type != ET_DYN)
    return fail(eh.e_type == ET_REL    ? "an object file, not a shared library"
                : eh.e_type == ET_EXEC ? "an executable, not a shared library"
                                       : "not a shared library (ELF type " +
                                             std::to_string(eh.e_type) + ")");
  if (kMachine != EM_NONE && eh.e_machine != kMachine)
    return fail("built for another machine (ELF machine " +
                std::to_string(eh.e_machine) + ")");
  if (eh.e_ehsize != sizeof(Elf64_Ehdr))
    return fail("ELF header size " + std::to_string(eh.e_ehsize) +
                " (expected " + std::to_string(sizeof(Elf64_Ehdr)) + ")");

  // Program headers: the table, then each segment's file range.
  if (eh.e_phnum == 0)
    return fail("no program headers (nothing to load)");
  if (eh.e_phentsize != sizeof(Elf64_Phdr))
    return fail("program header size " + std::to_string(eh.e_phentsize) +
                " (expected " + std::to_string(sizeof(Elf64_Phdr)) + ")");
  uint64_t phBytes = uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr);
  if (!inside(eh.e_phoff, phBytes, size))
    return fail("the program header table (" + range(eh.e_phoff, phBytes) +
                ") ends past the end of the file (" + std::to_string(size) +
                " bytes)");
  int loads = 0;
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    auto ph =
        load<Elf64_Phdr>(bytes, eh.e_phoff + uint64_t(i) * sizeof(Elf64_Phdr));
    const char *kind = ph.p_type == PT_LOAD      ? "PT_LOAD"
                       : ph.p_type == PT_DYNAMIC ? "PT_DYNAMIC"
                       : ph.p_type == PT_INTERP  ? "PT_INTERP"
                                                 : nullptr;
    if (!kind)
      continue;
    if (ph.p_type == PT_LOAD) {
      ++loads;
      if (ph.p_filesz > ph.p_memsz)
        return fail("PT_LOAD segment " + std::to_string(i) +
                    " has more file bytes than memory bytes");
    }
    if (!inside(ph.p_offset, ph.p_filesz, size))
      return fail(std::string(kind) + " segment " + std::to_string(i) + " (" +
                  range(ph.p_offset, ph.p_filesz) +
                  ") ends past the end of the file (" + std::to_string(size) +
                  " bytes)");
  }
  if (!loads)
    return fail("no PT_LOAD segment (nothing to load)");

  // Section headers, when present: the table and each section's contents.
  if (eh.e_shoff == 0)
    return true;
  if (eh.e_shentsize != sizeof(Elf64_Shdr))
    return fail("section header size " + std::to_string(eh.e_shentsize) +
                " (expected " + std::to_string(sizeof(Elf64_Shdr)) + ")");
  if (!inside(eh.e_shoff, sizeof(Elf64_Shdr), size))
    return fail("the section header table (" +
                range(eh.e_shoff, sizeof(Elf64_Shdr)) +
                ") starts past the end of the file (" + std::to_string(size) +
                " bytes)");
  uint64_t shnum = eh.e_shnum;
  if (shnum == 0) // more than SHN_LORESERVE sections: the count is in [0]
    shnum = load<Elf64_Shdr>(bytes, eh.e_shoff).sh_size;
  if (shnum > size / sizeof(Elf64_Shdr) ||
      !inside(eh.e_shoff, shnum * sizeof(Elf64_Shdr), size))
    return fail("the section header table (" + std::to_string(shnum) +
                " entries at byte " + std::to_string(eh.e_shoff) +
                ") ends past the end of the file (" + std::to_string(size) +
                " bytes)");
  for (uint64_t i = 0; i < shnum; ++i) {
    auto sh = load<Elf64_Shdr>(bytes, eh.e_shoff + i * sizeof(Elf64_Shdr));
    if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL)
      continue;
    if (!inside(sh.sh_offset, sh.sh_size, size))
      return fail("section " + std::to_string(i) + " (" +
                  range(sh.sh_offset, sh.sh_size) +
                  ") ends past the end of the file (" + std::to_string(size) +
                  " bytes)");
  }
  // Linkers end the image with the section header table; bytes after it
  // that are not a trailer are one whose magic was damaged (the checksum
  // would not have been checked).
  uint64_t imageEnd = eh.e_shoff + shnum * sizeof(Elf64_Shdr);
  if (!trailer && size > imageEnd)
    return fail(std::to_string(size - imageEnd) +
                " bytes after the ELF image are not te-compile's checksum "
                "trailer (damaged?); compile it again");
  return true;
}

bool checkLibrary(const std::string &path, std::string &error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    error = "no such file";
    return false;
  }
  if (!fs::is_regular_file(st)) {
    error = "not a regular file";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open it";
    return false;
  }
  in.seekg(0, std::ios::end);
  std::streamoff end = in.tellg();
  // Compiled libraries are small; more than 4 GiB is not one of them.
  if (end < 0 || uint64_t(end) > (uint64_t(1) << 32)) {
    error = "cannot read it, or larger than 4 GiB";
    return false;
  }
  std::string bytes(static_cast<size_t>(end), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), end)) {
    error = "cannot read it";
    return false;
  }
  return checkImage(bytes, error);
}

} // namespace te::elf
