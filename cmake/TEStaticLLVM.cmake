#===- cmake/TEStaticLLVM.cmake - tools on static MLIR/LLVM -----*- cmake -*-===#
#
# TE_STATIC_LLVM: te-compile (and te-opt) link Debian's static MLIR, LLVM and
# LLD archives (libmlir-22-dev, llvm-22-dev, liblld-22-dev) instead of
# libMLIR.so / libLLVM.so, so that the binary runs where no LLVM is
# installed (the Python wheel). Debian's LLVM is built with
# LLVM_LINK_LLVM_DYLIB, so its exported MLIR and LLD archives name the
# shared `LLVM` as their dependency: that name is replaced here, in every
# imported MLIR/LLD target, by TEStaticLLVM, the static LLVM components.
#
# Sets TE_LLVM_LIBS (what a tool links for "LLVM") and TE_STATIC_LINK_OPTIONS.
#
#===------------------------------------------------------------------------===#

set(LLVM_LINK_LLVM_DYLIB OFF)

# Every static LLVM component (the linker takes only the members it needs),
# except those not installed, the tools' own (LLVMOptDriver names the shared
# LLVM; llvm-exegesis's need libpfm), those that need what is not installed
# (LLVMDebuginfod: libcurl, LLVMLineEditor: libedit) and, repeatedly, those
# that need them.
set(_te_llvm_static)
set(_te_llvm_missing)
foreach(_lib ${LLVM_AVAILABLE_LIBS})
  if(TARGET ${_lib} AND NOT _lib STREQUAL "LLVM")
    get_target_property(_type ${_lib} TYPE)
    get_target_property(_configs ${_lib} IMPORTED_CONFIGURATIONS)
    list(GET _configs 0 _config)
    get_target_property(_file ${_lib} IMPORTED_LOCATION_${_config})
    # (Debian's exports name some archives it does not ship, e.g. libPolly.a)
    if(_type STREQUAL "STATIC_LIBRARY" AND EXISTS "${_file}")
      list(APPEND _te_llvm_static ${_lib})
    else()
      list(APPEND _te_llvm_missing ${_lib})
    endif()
  endif()
endforeach()
# A dependency on an archive that is not installed (Polly, which Debian's
# LLVMExtensions names) is dropped from the dependent's interface: nothing
# te-compile uses needs it (the link would say so).
foreach(_lib ${_te_llvm_static})
  get_target_property(_deps ${_lib} INTERFACE_LINK_LIBRARIES)
  if(_deps)
    list(REMOVE_ITEM _deps ${_te_llvm_missing})
    set_target_properties(${_lib} PROPERTIES INTERFACE_LINK_LIBRARIES "${_deps}")
  endif()
endforeach()
set(_te_llvm_dropped)
set(_changed TRUE)
while(_changed)
  set(_changed FALSE)
  foreach(_lib ${_te_llvm_static})
    get_target_property(_deps ${_lib} INTERFACE_LINK_LIBRARIES)
    foreach(_dep ${_deps})
      if((_dep MATCHES "::" AND NOT TARGET ${_dep}) OR _dep IN_LIST _te_llvm_dropped OR
         _dep STREQUAL "LLVM" OR _dep STREQUAL "pfm")
        list(APPEND _te_llvm_dropped ${_lib})
        list(REMOVE_ITEM _te_llvm_static ${_lib})
        set(_changed TRUE)
        break()
      endif()
    endforeach()
  endforeach()
endwhile()
if(_te_llvm_missing OR _te_llvm_dropped)
  message(STATUS "te-mlir: static LLVM without ${_te_llvm_missing};${_te_llvm_dropped}")
endif()
add_library(TEStaticLLVM INTERFACE)
target_link_libraries(TEStaticLLVM INTERFACE ${_te_llvm_static})

foreach(_target ${MLIR_EXPORTED_TARGETS} ${LLD_EXPORTED_TARGETS})
  if(NOT TARGET ${_target})
    continue()
  endif()
  get_target_property(_type ${_target} TYPE)
  if(NOT _type STREQUAL "STATIC_LIBRARY")
    continue()
  endif()
  get_target_property(_deps ${_target} INTERFACE_LINK_LIBRARIES)
  if(_deps)
    list(TRANSFORM _deps REPLACE "^LLVM$" "TEStaticLLVM")
    list(TRANSFORM _deps REPLACE "^MLIR$" "")
    set_target_properties(${_target} PROPERTIES INTERFACE_LINK_LIBRARIES "${_deps}")
  endif()
endforeach()

set(TE_LLVM_LIBS TEStaticLLVM)
# LLVMSupport names libz3 (the optional SMT solver), which te-compile never
# calls: --as-needed drops it, leaving libc, libm, libstdc++, libz, libzstd.
set(TE_STATIC_LINK_OPTIONS "LINKER:--as-needed")

# zlib and zstd (LLVM's and LLD's compression) from their static archives when
# the system has them (zlib1g-dev, libzstd-dev), so that te-compile needs only
# the C and C++ runtimes.
foreach(_pair "ZLIB::ZLIB;libz.a" "zstd::libzstd_shared;libzstd.a")
  list(GET _pair 0 _target)
  list(GET _pair 1 _archive)
  if(TARGET ${_target})
    find_library(_te_static_${_archive} NAMES ${_archive})
    if(_te_static_${_archive})
      set_target_properties(${_target} PROPERTIES
        IMPORTED_LOCATION "${_te_static_${_archive}}"
        IMPORTED_LOCATION_RELEASE "${_te_static_${_archive}}"
        IMPORTED_LOCATION_RELWITHDEBINFO "${_te_static_${_archive}}")
    endif()
  endif()
endforeach()
