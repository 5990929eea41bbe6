#!/usr/bin/env bash
# Runs te-mlir's GPU checks on a machine with an NVIDIA GPU and the CUDA
# toolkit (the H200 test machine); MLIR is not needed there.
#   utils/gpu_check.sh [OUT_DIR]
# Builds runtime-kernels/ for sm_90a, runs the kernel self-test, compares
# te_kernels/formats.h with CUDA's FP8/FP4/E8M0 conversions over every fp32
# bit pattern, then runs the self-test under compute-sanitizer memcheck and
# racecheck. Logs go to OUT_DIR
# (default gpu-check/). Exit status non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/gpu-check}
mkdir -p "$out"
build=${TE_GPU_BUILD:-/tmp/te-kernels-build}
status=0

nvidia-smi -L | tee "$out/nvidia-smi.txt"
cmake -S "$root/runtime-kernels" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90a > "$out/configure.log" 2>&1 \
  && ninja -C "$build" > "$out/build.log" 2>&1 \
  || { echo "gpu_check: build failed"; tail -30 "$out/build.log" "$out/configure.log"; exit 1; }
cuobjdump --list-elf "$build/bin/te-kernels-selftest" > "$out/elf.txt" 2>&1 || true
grep -q sm_90a "$out/elf.txt" && echo "gpu_check: binary carries sm_90a code" \
  || { echo "gpu_check: no sm_90a code in the binary"; status=1; }

echo "== self-test"
"$build/bin/te-kernels-selftest" | tee "$out/selftest.txt"
rc=${PIPESTATUS[0]}; ((rc == 0)) || { echo "gpu_check: self-test rc=$rc"; status=1; }

echo "== formats check (every fp32 pattern vs CUDA's conversion intrinsics)"
"$build/bin/te-formats-check" | tee "$out/formats.txt"
rc=${PIPESTATUS[0]}; ((rc == 0)) || { echo "gpu_check: formats-check rc=$rc"; status=1; }

# Under the sanitizers the GEMMs take the heuristic's first algorithm
# (TE_RT_GEMM_TUNING=0, also for the self-test's cache check, which tunes
# otherwise): timing every candidate would run many more of cuBLASLt's
# kernels, whose internals are not what these runs check.
for tool in memcheck racecheck; do
  echo "== compute-sanitizer --tool $tool"
  TE_RT_GEMM_TUNING=0 compute-sanitizer --tool "$tool" --error-exitcode 3 \
    "$build/bin/te-kernels-selftest" \
    > "$out/sanitizer-$tool.txt" 2>&1
  rc=$?
  tail -3 "$out/sanitizer-$tool.txt"
  ((rc == 0)) || { echo "gpu_check: $tool rc=$rc"; status=1; }
done
echo "gpu_check: $([[ $status == 0 ]] && echo PASSED || echo FAILED)"
exit $status
