#!/usr/bin/env bash
# Imports every committed export of each model listed in expected-imports.txt
# (all of its output forms: raw, raw_hl, torch, torch_legal_ops) and checks
# that the te op produced is exactly the expected one (SSA names normalized
# to %_), and that nothing of torch is left.
# Usage: check_imports.sh TE_OPT INPUT_DIR EXPECTED_FILE
set -u
te_opt=$1 inputs=$2 expected=$3
status=0 checked=0
while IFS=$'\t' read -r model want; do
  for f in "$inputs/$model".*.mlir; do
    out=$("$te_opt" "$f" --te-import-torch 2>&1) || { echo "FAIL $f: import failed: $out" | head -3; status=1; continue; }
    got=$(grep -oE 'te\.(layernorm_linear|layernorm_mlp|linear) .*' <<<"$out" | sed -E 's/%[a-z_0-9]+/%_/g')
    if [[ $got != "$want" ]]; then
      echo "FAIL $f"; echo "  want: $want"; echo "  got:  $got"; status=1
    fi
    if grep -qE '!torch\.|torch\.(aten|prim|prims|constant|vtensor)' <<<"$out"; then
      echo "FAIL $f: torch operations or types remain"; status=1
    fi
    checked=$((checked + 1))
  done
done < "$expected"
echo "check_imports: $checked exports checked"
exit $status
