//===- StaticLLVM.cpp - what a static te-compile lacks from LLVM --*- C++ -*-===//
//
// Built with TE_STATIC_LLVM only. Debian's LLVM links Polly into its tools
// (llvm/Support/Extension.def: HANDLE_EXTENSION(Polly)), so LLVMLTO, which
// LLD's ELF driver links, calls getPollyPluginInfo(); Debian ships no
// libPolly.a. te-compile's links never run LTO (no bitcode inputs); were one
// to, this Polly registers no passes.
//
//===----------------------------------------------------------------------===//

#include "llvm/Plugins/PassPlugin.h"

llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  llvm::PassPluginLibraryInfo info{LLVM_PLUGIN_API_VERSION, "Polly (absent)",
                                   "0"};
  info.RegisterPassBuilderCallbacks = [](llvm::PassBuilder &) {};
  return info;
}
