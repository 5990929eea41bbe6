#!/usr/bin/env bash
# A GPU check of a kernel or runner change with no wheel (fits one call's 64 MiB): the new
# te-kernels-selftest, the CUDA unit tests built from the new tree, the 16-token FP8 CUDA
# graphs of the old runtime on the old libraries against the new runtime on the new ones
# (every result of bench.py's checked step compared bit for bit: --dump,
# utils/same_dumps.py; then two timed rounds each), and the step casts' timings of the
# old and the new self test. Written for session (aa)'s padding zeroed beside the entry,
# its one ragged tile store and blockMax (2026-12-07). Run on the device from the
# repository root; results under $OUT (one raw.tgz, the summary on stdout).
#
# Prepare here (each xz-ed, stripped where a binary), carried with "bench":
#   OLD_SELFTEST / NEW_SELFTEST   te-kernels-selftest of the two builds
#   OLD_RT / NEW_RT               libte_runtime.so of the two builds
#   UNIT                          a folder with TERuntimeTests.xz and fixtures/ (the new build's
#                                 unittests/TERuntimeTests and unittests/fixtures)
#   OLD_LIBS / NEW_LIBS           bench/compile_cases.sh of the 16x256 cases, fp8-current and
#                                 fp8-delayed, by the old and the new te-compile (default
#                                 bench/build-x0, bench/build-x1)
#   OLD_SRC                       a tree with the old build's bench/ and python/ (default this
#                                 one): the package refuses a runtime that is not its own
#   GRAPHS_ONLY=1                 only the graphs and their bit comparison (no self test, unit
#                                 tests or cast timings)
#   PROFILE=CASE                  also profile_step.py --graph (TE_RT_PDL=0: kernel times without
#                                 the programmatic waits) of library CASE (e.g.
#                                 ln_mlp_gelu_16x256x1024.fp8-delayed.so) in each build
#   PINGPONG=1                    also a round of each with --graph-state pingpong (the recipe
#                                 state in two buffers by turns: no copies in the graph), to
#                                 set beside the default advance (the state copied back)
set -u
: "${OUT:?set OUT}" "${OLD_RT:?}" "${NEW_RT:?}"
[[ ${GRAPHS_ONLY:-0} == 1 ]] || : "${OLD_SELFTEST:?}" "${NEW_SELFTEST:?}" "${UNIT:?}"
OLD_LIBS=${OLD_LIBS:-bench/build-x0}
NEW_LIBS=${NEW_LIBS:-bench/build-x1}
export PYTHONUNBUFFERED=1
T=/tmp/te-kernels-ab
rm -rf "$T" && mkdir -p "$T"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
xz -dc "$OLD_RT" > "$T/rt_old.so" && xz -dc "$NEW_RT" > "$T/rt_new.so"
if [[ ${GRAPHS_ONLY:-0} != 1 ]]; then
  xz -dc "$OLD_SELFTEST" > "$T/st_old" && xz -dc "$NEW_SELFTEST" > "$T/st_new" && chmod +x "$T"/st_*
  timeout 90 "$T/st_new" > "$OUT/selftest_new.txt" 2>&1
  echo "rc=$?" >> "$OUT/selftest_new.txt"
  echo "selftest (new): $(tail -2 "$OUT/selftest_new.txt" | tr '\n' ' ')"
  # The unit tests find their fixtures and the runtime under the build folder they were
  # built in (the path is in the binary).
  u=$T/unit; mkdir -p "$u" && cp -r "$UNIT"/* "$u/" && xz -df "$u/TERuntimeTests.xz" && chmod +x "$u/TERuntimeTests"
  src=$(strings "$u/TERuntimeTests" | grep -m1 -oE '/[^"]*/unittests/fixtures/' | sed 's#/unittests/fixtures/##')
  mkdir -p "$src/unittests" "$src/lib" && rm -rf "$src/unittests/fixtures" &&
    cp -r "$u/fixtures" "$src/unittests/" && cp "$T/rt_new.so" "$src/lib/libte_runtime.so"
  timeout 100 "$u/TERuntimeTests" --gtest_filter='*Cuda*:*ZeroRanges*:*Padding*' > "$OUT/unit_cuda.log" 2>&1
  echo "unit tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' "$OUT/unit_cuda.log" | head -2 | tr '\n' ' ')"
  grep -E "^\[  FAILED" "$OUT/unit_cuda.log" | head
fi
# A build's tree (bench/, python/) and libraries: old or new.
src_of() { if [[ $1 == old ]]; then echo "${OLD_SRC:-.}"; else echo .; fi; }
libs_of() { if [[ $1 == old ]]; then echo "$OLD_LIBS"; else echo "$NEW_LIBS"; fi; }
graphs() { # old|new tag [bench.py args...]
  local v=$1 tag=$2; shift 2
  timeout 60 python3 "$(src_of "$v")/bench/bench.py" --te off --runtime "$T/rt_$v.so" \
    --lib-dir "$(libs_of "$v")" \
    --cases 16x256 --recipes fp8-current,fp8-delayed --graph only --no-extras --reps 5 "$@" \
    --out "$OUT/g16_$tag.json" > "$OUT/g16_$tag.log" 2>&1
  echo "16-token graphs $tag rc=$?"; grep -E "graph " "$OUT/g16_$tag.log" | cut -c1-86
}
graphs old old1 --dump "$T/dump_old"
graphs new new1 --dump "$T/dump_new"
graphs old old2
graphs new new2
if [[ ${PINGPONG:-0} == 1 ]]; then
  graphs old old_pingpong --graph-state pingpong
  graphs new new_pingpong --graph-state pingpong
fi
if [[ -n ${PROFILE:-} ]]; then
  for v in old new; do
    TE_RT_PDL=0 timeout 60 python3 "$(src_of "$v")/bench/profile_step.py" \
      "$(libs_of "$v")/$PROFILE" --graph --runtime "$T/rt_$v.so" > "$OUT/profile_$v.txt" 2>&1
    echo "profile $v rc=$?"; head -4 "$OUT/profile_$v.txt"
  done
fi
python3 utils/same_dumps.py "$T/dump_old" "$T/dump_new" > "$OUT/identity16.txt" 2>&1
echo "same bits rc=$? $(tail -1 "$OUT/identity16.txt")"
[[ ${GRAPHS_ONLY:-0} == 1 ]] || for v in old new; do timeout 25 "$T/st_$v" --bench-step-casts > "$OUT/stepcasts_$v.txt" 2>&1; done
[[ ${GRAPHS_ONLY:-0} == 1 ]] || for v in old new; do echo "== step casts, $v"; grep -h " us" "$OUT/stepcasts_$v.txt" | cut -c1-90; done
# (Few files come back from a call: one archive.)
(cd "$OUT" && tar czf "$T/raw.tgz" ./*.txt ./*.log ./*.json && rm -f ./*.txt ./*.log ./*.json &&
  mv "$T/raw.tgz" .)
