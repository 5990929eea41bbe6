#!/usr/bin/env bash
# te-mlir's test command on a fresh machine (and what .ci/run calls):
#   1. install what is missing (scripts/bootstrap.sh),
#   2. build everything, CUDA code included when a toolkit is present,
#   3. run the lit suite (check-te, one test per golden case) and the ctest
#      suite: the GoogleTest unit tests, the CUDA kernel self-test (skipped
#      when no GPU is visible) and the Python package's tests (pytest in the
#      venv of scripts/venv.sh; test/CMakeLists.txt registers both),
#   4. rebuild with ASan+UBSan and assertions (Debian's LLVM has them off)
#      and run the lit suite and unit tests again,
#   5. generate the dialect and pass docs (mlir-doc),
#   6. run the main job with a python3 first on PATH that lacks numpy, and
#      build the wheel and test it installed (scripts/test_wheel.sh),
#   7. fuzz for a bounded time under the sanitizers (mutated IR through
#      te-opt/te-compile; libFuzzer targets of the runtime and te-run).
# Ends with one line "N passed, N failed" over all of it, counted from the
# JUnit reports of lit, ctest and pytest (each of pytest's tests counts, not
# the one ctest test that runs them); exits non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${TE_JOBS:-2}
passed=0
failed=0
failures=()

"$root/scripts/bootstrap.sh" || exit 1

# Counts the test cases of a JUnit report (lit --xunit-xml-output, ctest
# --output-junit, pytest --junitxml): prints "passed failed skipped"; a case
# named EXCLUDE is left out.
count_junit() { # xml [exclude]
  python3 - "$@" <<'PY'
import sys, xml.etree.ElementTree as ET
skip_name = sys.argv[2] if len(sys.argv) > 2 else None
p = f = s = 0
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.get("name") == skip_name:
        continue
    if case.find("failure") is not None or case.find("error") is not None or case.get("status") == "fail":
        f += 1
    elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
        s += 1
    else:
        p += 1
print(p, f, s)
PY
}

# Adds a JUnit report's counts to the totals; prints them as "   WHAT: ...".
add_junit() { # what xml [exclude]
  local what=$1 p f s
  shift
  read -r p f s < <(count_junit "$@") || return 1
  passed=$((passed + p)); failed=$((failed + f))
  echo "   $what: $p passed, $f failed, $s skipped or unsupported"
}

run_suite() { # name build_dir
  local name=$1 build=$2 rc
  echo "== [$name] lit (check-te)"
  rm -f "$build/lit.xml"
  "/usr/lib/llvm-22/bin/lit" -sv --xunit-xml-output="$build/lit.xml" "$build/test"
  rc=$?
  [[ -f $build/lit.xml ]] && add_junit lit "$build/lit.xml"
  if ((rc != 0)); then
    failures+=("$name lit")
    [[ -f $build/lit.xml ]] || failed=$((failed + 1))
  fi

  # Unit tests, the CUDA kernel self-test (SKIP_RETURN_CODE 77 without a GPU)
  # and pytest (its own report: each of its tests counts).
  echo "== [$name] ctest (unit tests, CUDA kernel self-test, pytest)"
  rm -f "$build/ctest.xml" "$build/pytest.xml"
  (cd "$build" && ctest --output-on-failure --output-junit "$build/ctest.xml")
  rc=$?
  if [[ -f $build/ctest.xml ]]; then
    add_junit ctest "$build/ctest.xml" pytest
    if [[ -f $build/pytest.xml ]]; then
      add_junit pytest "$build/pytest.xml"
    elif grep -q '<testcase name="pytest"' "$build/ctest.xml"; then
      failed=$((failed + 1)); echo "   pytest: no report (the venv or the op library failed: $build/venv.log)"
    fi
    grep -q 'name="te-kernels-selftest".*status="notrun"' "$build/ctest.xml" &&
      echo "   (CUDA kernel self-test skipped: no GPU on this machine; utils/gpu_check.sh runs it on the H200)"
  else
    failed=$((failed + 1))
  fi
  ((rc == 0)) || failures+=("$name ctest")
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
  [[ -x $root/build/bin/te-kernels-selftest ]] ||
    echo "== CUDA: not built (no CUDA toolkit found); GPU code is not compiled on this machine"
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
  # The wheel as a PyTorch user installs it: built (build-wheel/, static
  # te-compile), checked (size, needs, tag), installed into a fresh venv
  # without torch-mlir, a build tree or cc, and run (a module step and the
  # backend on a LLaMA-style model, compiled live).
  echo "== [default] wheel (scripts/test_wheel.sh; log build/wheel-test.log)"
  if "$root/scripts/test_wheel.sh" >"$root/build/wheel-test.log" 2>&1; then
    grep -E "^(ok:|check_wheel|te_mlir-|  te_mlir/)" "$root/build/wheel-test.log"
    passed=$((passed + 1))
  else
    tail -30 "$root/build/wheel-test.log"
    failed=$((failed + 1)); failures+=("wheel")
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
