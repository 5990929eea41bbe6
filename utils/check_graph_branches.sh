#!/usr/bin/env bash
# A short GPU check of te-fork-branches (2026-12-06 (u)), for a call with little device
# time: run on the device from the repository root, carrying [".gpu-unit", "bench/build",
# "bench/build-branch"]; here first: utils/gpu_python.sh --pack-wheel (the wheel before the
# change: the old runtime), this change's CUDA runtime stripped and xz-ed into
# .gpu-unit/libte_runtime.new.so.xz and its TERuntimeTests into
# .gpu-unit/unittests/TERuntimeTests.xz, bench/compile_cases.sh of the 16x256 and 8192 cases
# (bf16 fp8-current fp8-delayed) with the te-compile before the change into bench/build and
# with this change's into bench/build-branch. Does: the CUDA unit tests (this change's);
# bench.py's 16-token CUDA graphs, old runtime on the old libraries then new on new (µs per
# fwd+bwd replay) and every result of their checked steps compared bit for bit, through
# utils/ab_bench.sh (A: old, B: new); the modules' reduce-overhead tests (test_modules.py -k
# reduce_overhead) on the new runtime. utils/check_small_rows.sh is the longer check
# (8192-token steps, profiles, the self test).
set -u
: "${OUT:?set OUT}"
T=/tmp/te-wheel
# (the timings first: they matter most when the call runs out of device time)
OUT=$OUT A_LIBS=bench/build B_LIBS=bench/build-branch B_RT=.gpu-unit/libte_runtime.new.so.xz \
  CASES=16x256 RECIPES=bf16,fp8-current,fp8-delayed ROUNDS=1 REPS=7 STEP_TIMEOUT=120 \
  bash utils/ab_bench.sh
# the unit tests' fixtures load the runtime from the build they were made in
src=$(pwd)/build; mkdir -p $src/lib $src/unittests
cp -r .gpu-unit/unittests/fixtures $src/unittests/; cp $T/ab/B/libte_runtime.so $src/lib/
xz -dc .gpu-unit/unittests/TERuntimeTests.xz > $T/unit; chmod +x $T/unit
export PYTHONPATH=$T/site TE_MLIR_CACHE=$T/cache PYTHONUNBUFFERED=1
echo "== unit"; timeout 90 $T/unit --gtest_filter='*Cuda*:*Branch*:*ZeroRanges*' > $OUT/unit.log 2>&1
grep -E "FAILED|Branch|PASSED" $OUT/unit.log | head -12
echo "== reduce-overhead tests on the new runtime"
cp $T/ab/B/libte_runtime.so $T/site/te_mlir/_native/lib/libte_runtime.so
g=$(pwd)/build/gpu-wheel; mkdir -p $g
ln -sfn $T/site/te_mlir/_native/bin $g/bin; ln -sfn $T/site/te_mlir/_native/lib $g/lib
TE_MLIR_BUILD=$g PYTHONPATH=$(pwd)/python timeout 120 python3 -m pytest test/python/test_modules.py -q \
  -p no:cacheprovider -k reduce_overhead > $OUT/pytest_ro.log 2>&1; echo "pytest rc $?"
grep -E "passed|failed|^FAILED|^ERROR" $OUT/pytest_ro.log | tail -6
