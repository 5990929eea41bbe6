//===- Link.cpp - te-compile's link against libte_runtime -------*- C++ -*-===//
//
// The object, linked by the system's C compiler driver into a shared
// library against libte_runtime.so (--runtime-dir, $TE_RUNTIME_DIR or
// ../lib next to te-compile), with an rpath to it.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

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

int te::compile::linkLibrary(const Options &options, StringRef objPath,
                             TimingScope &timing) {
  const std::string &outputFile = options.outputFile;
  std::string libDir = findRuntimeDir(options);
  SmallString<256> runtimeLib(libDir);
  llvm::sys::path::append(runtimeLib, "libte_runtime.so");
  if (!llvm::sys::fs::exists(runtimeLib))
    return fail("cannot find " + runtimeLib +
                " (set --runtime-dir or TE_RUNTIME_DIR)");
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    cc = llvm::sys::findProgramByName("c++");
  if (!cc)
    return fail("no C compiler driver (cc) on PATH to link the library");
  std::string rpath = "-Wl,-rpath," + libDir;
  SmallVector<StringRef> linkArgs = {*cc,     "-shared",  "-o", outputFile,
                                     objPath, runtimeLib, rpath};
  std::string linkError;
  TimingScope linkTiming = timing.nest("link");
  int rc = llvm::sys::ExecuteAndWait(*cc, linkArgs, std::nullopt, {}, 0, 0,
                                     &linkError);
  linkTiming.stop();
  llvm::sys::fs::remove(objPath);
  if (rc != 0)
    return fail("linking " + outputFile + " failed" +
                (linkError.empty() ? "" : ": " + linkError));
  return 0;
}
