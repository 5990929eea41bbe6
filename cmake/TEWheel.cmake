#===- cmake/TEWheel.cmake - what the Python wheel holds ---------*- cmake -*-===#
#
# TE_WHEEL (set by the root pyproject.toml, scikit-build-core): builds the op
# library (python/csrc) against the runtime target and installs, in the
# install component `te_wheel`, under the package (te_mlir/_native):
#   bin/te-compile            static MLIR/LLVM/LLD (TE_STATIC_LLVM)
#   lib/libte_runtime.so      with the CUDA kernels when CUDA is built
#   lib/libte_torch_ops.so    the PyTorch op library (stable ABI)
# te-compile links its output against ../lib/libte_runtime.so, and
# te_mlir._abi finds the directory above bin/ and lib/ in the package.
# RPATHs are $ORIGIN-relative: the op library finds the runtime beside it;
# the runtime finds the CUDA 13 libraries of torch's nvidia wheels in the same
# site-packages (a process that imported torch has them loaded already, and
# te_mlir._abi preloads them from sys.path when the runpath misses).
#
#===------------------------------------------------------------------------===#

if(NOT TE_STATIC_LLVM)
  message(FATAL_ERROR "TE_WHEEL needs TE_STATIC_LLVM=ON (te-compile in the "
    "wheel must not need libMLIR.so / libLLVM.so)")
endif()

add_subdirectory(${TE_SOURCE_DIR}/python/csrc ${CMAKE_BINARY_DIR}/torch-ops)

set(_te_pkg te_mlir/_native)
# site-packages/te_mlir/_native/lib -> site-packages/nvidia/...
set(_te_nv "\$ORIGIN/../../../nvidia")
set_target_properties(TERuntime PROPERTIES INSTALL_RPATH
  "${_te_nv}/cu13/lib;${_te_nv}/cuda_runtime/lib;${_te_nv}/cublas/lib")
set_target_properties(te-compile PROPERTIES INSTALL_RPATH "")

install(TARGETS te-compile RUNTIME DESTINATION ${_te_pkg}/bin COMPONENT te_wheel)
install(TARGETS TERuntime te_torch_ops
  LIBRARY DESTINATION ${_te_pkg}/lib COMPONENT te_wheel)
