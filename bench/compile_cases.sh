#!/usr/bin/env bash
# Compiles every CASES_DIR/*.mlir (default bench/cases) with te-compile --train into
# OUT_DIR (default bench/build, git-ignored), once per recipe:
#   <case>.so               bf16 (no --recipe: the ops' recipe, bf16)
#   <case>.fp8-current.so   --recipe fp8-current
#   <case>.fp8-delayed.so   --recipe fp8-delayed
#   <case>.fp8-block.so     --recipe fp8-block
# RECIPES="bf16 fp8-current" (env) chooses the recipes; TE_COMPILE_FLAGS (env) adds
# te-compile flags to every library, e.g. "--gemm-act-epilogues=off" (the default, auto,
# puts GELU into the GEMM epilogues at >= 1024 tokens) into another OUT_DIR, for
# bench.py --lib-dir. FP8 GEMMs on the GPU need every
# GEMM dim (tokens, hidden, ffn/out) to be a multiple of 16 (128 for fp8-block, whose
# ops fall back to bf16 otherwise): cases that are not are skipped for those recipes. te-compile's remarks go to OUT_DIR/<lib>.log.
# FP8 weight cache: for cases of WC_TOKENS tokens (env, default 16; "" for none) and the
# recipes in WC_RECIPES (default "fp8-current fp8-delayed", when also in RECIPES), also
#   <case>.<recipe>.wc.so   --recipe <recipe> --weight-cache (adds <fn>_fwd_cached)
# which bench.py times as "te_cached" (first microbatch, then fwd_cached + bwd).
# Runs where MLIR is (te-compile); the GPU machine only needs the .so files and
# build-rt-cuda/lib/libte_runtime.so.
#   usage: bench/compile_cases.sh [CASES_DIR [OUT_DIR]]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tc="${TE_COMPILE:-$root/build/bin/te-compile}"
cases="${1:-$root/bench/cases}"
out="${2:-$root/bench/build}"
recipes="${RECIPES:-bf16 fp8-current fp8-delayed fp8-block}"
wc_tokens="${WC_TOKENS-16}"
wc_recipes="${WC_RECIPES:-fp8-current fp8-delayed}"
mkdir -p "$out"
rc=0
for f in "$cases"/*.mlir; do
  name="$(basename "$f" .mlir)"
  dims="${name##*_}"                       # MxHxF
  for r in $recipes; do
    if [ "$r" = bf16 ]; then
      lib="$name"; flags=()
    else
      lib="$name.$r"; flags=(--recipe "$r")
      if ! [[ "$dims" =~ ^[0-9]+x[0-9]+x[0-9]+$ ]]; then
        echo "skipped $lib: cannot read the dims from the name" >&2; continue
      fi
      IFS=x read -r m h n <<<"$dims"
      a=16; [ "$r" = fp8-block ] && a=128
      if (( m % a || h % a || n % a )); then
        echo "skipped $lib: $r GEMMs need dims that are multiples of $a ($dims)"; continue
      fi
    fi
    # shellcheck disable=SC2086
    if "$tc" "$f" --train ${flags[@]+"${flags[@]}"} ${TE_COMPILE_FLAGS:-} -o "$out/$lib.so" 2>"$out/$lib.log"; then
      echo "compiled $lib"
    else
      echo "FAILED $lib:" >&2; cat "$out/$lib.log" >&2; rc=1
    fi
    # the weight-cache library of the same recipe (few tokens only)
    if [ "$r" != bf16 ] && [[ " $wc_tokens " == *" ${m:-} "* ]] && [[ " $wc_recipes " == *" $r "* ]]; then
      # shellcheck disable=SC2086
      if "$tc" "$f" --train --weight-cache ${flags[@]+"${flags[@]}"} ${TE_COMPILE_FLAGS:-} -o "$out/$lib.wc.so" 2>"$out/$lib.wc.log"; then
        echo "compiled $lib.wc"
      else
        echo "FAILED $lib.wc:" >&2; cat "$out/$lib.wc.log" >&2; rc=1
      fi
    fi
  done
done
exit $rc
