#!/usr/bin/env bash
# Generates the backward of every committed forward-module export (its `raw`
# form) under every recipe, with and without checkpointing, and checks the
# result: te-opt verifies the IR (every saved type against its op's
# description, every backward op's operands), @<fn>_fwd and @<fn>_bwd exist,
# there is one backward op per module op, and checkpointed MLPs have a
# te.recompute region (and only they do).
# Usage: check_backward.sh TE_OPT INPUT_DIR EXPECTED_FILE
set -u
te_opt=$1 inputs=$2 expected=$3
status=0 checked=0 rejected=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
while IFS=$'\t' read -r model want; do
  f="$inputs/$model.raw.mlir"
  for recipe in bf16 fp8-delayed fp8-current fp8-block mxfp8 nvfp4; do
    for ckpt in false true; do
      if ! out=$("$te_opt" "$f" --te-import-torch --te-apply-recipe="recipe=$recipe" \
                 --te-generate-backward="checkpoint=$ckpt" 2>"$err"); then
        # NVFP4's default RHT needs bf16 activations: f32 exports are
        # rejected by the verifier, as they must be.
        if [[ $recipe == nvfp4 ]] && grep -q 'nvfp4 with rht = true needs bf16' "$err"; then
          rejected=$((rejected + 1)); continue
        fi
        echo "FAIL $model $recipe checkpoint=$ckpt: $(head -3 "$err")"; status=1; continue
      fi
      modules=$(grep -cE '= te\.(layernorm_linear|layernorm_mlp|linear) ' <<<"$out")
      backward=$(grep -cE '= te\.(layernorm_linear|layernorm_mlp|linear)_bwd ' <<<"$out")
      mlps=$(grep -cE '= te\.layernorm_mlp ' <<<"$out")
      recomputes=$(grep -c 'te\.recompute(' <<<"$out")
      # Module ops appear in @f, @f_fwd (and once more per recompute region).
      if [[ $ckpt == true ]]; then inner=$recomputes; else inner=0; fi
      if (( (modules - inner) != 2 * backward || backward == 0 )); then
        echo "FAIL $model $recipe checkpoint=$ckpt: $modules module ops, $backward backward ops"; status=1
      fi
      if ! grep -q 'te.forward_of' <<<"$out" || ! grep -q 'te.backward_of' <<<"$out"; then
        echo "FAIL $model $recipe checkpoint=$ckpt: no _fwd/_bwd"; status=1
      fi
      if [[ $ckpt == true && $recomputes -ne $(( (mlps - recomputes) / 2 )) ]] ||
         [[ $ckpt == false && $recomputes -ne 0 ]]; then
        echo "FAIL $model $recipe checkpoint=$ckpt: $recomputes recompute regions for $mlps MLP ops"; status=1
      fi
      checked=$((checked + 1))
    done
  done
done < "$expected"
echo "check_backward: $checked configurations checked, $rejected rejected (nvfp4 on f32)"
exit $status
