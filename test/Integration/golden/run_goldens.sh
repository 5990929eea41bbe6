#!/usr/bin/env bash
# End-to-end numerics on the CPU backend: for every case in Inputs/ (a real
# torch-mlir export with its PyTorch goldens, test/Integration/golden/make_goldens.py),
#   te-compile --train the export, te-run --step main on the golden inputs and
#   output gradients, and compare forward outputs and every gradient with
#   PyTorch under TransformerEngine's tolerances (config.json);
#   dynamic cases (config "dynamic": true) run the one library at every size
#   in "sizes" (data in size<N>/);
#   for MLPs, compile again with --checkpoint and check that the recomputed
#   backward is bit-identical to the stored one;
#   for f32 cases, check the backward against central finite differences of
#   the compiled forward (utils/fd_check.py);
#   cases with a "recipe" (config.json) compile with te-compile --recipe (and
#   --arch sm_100a for "arch": "blackwell") and
#   compare with the PyTorch emulation of that recipe (quantized functions
#   are piecewise constant: no finite differences), elementwise under TE's
#   tolerances and, per file, within 1e-2 in norm (the emulation rounds as
#   the runtime does: a recipe feature left out, e.g. NVFP4's Hadamard
#   transform or stochastic rounding, moves gradients by 15-25% in norm,
#   which TE's elementwise FP4 tolerances alone would let through);
#   delayed-scaling state outputs (state.*.npy) are compared too.
# Usage: run_goldens.sh BIN_DIR PYTHON SRC_DIR WORK_DIR [CASE...]
set -u
bin=$1 python=$2 src=$3 work=$4
shift 4
inputs="$src/test/Integration/Inputs"
cases=("$@")
if [[ ${#cases[@]} -eq 0 ]]; then
  for d in "$inputs"/*/; do cases+=("$(basename "$d")"); done
fi
status=0
rm -rf "$work" && mkdir -p "$work"
for c in "${cases[@]}"; do
  dir="$inputs/$c" out="$work/$c"
  mkdir -p "$out"
  json() { "$python" -c "import json,sys; print(json.load(open('$dir/config.json'))['$1'])"; }
  recipe=$(json recipe 2>/dev/null || true)
  flags=(--train)
  [[ -n $recipe ]] && flags+=(--recipe "$recipe")
  # "arch": "blackwell" (MXFP8): Blackwell's quantized layouts.
  [[ $(json arch 2>/dev/null) == blackwell ]] && flags+=(--arch sm_100a)
  if ! "$bin/te-compile" "$dir/model.mlir" "${flags[@]}" -o "$out/lib.so" 2>"$out/compile.err"; then
    echo "FAIL $c: te-compile: $(head -3 "$out/compile.err")"; status=1; continue
  fi
  # Static cases have their data at the top; dynamic ones per size, all
  # run by the one library.
  if [[ $(json dynamic 2>/dev/null) == True ]]; then
    sizes=$("$python" -c "import json; print(' '.join('size%d' % n for n in json.load(open('$dir/config.json'))['sizes']))")
  else
    sizes=.
  fi
  for sz in $sizes; do
    data="$dir/$sz" label="$c${sz#.}"
    [[ $sz == . ]] && label=$c
    label=${label/size/@size}
    if ! "$bin/te-run" "$out/lib.so" --step main --inputs "$data/args" --grads "$data/grads_in" \
         --outputs "$out/run/$sz" >"$out/run.log" 2>&1; then
      echo "FAIL $label: te-run: $(head -3 "$out/run.log")"; status=1; continue
    fi
    norm=(); [[ -n $recipe ]] && norm=(--max-norm-rel 1e-2)
    for phase in fwd bwd; do
      if "$python" "$src/utils/compare_npy.py" --expected "$data/expected/$phase" \
           --actual "$out/run/$sz/$phase" --atol "$(json ${phase}_atol)" --rtol "$(json ${phase}_rtol)" \
           ${norm[@]+"${norm[@]}"} >"$out/$phase.cmp" 2>&1; then
        echo "OK $label $phase: $(grep -c '^OK' "$out/$phase.cmp") tensors within TE tolerances (atol $(json ${phase}_atol), rtol $(json ${phase}_rtol))${norm[@]+ and 1e-2 in norm of the emulation}"
      else
        echo "FAIL $label $phase:"; sed 's/^/  /' "$out/$phase.cmp"; status=1
      fi
    done
  done
  sz=${sizes%% *}
  data="$dir/$sz"
  if [[ $(json module) == layernorm_mlp ]]; then
    if ! "$bin/te-compile" "$dir/model.mlir" "${flags[@]}" --checkpoint -o "$out/ckpt.so" 2>"$out/ckpt.err" ||
       ! "$bin/te-run" "$out/ckpt.so" --step main --inputs "$data/args" --grads "$data/grads_in" \
         --outputs "$out/ckpt" >"$out/ckpt.log" 2>&1; then
      echo "FAIL $c checkpoint: $(head -3 "$out/ckpt.err" "$out/ckpt.log")"; status=1; continue
    fi
    same=1
    for f in "$out/run/$sz/bwd/"*.npy; do
      cmp -s "$f" "$out/ckpt/bwd/$(basename "$f")" || { same=0; echo "  differs: $(basename "$f")"; }
    done
    if [[ $same == 1 ]]; then
      echo "OK $c checkpoint: backward bit-identical with recompute ($(ls "$out/run/$sz/bwd" | wc -l) gradients)"
    else
      echo "FAIL $c checkpoint: recomputed backward differs"; status=1
    fi
  fi
  # Central differences need a smooth function: ReLU's kinks fall inside
  # eps, so ReLU and ReGLU cases are checked against PyTorch only (squared
  # ReLU is smooth enough).
  if [[ -n $recipe ]]; then
    echo "NOTE $c finite differences not applicable (recipe $recipe quantizes)"
  elif [[ $(json dtype) == f32 && $(json activation 2>/dev/null) =~ ^(relu|reglu)$ ]]; then
    echo "NOTE $c finite differences not applicable ($(json activation) has kinks)"
  elif [[ $(json dtype) == f32 ]]; then
    if "$python" "$src/utils/fd_check.py" --te-run "$bin/te-run" --lib "$out/lib.so" \
         --inputs "$data/args" >"$out/fd.log" 2>&1; then
      echo "OK $c finite differences: $(grep -c '^OK' "$out/fd.log") arguments"
    else
      echo "FAIL $c finite differences:"; sed 's/^/  /' "$out/fd.log"; status=1
    fi
  fi
done
exit $status
