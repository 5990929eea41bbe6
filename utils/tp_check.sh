#!/usr/bin/env bash
# Tensor-parallel numerics on the cpu backend (MPI), against one device:
#   utils/tp_check.sh MODEL.mlir NRANKS OUT_DIR [te-compile options...]
# Compiles MODEL (a single-device model in global shapes: te ops or a
# torch-mlir export) for training twice from the same source: once for one
# device, once with --tp NRANKS and the options given (--sequence-parallel,
# --tp-reduce-param-grads, --checkpoint, --recipe ...). Runs one training
# step of each on the same global data (te-run --random 7): the tp=1 library
# with te-run, the tp one under mpirun with te-run --tp (each rank takes its
# part of the global inputs; rank 0 writes the global outputs and gradients:
# gathered, replicated ones checked equal on every rank, partial ones
# summed). Then every output and gradient must match within
# TransformerEngine's distributed tolerances (tests/pytorch/distributed:
# bf16 rtol 1.6e-2 / atol 1e-5, f32 rtol 1e-3 / atol 1e-5), the absolute
# one raised to a few ulps of each tensor's largest element (see below), and
# a relative 2-norm bound of about one unit roundoff that a wrong slice or
# a missing reduction cannot meet. With TP_GOLDENS=CASE_DIR (a
# test/Integration/Inputs case: args/, grads_in/, expected/, config.json)
# both runs take the case's inputs instead of random ones and the tp
# outputs must also match the case's PyTorch goldens at its tolerances.
# With TP_EXACT=REGEX the files whose names match must equal tp=1's bit
# for bit. With TP_CHECK_IDENTICAL=DIR the tp outputs must also be
# bit-identical to those already in DIR (the checkpointed backward against
# the stored one).
#
# Environment: TE_COMPILE, TE_RUN (default build/bin/...), MPIEXEC (default
# mpiexec), PYTHON (default python3), TP_RTOL / TP_ATOL / TP_NORM to override
# the tolerances. Exit status non-zero on any mismatch or failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if (($# < 3)); then
  echo "usage: utils/tp_check.sh MODEL.mlir NRANKS OUT_DIR [te-compile options...]" >&2
  exit 2
fi
model=$1 ranks=$2 out=$3
shift 3
compile=${TE_COMPILE:-$root/build/bin/te-compile}
run=${TE_RUN:-$root/build/bin/te-run}
mpiexec=${MPIEXEC:-mpiexec}
python=${PYTHON:-python3}
# CI runs as root; the 2-core machine runs 4 ranks.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

rm -rf "$out"
mkdir -p "$out"
single=() parallel=()
for opt in "$@"; do
  case $opt in
    --sequence-parallel|--tp-reduce-param-grads) parallel+=("$opt") ;;
    *) single+=("$opt"); parallel+=("$opt") ;;
  esac
done

echo "tp_check: $(basename "$model") tp=$ranks ${parallel[*]}"
"$compile" "$model" --train "${single[@]}" -o "$out/tp1.so"
"$compile" "$model" --train --tp "$ranks" "${parallel[@]}" -o "$out/tp$ranks.so"
data=(--random 7)
if [[ -n ${TP_GOLDENS:-} ]]; then
  data=(--inputs "$TP_GOLDENS/args" --grads "$TP_GOLDENS/grads_in")
fi
"$run" "$out/tp1.so" --step main "${data[@]}" --outputs "$out/ref" > "$out/ref.log"
"$mpiexec" -n "$ranks" "$run" "$out/tp$ranks.so" --tp "$ranks" --step main \
  "${data[@]}" --outputs "$out/tp" > "$out/tp.log" 2>&1 || {
  cat "$out/tp.log" >&2
  echo "tp_check: the tp=$ranks step failed" >&2
  exit 1
}

# What the tp run wrote (its user outputs and gradients; saved tensors are
# per rank and not written) must match the single-device run.
mapfile -t names < <(cd "$out/tp" && find . -name '*.npy' | sed 's|^\./||' | sort)
if ((${#names[@]} == 0)); then
  echo "tp_check: the tp run wrote nothing" >&2
  exit 1
fi
grads=$(printf '%s\n' "${names[@]}" | grep -c '^bwd/grad_arg' || true)
if ((grads == 0)); then
  echo "tp_check: the tp run wrote no gradients" >&2
  exit 1
fi
# TE's distributed tolerances, with the absolute one at the tensor's scale
# (a few units in the last place of its largest element): a row-parallel
# GEMM's partial sums are rounded to the activation dtype before they are
# reduced (as TE reduces them, in bf16), so an element that cancels to near
# zero carries the rounding of its parts. The 2-norm bound keeps the whole
# within about one unit roundoff (bf16 2^-9, f32 2^-24: measured 4e-3 and
# 5e-7 on these cases).
if printf '%s\n' "${names[@]}" | grep -q 'bf16'; then
  rtol=${TP_RTOL:-1.6e-2} atol=${TP_ATOL:-1e-5} scale=${TP_ATOL_SCALE:-1e-2} norm=${TP_NORM:-1e-2}
else
  rtol=${TP_RTOL:-1e-3} atol=${TP_ATOL:-1e-5} scale=${TP_ATOL_SCALE:-1e-6} norm=${TP_NORM:-1e-5}
fi
"$python" "$root/utils/compare_npy.py" --expected "$out/ref" --actual "$out/tp" \
  --atol "$atol" --rtol "$rtol" --atol-scale "$scale" --max-norm-rel "$norm" \
  --names "${names[@]}"
if [[ -n ${TP_CHECK_IDENTICAL:-} ]]; then
  echo "tp_check: bit-identical to $TP_CHECK_IDENTICAL"
  "$python" "$root/utils/compare_npy.py" --expected "$TP_CHECK_IDENTICAL" \
    --actual "$out/tp" --atol 0 --rtol 0 --names "${names[@]}"
fi
if [[ -n ${TP_EXACT:-} ]]; then
  # These (an extended regular expression over the names) bit for bit: the
  # delayed-scaling state, whose amaxes are the group's.
  mapfile -t exact < <(printf '%s\n' "${names[@]}" | grep -E "$TP_EXACT" || true)
  if ((${#exact[@]} == 0)); then
    echo "tp_check: nothing matches TP_EXACT=$TP_EXACT" >&2
    exit 1
  fi
  echo "tp_check: bit-identical to tp=1: ${exact[*]}"
  "$python" "$root/utils/compare_npy.py" --expected "$out/ref" --actual "$out/tp" \
    --atol 0 --rtol 0 --names "${exact[@]}"
fi
if [[ -n ${TP_GOLDENS:-} ]]; then
  # The PyTorch goldens of the case, at its own tolerances (config.json).
  cfg() { "$python" -c "import json,sys;print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$TP_GOLDENS/config.json" "$1"; }
  echo "tp_check: against the PyTorch goldens of $(basename "$TP_GOLDENS")"
  "$python" "$root/utils/compare_npy.py" --expected "$TP_GOLDENS/expected" \
    --actual "$out/tp" --atol "$(cfg fwd_atol)" --rtol "$(cfg fwd_rtol)" --names fwd/result0
  mapfile -t bwd < <(printf '%s\n' "${names[@]}" | grep '^bwd/')
  "$python" "$root/utils/compare_npy.py" --expected "$TP_GOLDENS/expected" \
    --actual "$out/tp" --atol "$(cfg bwd_atol)" --rtol "$(cfg bwd_rtol)" --names "${bwd[@]}"
fi
echo "tp_check: OK (${#names[@]} tensors, $grads gradients)"
