//===- Link.cpp - te-compile's link against libte_runtime -------*- C++ -*-===//
//
// The object, linked in-process by LLD (the ELF driver, as a library) into a
// shared library against libte_runtime.so (--runtime-dir, $TE_RUNTIME_DIR or
// ../lib next to te-compile), with a runpath to it. No C compiler or system
// linker is needed at run time.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "lld/Common/Driver.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "te/Runtime/ModuleInfoDigest.h"

#include <cstdlib>
#include <cstring>

LLD_HAS_DRIVER(elf)

using namespace mlir;
using namespace mlir::te::compile;

/// The directory of libte_runtime.so.
static std::string findRuntimeDir(const Options &options) {
  std::string libDir = options.runtimeDir;
  if (libDir.empty())
    if (const char *env = std::getenv("TE_RUNTIME_DIR"))
      libDir = env;
  if (libDir.empty()) {
    std::string self = llvm::sys::fs::getMainExecutable(
        options.argv0.c_str(), (void *)&findRuntimeDir);
    SmallString<256> dir(
        llvm::sys::path::parent_path(llvm::sys::path::parent_path(self)));
    llvm::sys::path::append(dir, "lib");
    libDir = dir.str().str();
  }
  return libDir;
}

/// LLD's diagnostics joined by "; " (te-compile's diagnostic is one line),
/// without LLD's "ld.lld: error: " prefixes and its caret lines.
static std::string lldMessages(StringRef text) {
  SmallVector<StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  SmallVector<std::string> out;
  for (StringRef line : lines) {
    line = line.trim();
    line.consume_front("ld.lld: ");
    if (!line.consume_front("error: "))
      line.consume_front("warning: ");
    if (line.starts_with(">>>") &&
        line.drop_front(3).trim().find_first_not_of("^~ ") == StringRef::npos)
      continue;
    if (!line.empty())
      out.push_back(line.str());
  }
  return llvm::join(out, "; ");
}

/// Runs LLD's ELF driver on `args`; its output text goes to `messages`.
static bool runLLD(ArrayRef<const char *> args, std::string &messages) {
  llvm::raw_string_ostream os(messages);
  lld::Result result =
      lld::lldMain(args, os, os, {{lld::Gnu, &lld::elf::link}});
  os.flush();
  return result.retCode == 0;
}

/// Appends te_module_open's trailer to the linked library at `path` (the
/// digest of its bytes, then TE_LIBRARY_TRAILER_MAGIC;
/// te/Runtime/ModuleInfoDigest.h). Returns "" or what failed.
static std::string appendTrailer(StringRef path) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return file.getError().message();
  StringRef bytes = (*file)->getBuffer();
  uint64_t digest = te_module_info_digest_of(bytes.data(), bytes.size());
  char trailer[TE_LIBRARY_TRAILER_BYTES];
  for (int i = 0; i < 8; ++i)
    trailer[i] = static_cast<char>(digest >> (8 * i));
  std::memcpy(trailer + 8, TE_LIBRARY_TRAILER_MAGIC, 8);
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_Append);
  if (ec)
    return ec.message();
  out.write(trailer, sizeof(trailer));
  out.close();
  return out.has_error() ? out.error().message() : "";
}

int te::compile::linkLibrary(const Options &options, StringRef objPath,
                             TimingScope &timing) {
  const std::string &outputFile = options.outputFile;
  std::string libDir = findRuntimeDir(options);
  SmallString<256> runtimeLib(libDir);
  llvm::sys::path::append(runtimeLib, "libte_runtime.so");
  if (!llvm::sys::fs::exists(runtimeLib)) {
    llvm::sys::fs::remove(objPath);
    return fail("cannot find " + runtimeLib +
                " (set --runtime-dir or TE_RUNTIME_DIR)");
  }
  // LLD writes a temporary beside the output, renamed over it on success:
  // a failed link leaves neither a partial library nor a stale one.
  SmallString<256> tmpPath;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(
          outputFile + "-%%%%%%.tmp", tmpPath)) {
    llvm::sys::fs::remove(objPath);
    return fail("cannot create a file beside " + outputFile + ": " +
                ec.message());
  }
  // The runtime by path: DT_NEEDED is its SONAME (libte_runtime.so), which
  // the loader matches to the copy a process already has. Undefined libc /
  // libm symbols resolve, at load time, through the runtime's own needs.
  std::string rpath = "-rpath=" + libDir;
  std::string object = objPath.str();
  SmallVector<const char *> args = {"ld.lld",
                                    "-shared",
                                    "--eh-frame-hdr",
                                    "--hash-style=gnu",
                                    "--build-id",
                                    "-z",
                                    "relro",
                                    "-z",
                                    "noexecstack",
                                    "-o",
                                    tmpPath.c_str(),
                                    object.c_str(),
                                    runtimeLib.c_str(),
                                    rpath.c_str()};
  std::string messages;
  TimingScope linkTiming = timing.nest("link");
  bool ok = runLLD(args, messages);
  linkTiming.stop();
  llvm::sys::fs::remove(objPath);
  std::string text = lldMessages(messages);
  if (!ok) {
    llvm::sys::fs::remove(tmpPath);
    llvm::sys::fs::remove(outputFile);
    return fail("linking " + outputFile + " failed" +
                (text.empty() ? "" : ": " + text));
  }
  if (std::string why = appendTrailer(tmpPath); !why.empty()) {
    llvm::sys::fs::remove(tmpPath);
    llvm::sys::fs::remove(outputFile);
    return fail("cannot write " + outputFile + ": " + why);
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmpPath, outputFile)) {
    llvm::sys::fs::remove(tmpPath);
    return fail("cannot write " + outputFile + ": " + ec.message());
  }
  if (!text.empty())
    llvm::errs() << "te-compile: warning: link: " << text << "\n";
  return 0;
}
