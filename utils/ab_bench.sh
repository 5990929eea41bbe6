#!/usr/bin/env bash
# Times two builds of the same cases against each other on the GPU machine, in one call,
# in alternating rounds (A, B, A, B, ...), and checks that every result of their checked
# steps is the same bits (bench.py --dump on the first round, utils/same_dumps.py). Run on
# the device from the repository root, carrying ".gpu-unit/slim.tar.xz" (the wheel's files,
# `utils/gpu_python.sh --pack-wheel`) and whatever A and B name. Results go under $OUT:
# ab_<A|B>_<round>.{json,md,log} and ab_identity.txt; the medians are printed.
#
#   A_RT / B_RT      a runtime: a libte_runtime.so, or one stripped and xz-ed (*.xz),
#                    default the wheel's
#   A_LIBS / B_LIBS  the folder of bench/compile_cases.sh's libraries, default bench/build
#   CASES (default 16x256), RECIPES (default bf16,fp8-current,fp8-delayed),
#   GRAPH (bench.py --graph: default only), ROUNDS (default 2), REPS (default 7),
#   STEP_TIMEOUT (seconds per bench.py run, default 200), BENCH_ARGS (more bench.py
#   arguments, e.g. "--graph-state pingpong"), DUMP=0: no bit-identity check (at 8192
#   tokens the dumps are gigabytes)
#
# utils/check_graph_branches.sh and utils/check_small_rows.sh are the fuller checks of a
# runtime or compiler change (unit tests, profiles, the reduce-overhead tests).
set -u
: "${OUT:?set OUT}"
T=/tmp/te-wheel
mkdir -p "$T/site" "$T/cache" "$T/ab"
if [[ -f .gpu-unit/slim.tar.xz ]]; then
  rm -rf "${T:?}"/site/*
  tar xJf .gpu-unit/slim.tar.xz -C "$T/site"
elif [[ ! -f $T/site/te_mlir/__init__.py ]]; then
  echo "ab_bench.sh: no .gpu-unit/slim.tar.xz carried and no wheel under $T/site" >&2
  exit 2
fi
runtime() { # $1: A or B; prints the runtime's path
  local src=$2 dst=$T/ab/$1/libte_runtime.so
  mkdir -p "$T/ab/$1"
  if [[ -z $src ]]; then
    cp "$T/site/te_mlir/_native/lib/libte_runtime.so" "$dst"
  elif [[ $src == *.xz ]]; then
    xz -dc "$src" > "$dst" || return 1
  else
    cp "$src" "$dst" || return 1
  fi
  echo "$dst"
}
ART=$(runtime A "${A_RT:-}") && BRT=$(runtime B "${B_RT:-}") || {
  echo "ab_bench.sh: cannot read a runtime (A_RT=${A_RT:-}, B_RT=${B_RT:-})" >&2; exit 2; }
ALIBS=${A_LIBS:-bench/build} BLIBS=${B_LIBS:-bench/build}
for d in "$ALIBS" "$BLIBS"; do
  [[ -d $d ]] || { echo "ab_bench.sh: no library folder $d (carry it)" >&2; exit 2; }
done
export PYTHONPATH=$T/site TE_MLIR_CACHE=$T/cache PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
echo "A: $ALIBS on ${A_RT:-the wheel runtime}; B: $BLIBS on ${B_RT:-the wheel runtime}"
rm -rf "$T/dump_A" "$T/dump_B"
for ((round = 1; round <= ${ROUNDS:-2}; round++)); do
  for v in A B; do
    if [[ $v == A ]]; then R=$ART L=$ALIBS; else R=$BRT L=$BLIBS; fi
    dump=()
    ((round == 1)) && [[ ${DUMP:-1} != 0 ]] && dump=(--dump "$T/dump_$v")
    o=$OUT/ab_${v}_$round
    # shellcheck disable=SC2086
    timeout "${STEP_TIMEOUT:-200}" python3 bench/bench.py --runtime "$R" --lib-dir "$L" \
      --cases "${CASES:-16x256}" --recipes "${RECIPES:-bf16,fp8-current,fp8-delayed}" \
      --te off --graph "${GRAPH:-only}" --no-compile --no-extras --reps "${REPS:-7}" \
      ${BENCH_ARGS:-} "${dump[@]}" --out "$o.json" > "$o.log" 2>&1
    echo "== $v round $round (rc $?)"
    # case, recipe, te-mlir's best, spread
    grep -E '^\| ' "$o.md" 2>/dev/null | grep -v -E '^\| case|^\|---' | cut -d'|' -f2-5
  done
done
[[ ${DUMP:-1} == 0 ]] && exit 0
echo "== identity A vs B (every result of each checked step)"
python3 utils/same_dumps.py "$T/dump_A" "$T/dump_B" > "$OUT/ab_identity.txt" 2>&1
echo "same_dumps rc $?"; tail -2 "$OUT/ab_identity.txt"
