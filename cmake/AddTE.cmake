# Thin wrappers over MLIR's CMake helpers (after CIRCT's AddCIRCT.cmake).

# add_te_dialect_library(name ...): a library that links MLIR.
function(add_te_dialect_library name)
  add_mlir_dialect_library(${name} ${ARGN} DISABLE_INSTALL)
endfunction()

# add_te_tool(name ...): an executable placed in build/bin.
function(add_te_tool name)
  add_llvm_executable(${name} ${ARGN})
  llvm_update_compile_flags(${name})
endfunction()
