#!/usr/bin/env bash
# Bit-identity of compiled libraries across a change of the compiler or the
# runtime: a manifest of the SHA-256 of every output and gradient of every
# library of the golden suite (test/Integration/Inputs, with the flags of
# run_goldens.sh, --checkpoint for MLPs, --gemm-act-epilogues=on), of
# bench/cases (once per recipe) and of the small FP8 modules of
# build_gpu_libs.sh. Take one manifest before the change and one after, on
# the same backend, and diff them.
#   utils/identity_check.sh build LIB_DIR            (needs te-compile)
#   utils/identity_check.sh run LIB_DIR BACKEND OUT  (needs te-run; writes
#                                                     OUT/manifest.txt)
#   utils/identity_check.sh ir LIB_DIR OTHER_LIB_DIR (compares the LLVM IR
#                                                     te-compile emitted)
# TE_COMPILE / TE_RUN override build/bin/te-compile / build/bin/te-run. On
# the cpu backend, libraries with more than TE_IDENTITY_MAX_TOKENS tokens
# (default 4096) are listed as skipped (hours of CPU GEMMs); run them on
# the GPU.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../scripts/python.sh
source "$root/scripts/python.sh"
py=${TE_PYTHON:-python3}
[[ ${1:-} == build ]] && { te_pick_python || exit 1; py=$TE_PYTHON; }
ins=$root/test/Integration/Inputs
mode=${1:?usage: identity_check.sh build LIB_DIR | run LIB_DIR BACKEND OUT}
libs=${2:?LIB_DIR}
status=0

cfg() { "$py" -c "import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ''))" "$1" "$2"; }

build() {
  local tc=${TE_COMPILE:-$root/build/bin/te-compile}
  mkdir -p "$libs/src"
  : >"$libs/runs.txt" # name|lib|how (data dir or "random")
  compile() { # name input flags...
    local name=$1 in=$2; shift 2
    # Relative input paths: the module info names its source, and the .ll
    # of two checkouts must compare equal.
    in=${in#"$root"/}
    if (cd "$root" && "$tc" "$in" --train "$@" -o "$libs/$name.so" 2>"$libs/$name.log" &&
        "$tc" "$in" --train "$@" --emit=llvm -o "$libs/$name.ll" 2>>"$libs/$name.log"); then
      echo "compiled $name"
    else
      echo "FAILED $name: $(head -3 "$libs/$name.log")" >&2; status=1
    fi
  }
  local d c recipe flags sizes n
  for d in "$ins"/*/; do
    c=$(basename "$d")
    [[ -f $d/model.mlir && -f $d/config.json ]] || continue
    recipe=$(cfg "$d/config.json" recipe)
    flags=()
    [[ -n $recipe ]] && flags+=(--recipe "$recipe")
    [[ $(cfg "$d/config.json" arch) == blackwell ]] && flags+=(--arch sm_100a)
    compile "$c" "$d/model.mlir" ${flags[@]+"${flags[@]}"}
    if [[ $(cfg "$d/config.json" dynamic) == True ]]; then
      sizes=$("$py" -c "import json,sys; print(' '.join('size%d' % n for n in json.load(open(sys.argv[1]))['sizes']))" "$d/config.json")
    else
      sizes=.
    fi
    for n in $sizes; do echo "$c${n#.}|$c|${d#"$root"/}$n" >>"$libs/runs.txt"; done
    if [[ $(cfg "$d/config.json" module) == layernorm_mlp ]]; then
      compile "$c.ckpt" "$d/model.mlir" ${flags[@]+"${flags[@]}"} --checkpoint
      for n in $sizes; do echo "$c${n#.}.ckpt|$c.ckpt|${d#"$root"/}$n" >>"$libs/runs.txt"; done
      if [[ -z $recipe ]]; then
        compile "$c.epi" "$d/model.mlir" --gemm-act-epilogues=on
        for n in $sizes; do echo "$c${n#.}.epi|$c.epi|${d#"$root"/}$n" >>"$libs/runs.txt"; done
      fi
    fi
  done
  local f name dims r m h k a
  for f in "$root"/bench/cases/*.mlir; do
    name=$(basename "$f" .mlir) dims=${name##*_}
    IFS=x read -r m h k <<<"$dims"
    for r in bf16 fp8-current fp8-delayed fp8-block; do
      if [[ $r == bf16 ]]; then
        compile "$name" "$f"; echo "$name|$name|random|$m" >>"$libs/runs.txt"
      else
        a=16; [[ $r == fp8-block ]] && a=128
        (( m % a || h % a || k % a )) && continue
        compile "$name.$r" "$f" --recipe "$r"; echo "$name.$r|$name.$r|random|$m" >>"$libs/runs.txt"
      fi
    done
  done
  # The small FP8 modules of utils/build_gpu_libs.sh (cuBLASLt's FP8 GEMMs).
  if TE_COMPILE=$tc "$root/utils/build_gpu_libs.sh" "$libs/gpu" >"$libs/gpu.log" 2>&1; then
    for f in "$libs"/gpu/fp8_tiny_*.so; do
      name=$(basename "$f" .so)
      mv "$f" "$libs/$name.so"
      r=fp8-${name##*_} src=${name%_*}.mlir
      (cd "$libs/gpu/src" && "$tc" "$src" --train --recipe "$r" --emit=llvm -o "$libs/$name.ll") ||
        { echo "FAILED $name.ll" >&2; status=1; }
      echo "$name|$name|random|0" >>"$libs/runs.txt"
    done
  else
    echo "FAILED build_gpu_libs.sh: $(tail -3 "$libs/gpu.log")" >&2; status=1
  fi
  rm -rf "$libs/gpu"
  echo "identity_check: $(wc -l <"$libs/runs.txt") runs of $(ls "$libs"/*.so | wc -l) libraries in $libs"
}

run() {
  local be=${3:?BACKEND} out=${4:?OUT} te_run=${TE_RUN:-$root/build/bin/te-run}
  local max=${TE_IDENTITY_MAX_TOKENS:-4096}
  mkdir -p "$out"
  local manifest=$out/manifest.txt
  : >"$manifest"
  local label lib how tokens o rc
  while IFS='|' read -r label lib how tokens; do
    o=$out/run/$label
    rm -rf "$o" && mkdir -p "$o"
    if [[ $how == random ]]; then
      if [[ $be == cpu ]] && (( tokens > max )); then
        echo "$label skipped-on-cpu" >>"$manifest"; continue
      fi
      "$te_run" "$libs/$lib.so" --step step --random 1 --outputs "$o" --backend "$be" >"$o.log" 2>&1
    else
      "$te_run" "$libs/$lib.so" --step main --inputs "$root/$how/args" --grads "$root/$how/grads_in" \
        --outputs "$o" --backend "$be" >"$o.log" 2>&1
    fi
    rc=$?
    if ((rc != 0)); then
      echo "$label rc=$rc $(tail -1 "$o.log")" >>"$manifest"
    else
      (cd "$o" && find . -type f -name '*.npy' | sort | xargs sha256sum | sed "s|^|$label |") >>"$manifest"
    fi
    rm -rf "$o"
  done <"$libs/runs.txt"
  echo "identity_check: $(wc -l <"$manifest") lines in $manifest ($(grep -c ' rc=' "$manifest") failed runs, $(grep -c skipped "$manifest") skipped)"
}

ir() {
  local other=${3:?OTHER_LIB_DIR} f n=0 d=0
  for f in "$libs"/*.ll; do
    n=$((n + 1))
    if ! cmp -s "$f" "$other/$(basename "$f")"; then
      d=$((d + 1)); echo "differs: $(basename "$f" .ll)"
    fi
  done
  echo "identity_check: $((n - d)) of $n libraries have identical LLVM IR"
  ((d == 0)) || status=1
}

case $mode in
build) build ;;
ir) ir "$@" ;;
run) run "$@" ;;
*) echo "identity_check.sh: unknown mode '$mode'" >&2; exit 2 ;;
esac
exit $status
