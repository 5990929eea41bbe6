#!/usr/bin/env bash
# Installs what te-mlir needs to build and test, when it is missing:
# Debian's MLIR/LLVM 22 and LLD (te-compile links its output with LLD as a
# library), CMake, Ninja, GoogleTest, Python 3 with numpy, clang 22 with its
# libFuzzer runtime (fuzz/), and Open MPI (the cpu backend's tensor-parallel
# collectives and their tests). Idempotent: a machine
# that has everything installs nothing.
set -euo pipefail

need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools liblld-22-dev cmake ninja-build g++ libgtest-dev \
           python3 python3-numpy clang-22 libclang-rt-22-dev openmpi-bin libopenmpi-dev; do
  have_pkg "$pkg" || need+=("$pkg")
done

if ((${#need[@]})); then
  echo "bootstrap: installing ${need[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
else
  echo "bootstrap: all build dependencies present"
fi

for tool in /usr/lib/llvm-22/bin/mlir-opt /usr/lib/llvm-22/bin/FileCheck /usr/lib/llvm-22/bin/lit \
            /usr/lib/llvm-22/lib/cmake/mlir/MLIRConfig.cmake /usr/lib/llvm-22/lib/cmake/lld/LLDConfig.cmake; do
  [[ -e $tool ]] || { echo "bootstrap: $tool is missing after install" >&2; exit 1; }
done
