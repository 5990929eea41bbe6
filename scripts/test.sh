#!/usr/bin/env bash
# te-mlir's test command on a fresh machine (and what .ci/run calls):
#   1. install what is missing (scripts/bootstrap.sh),
#   2. build everything, CUDA code included when a toolkit is present,
#   3. run the lit suite (check-te), the GoogleTest unit tests and the CUDA
#      kernel self-test (reported as SKIPPED when no GPU is visible),
#   4. rebuild with ASan+UBSan and assertions (Debian's LLVM has them off)
#      and run the lit suite and unit tests again,
#   5. generate the dialect and pass docs (mlir-doc),
#   6. run the main job with a python3 first on PATH that lacks numpy,
#   7. fuzz for a bounded time under the sanitizers (mutated IR through
#      te-opt/te-compile; libFuzzer targets of the runtime and te-run).
# Ends with one line "N passed, N failed" over all of it; exits non-zero on
# any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${TE_JOBS:-2}
passed=0
failed=0
failures=()

"$root/scripts/bootstrap.sh" || exit 1

# Counts lit results from its xunit report.
count_lit() { # xml
  python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
sk = sum(int(s.get("skipped", 0)) for s in suites)
print(t - f - sk, f, sk)
PY
}

run_suite() { # name build_dir
  local name=$1 build=$2
  echo "== [$name] lit (check-te)"
  "/usr/lib/llvm-22/bin/lit" -sv --xunit-xml-output="$build/lit.xml" "$build/test"
  local rc=$?
  if [[ -f $build/lit.xml ]]; then
    read -r p f s < <(count_lit "$build/lit.xml")
    passed=$((passed + p)); failed=$((failed + f))
    echo "   lit: $p passed, $f failed, $s unsupported"
  fi
  ((rc == 0)) || failures+=("$name lit")

  echo "== [$name] unit tests (ctest)"
  (cd "$build" && ctest --output-on-failure) | tee "$build/ctest.log"
  rc=${PIPESTATUS[0]}
  local cp cf
  cp=$(grep -oE '[0-9]+ tests failed out of [0-9]+' "$build/ctest.log" | awk '{print $6-$1}')
  cf=$(grep -oE '[0-9]+ tests failed out of [0-9]+' "$build/ctest.log" | awk '{print $1}')
  passed=$((passed + ${cp:-0})); failed=$((failed + ${cf:-0}))
  if ((rc != 0)); then failures+=("$name ctest"); [[ -z $cf || $cf == 0 ]] && failed=$((failed + 1)); fi
}

# Runs scripts/main.sh ARGS with the numpy-less python3 ($shim) first on PATH into
# build/LOG.log; passes when the log has a line matching PASS_RE (then shows the lines
# matching SHOW_RE, else its last TAIL lines).
main_job() { # name log pass_re show_re tail args...
  local name=$1 log=$root/build/$2.log pass_re=$3 show_re=$4 n=$5; shift 5
  if PATH="$shim:$PATH" "$root/scripts/main.sh" "$@" >"$log" 2>&1 && grep -qE "$pass_re" "$log"; then
    grep -E "$show_re" "$log"
    passed=$((passed + 1))
  else
    tail -"$n" "$log"
    failed=$((failed + 1)); failures+=("$name")
  fi
}

build_or_fail() { # name dir cmake-args...
  local name=$1 dir=$2; shift 2
  echo "== [$name] build in $dir"
  if ! "$root/scripts/build.sh" "$dir" "$@"; then
    failures+=("$name build"); failed=$((failed + 1)); return 1
  fi
}

# 1. Release build, CUDA included when available.
if build_or_fail default "$root/build"; then
  run_suite default "$root/build"
  if [[ -x $root/build/bin/te-kernels-selftest ]]; then
    echo "== [default] CUDA kernel self-test"
    "$root/build/bin/te-kernels-selftest"
    rc=$?
    if ((rc == 0)); then passed=$((passed + 1))
    elif ((rc == 77)); then echo "   (GPU tests skipped: no GPU on this machine; they run on the H200 via utils/gpu_check.sh)"
    else failed=$((failed + 1)); failures+=("cuda selftest"); fi
  else
    echo "== CUDA: not built (no CUDA toolkit found); GPU code is not compiled on this machine"
  fi
  # A fresh machine's first python3 may be anyone's (pyenv, conda) and lack
  # numpy: the main job must not depend on it. A python3 without
  # site-packages stands first on PATH for this run.
  echo "== [default] main job (scripts/main.sh) with a python3 first on PATH that has no numpy"
  shim=$root/build/no-numpy-python
  mkdir -p "$shim"
  printf '#!/bin/sh\n# python3 without site-packages (no numpy), for the test command\nexec /usr/bin/python3 -S "$@"\n' >"$shim/python3"
  chmod +x "$shim/python3"
  if PATH="$shim:$PATH" python3 -c 'import numpy' 2>/dev/null; then
    echo "   the shim python3 imports numpy: the check would prove nothing"
    failed=$((failed + 1)); failures+=("main job (shim)")
  else
    main_job "main job" main "^PASS: te_mlir training matches eager" "blocks|graph breaks|^PASS" 30
  fi
  # The single-module check of the compiled library through te-run.
  echo "== [default] scripts/main.sh --block (one LN-MLP step through te-run vs PyTorch goldens)"
  main_job "main job --block" main-block "main: forward and backward match PyTorch" \
    "^  (ok|FAIL)|^main:" 20 --block
  # The PyTorch package (python/te_mlir) on the cpu backend, in the venv of
  # scripts/venv.sh: custom ops (opcheck), modules against PyTorch, the
  # torch.compile backend. GPU tests are reported as skipped, with why.
  echo "== [default] Python package tests (pytest test/python, cpu backend)"
  if ( source "$root/scripts/venv.sh" && te_venv >"$root/build/venv.log" 2>&1 &&
       "$root/scripts/build_torch_ops.sh" "$root/build" "$TE_VENV_PYTHON" &&
       cd "$root" && TE_MLIR_BUILD="$root/build" TE_MLIR_CACHE="$root/build/te-mlir-cache" \
         "$TE_VENV_PYTHON" -m pytest test/python -q -rs -p no:cacheprovider \
         --junitxml="$root/build/pytest.xml" ); then
    rc=0
  else
    rc=1
    tail -5 "$root/build/venv.log" 2>/dev/null
  fi
  if [[ -f $root/build/pytest.xml ]]; then
    read -r p f s < <(count_lit "$root/build/pytest.xml")
    passed=$((passed + p)); failed=$((failed + f))
    echo "   pytest: $p passed, $f failed, $s skipped"
  fi
  if ((rc != 0)); then
    failures+=("pytest"); [[ ${f:-0} == 0 ]] && failed=$((failed + 1))
  fi
  echo "== [default] docs (mlir-doc)"
  if ninja -C "$root/build" mlir-doc >/dev/null && [[ -s $root/build/docs/Dialects/TEDialect.md && -s $root/build/docs/TEPasses.md ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); failures+=("mlir-doc")
  fi
fi

# 2. Sanitizers + assertions on our code (the plugin cannot load into the
#    uninstrumented mlir-opt, and CUDA was compiled above).
if build_or_fail asan "$root/build-asan" -DTE_ENABLE_SANITIZERS=ON \
     -DTE_BUILD_PLUGIN=OFF -DTE_ENABLE_CUDA=OFF; then
  run_suite asan "$root/build-asan"

  # 3. Bounded fuzzing under the sanitizers (docs/fuzzing.md has longer
  #    runs): mutated te IR and torch-mlir exports through te-opt and
  #    te-compile; any crash, hang or sanitizer report fails.
  echo "== [asan] fuzzing te-opt / te-compile with mutated IR (fuzz/mutate_ir.py)"
  if python3 "$root/fuzz/mutate_ir.py" --bin "$root/build-asan/bin" \
       --cases "${TE_FUZZ_IR_CASES:-1500}" --jobs "$jobs" --seed "${TE_FUZZ_SEED:-1}" \
       --out "$root/build-asan/fuzz-ir-crashes"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); failures+=("IR fuzzing (inputs in build-asan/fuzz-ir-crashes)")
  fi
fi

echo "== [fuzz] libFuzzer targets: .npy reader, module info, dim expressions, runtime checks (fuzz/run.sh)"
if "$root/fuzz/run.sh" "${TE_FUZZ_SECONDS:-30}"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); failures+=("libFuzzer targets (inputs in build-fuzz/out)")
fi

echo
if ((${#failures[@]})); then
  echo "FAILED: ${failures[*]}"
fi
echo "te-mlir: $passed passed, $failed failed"
((${#failures[@]} == 0 && failed == 0))
