#!/usr/bin/env bash
# Builds te-mlir's libFuzzer targets with clang++-22 (libFuzzer, ASan and
# UBSan; packages clang-22 and libclang-rt-22-dev) straight from the
# sources, without CMake: the targets need te-run's parsers and the CPU
# runtime only (no MLIR, no CUDA).
#
# usage: fuzz/build.sh [OUTDIR]      (default: build-fuzz/ in the repository)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:-$root/build-fuzz}
cxx=${CXX_FUZZ:-clang++-22}
command -v "$cxx" >/dev/null || { echo "fuzz/build.sh: $cxx not found (install clang-22 and libclang-rt-22-dev)" >&2; exit 1; }
mkdir -p "$out/obj"
flags=(-std=c++17 -O1 -g -fno-omit-frame-pointer
       -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
       -I"$root/include" -I"$root/tools/te-run" -I"$root/lib/Runtime"
       -I"$root/lib/Runtime/module" -I"$root/runtime-kernels/include")
link=(-fsanitize=fuzzer,address,undefined -pthread)

# The headers every object may include.
mapfile -t headers < <(find "$root/include" "$root/lib/Runtime" \
  "$root/tools/te-run" "$root/runtime-kernels/include" \
  \( -name '*.h' -o -name '*.def' \) -type f)

# Compiles $1 to an object (again only when it or a header is newer).
obj() {
  local src=$1 o
  o="$out/obj/$(echo "${src#"$root"/}" | tr '/' '_').o"
  if [[ ! -f $o || -n $(find "$src" "${headers[@]}" -newer "$o" | head -1) ]]; then
    "$cxx" "${flags[@]}" -c "$src" -o "$o"
  fi
  echo "$o"
}

te_run=()
te_run+=("$(obj "$root/tools/te-run/Npy.cpp")")
for f in DimExpr Json ModuleInfo; do
  te_run+=("$(obj "$root/lib/Runtime/module/$f.cpp")")
done
runtime=()
for f in TERuntime Context Comm api/Checks api/Elementwise api/NormGemm api/Quantize \
  cpu/Backend cpu/BackendElementwise cpu/BackendNormGemm cpu/BackendQuantize cpu/Convert \
  cpu/Gemm cpu/Mpi cpu/Quantize cpu/Reference cuda/Dispatch cuda/Nccl module/EntryGraphs; do
  runtime+=("$(obj "$root/lib/Runtime/$f.cpp")")
done

build() {
  local name=$1; shift
  "$cxx" "${flags[@]}" "${link[@]}" "$here/$name.cpp" "$@" -o "$out/$name"
  echo "built $out/$name"
}
build npy_fuzzer "${te_run[0]}"
build dim_expr_fuzzer "${te_run[1]}"
build module_info_fuzzer "${te_run[@]:1}"
build runtime_fuzzer "${runtime[@]}"
