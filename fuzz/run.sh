#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/build.sh) and runs each for a bounded time
# on a copy of its committed seed corpus, with its dictionary. Prints one
# line per target with the runs libFuzzer did; exits non-zero when a
# target crashed (its input is left under $FUZZ_OUT/<target>/, default
# build-fuzz/out) or could not run.
#
# usage: fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]    (default 30, all)
# SECONDS 0 runs without a time limit: give one in FUZZ_FLAGS, e.g.
#   FUZZ_FLAGS="-runs=1000000" fuzz/run.sh 0 npy
# FUZZ_BIN (default build-fuzz) holds the targets, FUZZ_OUT (default
# build-fuzz/out) the working corpora, logs and crashing inputs.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
seconds=${1:-30}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(npy module_info dim_expr runtime)
bin=${FUZZ_BIN:-$root/build-fuzz}
out=${FUZZ_OUT:-$bin/out}
mkdir -p "$out"
"$here/build.sh" "$bin" >"$out/build.log" 2>&1 ||
  { cat "$out/build.log" >&2; echo "fuzz/run.sh: build failed" >&2; exit 1; }

status=0
for t in "${targets[@]}"; do
  exe="$bin/${t}_fuzzer"
  if [[ ! -x $exe ]]; then
    echo "fuzz $t: FAILED (no target $exe)"; status=1; continue
  fi
  work="$out/$t"
  rm -rf "$work" && mkdir -p "$work/corpus"
  cp "$here/corpus/$t"/* "$work/corpus/" 2>/dev/null
  flags=(-max_total_time="$seconds" -print_final_stats=1 -timeout=25
         -rss_limit_mb=2048 -artifact_prefix="$work/")
  [[ -f $here/dict/$t.dict ]] && flags+=(-dict="$here/dict/$t.dict")
  [[ $seconds == 0 ]] && flags=("${flags[@]:1}")
  # shellcheck disable=SC2086
  start=$(date +%s)
  "$exe" "${flags[@]}" ${FUZZ_FLAGS:-} "$work/corpus" >"$work/log" 2>&1
  rc=$?
  elapsed=$(($(date +%s) - start))
  runs=$(grep -o 'Done [0-9]* runs' "$work/log" | tail -1 | grep -o '[0-9]*')
  crashes=$(find "$work" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' \
            -o -maxdepth 1 -name 'timeout-*' -o -maxdepth 1 -name 'oom-*' | wc -l)
  if [[ $rc -ne 0 || -z $runs || $crashes -ne 0 ]]; then
    echo "fuzz $t: FAILED (exit $rc, ${runs:-?} runs, $crashes crashing inputs in $work; see $work/log)"
    status=1
  else
    echo "fuzz $t: ok, $runs runs in ${elapsed}s, corpus $(ls "$work/corpus" | wc -l) inputs"
  fi
done
exit $status
