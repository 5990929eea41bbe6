#===- cmake/TERuntime.cmake - the te-mlir runtime (no MLIR) ----*- cmake -*-===#
#
# The runtime: the C ABI (include/te/Runtime), the host runtime
# libte_runtime.so with its CPU backend, CUDA dispatch and module client
# (lib/Runtime), the CUDA kernels (runtime-kernels/), te-run and their unit
# tests (unittests/Runtime). Nothing here includes or links MLIR or LLVM.
# Included by the top level in both of its modes: the full build, and
#   cmake -S . -B build-rt -G Ninja -DCMAKE_BUILD_TYPE=Release -DTE_RUNTIME_ONLY=ON
#   ninja -C build-rt   # build-rt/lib/libte_runtime.so, build-rt/bin/te-run
# on a machine without MLIR (the GPU test machine).
#
#===------------------------------------------------------------------------===#

# MPI: the cpu backend's tensor-parallel collectives (te_rt_comm_wrap_mpi;
# the runtime is built with mpi.h and dlopens libmpi at run time, never
# links it) and their multi-process tests (TERuntimeCommTests under
# mpiexec).
find_package(MPI COMPONENTS C QUIET)
set(_te_mpi_default OFF)
if(MPI_C_FOUND)
  set(_te_mpi_default ON)
endif()
option(TE_ENABLE_MPI "Build the cpu backend's collectives on MPI"
  ${_te_mpi_default})
if(TE_ENABLE_MPI AND NOT MPI_C_FOUND)
  message(FATAL_ERROR "TE_ENABLE_MPI=ON but CMake found no MPI (install "
    "openmpi-bin libopenmpi-dev, or configure with -DTE_ENABLE_MPI=OFF)")
endif()
message(STATUS "te-mlir runtime: TE_ENABLE_MPI=${TE_ENABLE_MPI}")

if(TE_ENABLE_CUDA)
  add_subdirectory(${TE_SOURCE_DIR}/runtime-kernels
    ${CMAKE_BINARY_DIR}/runtime-kernels)
endif()
add_subdirectory(${TE_SOURCE_DIR}/lib/Runtime ${CMAKE_BINARY_DIR}/lib/Runtime)
# te-run needs the runtime and the C++ standard library only.
add_subdirectory(${TE_SOURCE_DIR}/tools/te-run ${CMAKE_BINARY_DIR}/tools/te-run)
if(TE_BUILD_UNITTESTS)
  add_subdirectory(${TE_SOURCE_DIR}/unittests/Runtime
    ${CMAKE_BINARY_DIR}/unittests/Runtime)
endif()
