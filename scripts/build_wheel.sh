#!/usr/bin/env bash
# Builds the te-mlir wheel and checks it:
#   scripts/build_wheel.sh [OUT_DIR]        (default dist/)
# The wheel (pyproject.toml, scikit-build-core) holds the Python package, a
# static te-compile, libte_runtime.so (CUDA kernels when a toolkit is found)
# and the PyTorch op library, compiled with the headers of the torch in the
# venv of scripts/venv.sh (TE_TORCH_PYTHON; any Python with torch >= 2.10
# will do). The build tree is build-wheel/ (incremental; ccache when on PATH).
# Tagged py3-none-manylinux_<glibc of this machine>_<arch>: binaries linked
# here cannot need a newer glibc, and utils/check_wheel.py verifies that, the
# size (< 60 MiB), the libraries each binary needs and the $ORIGIN runpaths.
# Prints the wheel's path last.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)
# shellcheck source=venv.sh
source "$root/scripts/venv.sh"
te_venv >&2
py=$TE_VENV_PYTHON
glibc=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
plat=manylinux_${glibc/./_}_$(uname -m)

args=(--no-deps -w "$out" --disable-pip-version-check)
# scikit-build-core from the venv when it has one, else pip's isolated build
# environment fetches it.
if "$py" -c "import scikit_build_core" 2>/dev/null; then
  args+=(--no-build-isolation)
fi
if command -v ccache >/dev/null; then
  args+=(--config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache
         --config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
         --config-settings=cmake.define.CMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
args+=(--config-settings=build.verbose=false "--config-settings=cmake.define.TE_TORCH_PYTHON=$py")
export CMAKE_BUILD_PARALLEL_LEVEL=${TE_JOBS:-2}
# The compilers CMake picks for build/ (scikit-build-core would take Python's
# x86_64-linux-gnu-gcc): the same command lines, so ccache serves build/'s
# objects.
export CC=${CC:-cc} CXX=${CXX:-c++}
rm -f "$out"/te_mlir-*.whl
_PYTHON_HOST_PLATFORM=$plat "$py" -m pip wheel "$root" "${args[@]}" >&2
whl=$(ls "$out"/te_mlir-*.whl)
python3 "$root/utils/check_wheel.py" "$whl" >&2
echo "$whl"
