#!/usr/bin/env bash
# End-to-end check of the cuda backend on a GPU machine (no MLIR needed):
#   utils/gpu_e2e.sh [OUT_DIR]
# Runs the te-compile'd libraries in $TE_GPU_LIBS (default build/gpu) with
# te-run (default build/bin/te-run; TE_RUN overrides, its runtime is found
# via $ORIGIN/../lib) on the cpu and the cuda backend, compares both with
# the PyTorch goldens of test/Integration/Inputs (the tolerances of each
# case's config.json) and the cuda results with the cpu ones, then runs one
# cuda training step under compute-sanitizer memcheck. Non-zero on failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:-${OUT:-$root/gpu-e2e}}
run=${TE_RUN:-build/bin/te-run}
libs=${TE_GPU_LIBS:-build/gpu}
ins=test/Integration/Inputs
mkdir -p "$out"
status=0

cfg() { python3 -c "import json;print(json.load(open('$1'))['$2'])"; }
compare() { # label expected actual atol rtol
  local res
  res=$(python3 utils/compare_npy.py --expected "$2" --actual "$3" --atol "$4" --rtol "$5" 2>&1)
  local rc=$?
  echo "  $1: $(echo "$res" | tail -1)"
  ((rc == 0)) || { echo "$res" | tail -8; status=1; }
}
# FP8 amplifies one-ulp differences of the high-precision intermediates
# (cuBLASLt's accumulation order vs the cpu's) into a different FP8 code for
# a few elements (or, under block scaling, a different power-of-two scale
# for a whole 128-element block), so FP8 results on cuda agree with the cpu
# and the emulation in norm, not elementwise: every tensor's
# ||actual - expected|| / ||expected|| must stay below 2e-2.
normcheck() { # label expected-dir actual-dir
  local res rc
  res=$(python3 - "$2" "$3" <<'PY'
import os, sys
import numpy as np
a_dir, b_dir = sys.argv[1], sys.argv[2]
def load(p):
    x = np.load(p)
    return (x.astype(np.uint32) << 16).view(np.float32) if p.endswith(".bf16.npy") else x.astype(np.float32)
worst, ok = 0.0, True
for f in sorted(os.listdir(a_dir)):
    if not f.endswith(".npy"):
        continue
    a, b = load(os.path.join(a_dir, f)), load(os.path.join(b_dir, f))
    r = float(np.linalg.norm(b - a) / max(np.linalg.norm(a), 1e-30))
    worst = max(worst, r)
    if not r <= 2e-2:
        ok = False
        print(f"MISMATCH {f}: ||actual - expected|| / ||expected|| = {r:.3e}")
print(("PASSED" if ok else "FAILED") + f": worst ||actual - expected|| / ||expected|| = {worst:.3e}")
sys.exit(0 if ok else 1)
PY
)
  rc=$?
  echo "  $1: $(echo "$res" | tail -1)"
  ((rc == 0)) || { echo "$res" | head -8; status=1; }
}
step() { # name lib inputs-dir backend outdir [--bench N]
  local name=$1 lib=$2 dir=$3 be=$4 o=$5; shift 5
  "$run" "$lib" --step main --inputs "$dir/args" --grads "$dir/grads_in" \
    --outputs "$o" --backend "$be" "$@" > "$o.log" 2>&1
  local rc=$?
  echo "  te-run $name --backend $be: rc=$rc $(grep -m1 median "$o.log")"
  ((rc == 0)) || { tail -5 "$o.log"; status=1; }
}

for c in ln_mlp_gelu_bf16 rms_swiglu_f32; do
  echo "== $c"
  for be in cpu cuda; do
    mkdir -p "$out/$c-$be"
    step "$c" "$libs/$c.so" "$ins/$c" "$be" "$out/$c-$be" --bench 20
    for p in fwd bwd; do
      compare "$be $p vs golden" "$ins/$c/expected/$p" "$out/$c-$be/$p" \
        "$(cfg "$ins/$c/config.json" ${p}_atol)" "$(cfg "$ins/$c/config.json" ${p}_rtol)"
    done
  done
  for p in fwd bwd; do
    compare "cuda $p vs cpu" "$out/$c-cpu/$p" "$out/$c-cuda/$p" \
      "$(cfg "$ins/$c/config.json" ${p}_atol)" "$(cfg "$ins/$c/config.json" ${p}_rtol)"
  done
done

# Real Hugging Face blocks (test/Integration/hf/hf_models.py, compiled by
# build_gpu_libs.sh): static ones at their size, dynamic ones at each size.
for lib in "$libs"/hf_*.so; do
  [[ -e $lib ]] || continue
  c=$(basename "$lib" .so)
  j=$ins/$c/config.json
  sizes=$(python3 -c "import json,sys; c=json.load(open(sys.argv[1])); print(' '.join('size%d' % n for n in c['sizes']) if c.get('dynamic') else '.')" "$j")
  for sz in $sizes; do
    label=$c${sz#.}
    echo "== $label"
    for be in cpu cuda; do
      mkdir -p "$out/$label-$be"
      step "$label" "$lib" "$ins/$c/$sz" "$be" "$out/$label-$be"
      for p in fwd bwd; do
        compare "$be $p vs golden" "$ins/$c/$sz/expected/$p" "$out/$label-$be/$p" \
          "$(cfg "$j" ${p}_atol)" "$(cfg "$j" ${p}_rtol)"
      done
    done
    for p in fwd bwd; do
      compare "cuda $p vs cpu" "$out/$label-cpu/$p" "$out/$label-cuda/$p" \
        "$(cfg "$j" ${p}_atol)" "$(cfg "$j" ${p}_rtol)"
    done
  done
done

for n in 5 16; do
  c=ln_mlp_gelu_dyn_f32
  echo "== $c size $n"
  for be in cpu cuda; do
    mkdir -p "$out/dyn$n-$be"
    step "$c/size$n" "$libs/$c.so" "$ins/$c/size$n" "$be" "$out/dyn$n-$be"
    compare "$be bwd vs golden" "$ins/$c/size$n/expected/bwd" "$out/dyn$n-$be/bwd" 0.02 0.001
  done
  compare "cuda bwd vs cpu" "$out/dyn$n-cpu/bwd" "$out/dyn$n-cuda/bwd" 1e-4 1e-4
done

# The GELU GEMM epilogues (te-compile --gemm-act-epilogues): cuBLASLt's
# GELU_AUX_BIAS / DGELU on cuda, the cpu reference's fp32 GEMM + GELU, both
# against the unfused goldens with their tolerances.
c=ln_mlp_gelu_bf16
echo "== $c --gemm-act-epilogues"
for be in cpu cuda; do
  mkdir -p "$out/$c-epi-$be"
  step "$c (epilogues)" "$libs/${c}_act_epilogues.so" "$ins/$c" "$be" "$out/$c-epi-$be"
  for p in fwd bwd; do
    compare "$be $p vs golden" "$ins/$c/expected/$p" "$out/$c-epi-$be/$p" \
      "$(cfg "$ins/$c/config.json" ${p}_atol)" "$(cfg "$ins/$c/config.json" ${p}_rtol)"
  done
done
c=ln_mlp_gelu_dyn_f32
for n in 5 16; do
  echo "== $c size $n --gemm-act-epilogues"
  for be in cpu cuda; do
    mkdir -p "$out/dyn$n-epi-$be"
    step "$c/size$n (epilogues)" "$libs/${c}_act_epilogues.so" "$ins/$c/size$n" "$be" "$out/dyn$n-epi-$be"
    compare "$be bwd vs golden" "$ins/$c/size$n/expected/bwd" "$out/dyn$n-epi-$be/bwd" 0.02 0.001
  done
done

# FP8 goldens (per-tensor at 8 tokens: the FP8 GEMMs take the runtime's
# dequantized fallback, dims off the multiple of 16; fp8-block at 128
# tokens: cuBLASLt's block-scaled GEMMs) and small FP8 modules whose GEMMs
# run on cuBLASLt's FP8 kernels, cuda against cpu. utils/build_gpu_libs.sh
# builds all of them.
for c in ln_mlp_gelu_bf16_fp8_current ln_mlp_gelu_bf16_fp8_delayed ln_linear_f32_fp8_current rms_swiglu_f32_fp8_current rms_swiglu_f32_fp8_delayed \
         ln_mlp_gelu_bf16_fp8_block ln_linear_f32_fp8_block; do
  [[ -f $libs/$c.so ]] || { echo "== $c: no library $libs/$c.so"; status=1; continue; }
  echo "== $c"
  for be in cpu cuda; do
    mkdir -p "$out/$c-$be"
    step "$c" "$libs/$c.so" "$ins/$c" "$be" "$out/$c-$be"
    for p in fwd bwd; do
      if [[ $be == cpu ]]; then # the emulation, elementwise (as in CI)
        compare "$be $p vs golden" "$ins/$c/expected/$p" "$out/$c-$be/$p" \
          "$(cfg "$ins/$c/config.json" ${p}_atol)" "$(cfg "$ins/$c/config.json" ${p}_rtol)"
      else
        normcheck "$be $p vs golden" "$ins/$c/expected/$p" "$out/$c-$be/$p"
      fi
    done
  done
done
for lib in "$libs"/fp8_tiny_*.so; do
  [[ -f $lib ]] || continue
  name=$(basename "$lib" .so)
  echo "== $name (cuBLASLt FP8, random data)"
  for be in cpu cuda; do
    mkdir -p "$out/$name-$be"
    "$run" "$lib" --step step --random 7 --outputs "$out/$name-$be" --backend "$be" \
      > "$out/$name-$be.log" 2>&1 || { echo "  $be failed: $(tail -2 "$out/$name-$be.log")"; status=1; }
  done
  for p in fwd bwd; do
    normcheck "cuda $p vs cpu" "$out/$name-cpu/$p" "$out/$name-cuda/$p"
  done
done

# MXFP8 and NVFP4 (Blackwell-only GEMMs): the cpu backend runs them, the
# cuda backend (Hopper) must refuse them with the runtime's message, not a
# crash.
for c in ln_linear_f32_mxfp8:MXFP8 ln_mlp_gelu_bf16_nvfp4:NVFP4; do
  what=${c#*:} c=${c%:*}
  echo "== $c (a Blackwell recipe on Hopper)"
  mkdir -p "$out/$c-cpu" "$out/$c-cuda"
  step "$c" "$libs/$c.so" "$ins/$c" cpu "$out/$c-cpu"
  "$run" "$libs/$c.so" --step main --inputs "$ins/$c/args" --grads "$ins/$c/grads_in" \
    --outputs "$out/$c-cuda" --backend cuda > "$out/$c-cuda.log" 2>&1
  rc=$?
  if ((rc != 0)) && grep -q "$what is a Blackwell (sm_100+) recipe" "$out/$c-cuda.log"; then
    echo "  cuda refuses it: rc=$rc: $(grep -m1 -o "te_rt_[a-z0-9_]*: $what is a Blackwell[^;]*" "$out/$c-cuda.log")"
  else
    echo "  cuda: expected the Blackwell error, got rc=$rc: $(tail -2 "$out/$c-cuda.log")"; status=1
  fi
done
# The caller's memory (te-run --caller-memory: the arena from
# te_module_entry_arena_bytes and the workspace given to every entry, as the
# PyTorch ops do): bit for bit the results of entries that allocate their
# own, eagerly and replayed from a CUDA graph, static and dynamic, bf16 and
# FP8.
same() { # label dir-a dir-b
  if python3 -c "import os,sys,numpy as n; a,b=sys.argv[1:]; fs=sorted(os.listdir(a)); sys.exit(0 if fs==sorted(os.listdir(b)) and all((n.load(os.path.join(a,f))==n.load(os.path.join(b,f))).all() for f in fs) else 1)" "$2/fwd" "$3/fwd" &&
     python3 -c "import os,sys,numpy as n; a,b=sys.argv[1:]; fs=sorted(os.listdir(a)); sys.exit(0 if fs==sorted(os.listdir(b)) and all((n.load(os.path.join(a,f))==n.load(os.path.join(b,f))).all() for f in fs) else 1)" "$2/bwd" "$3/bwd"; then
    echo "  $1: bit for bit"
  else
    echo "  $1: DIFFERS"; status=1
  fi
}
for c in ln_mlp_gelu_bf16 rms_swiglu_f32 ln_mlp_gelu_bf16_fp8_current ln_mlp_gelu_bf16_fp8_delayed ln_mlp_gelu_bf16_fp8_block; do
  [[ -f $libs/$c.so ]] || continue
  echo "== $c --caller-memory"
  mkdir -p "$out/$c-cm" "$out/$c-cmg"
  step "$c (caller memory)" "$libs/$c.so" "$ins/$c" cuda "$out/$c-cm" --caller-memory
  same "caller memory vs own" "$out/$c-cuda" "$out/$c-cm"
  step "$c (caller memory, graph)" "$libs/$c.so" "$ins/$c" cuda "$out/$c-cmg" --caller-memory --bench 3 --graph
  same "caller memory + graph vs own" "$out/$c-cuda" "$out/$c-cmg"
done
for n in 5 16; do
  c=ln_mlp_gelu_dyn_f32
  echo "== $c size $n --caller-memory"
  mkdir -p "$out/dyn$n-cm"
  step "$c/size$n (caller memory)" "$libs/$c.so" "$ins/$c/size$n" cuda "$out/dyn$n-cm" --caller-memory
  same "caller memory vs own" "$out/dyn$n-cuda" "$out/dyn$n-cm"
done

echo "== compute-sanitizer memcheck: te-run ln_mlp_gelu_bf16_fp8_delayed --step main --backend cuda --caller-memory"
c=ln_mlp_gelu_bf16_fp8_delayed
mkdir -p "$out/memcheck-cm"
compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full "$run" "$libs/$c.so" \
  --step main --inputs "$ins/$c/args" --grads "$ins/$c/grads_in" --outputs "$out/memcheck-cm" \
  --backend cuda --caller-memory > "$out/memcheck-cm.txt" 2>&1
rc=$?
tail -3 "$out/memcheck-cm.txt"
((rc == 0)) || { echo "gpu_e2e: caller-memory memcheck rc=$rc"; grep -m20 -i "error\|invalid" "$out/memcheck-cm.txt"; status=1; }

echo "== compute-sanitizer memcheck: te-run ln_mlp_gelu_bf16_fp8_delayed --step main --backend cuda"
c=ln_mlp_gelu_bf16_fp8_delayed
mkdir -p "$out/memcheck-fp8"
compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full "$run" "$libs/$c.so" \
  --step main --inputs "$ins/$c/args" --grads "$ins/$c/grads_in" --outputs "$out/memcheck-fp8" \
  --backend cuda > "$out/memcheck-fp8.txt" 2>&1
rc=$?
tail -3 "$out/memcheck-fp8.txt"
((rc == 0)) || { echo "gpu_e2e: fp8 memcheck rc=$rc"; grep -m20 -i "error\|invalid" "$out/memcheck-fp8.txt"; status=1; }

echo "== compute-sanitizer memcheck: te-run rms_swiglu_f32 --step main --backend cuda"
c=rms_swiglu_f32
mkdir -p "$out/memcheck"
compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full "$run" "$libs/$c.so" \
  --step main --inputs "$ins/$c/args" --grads "$ins/$c/grads_in" --outputs "$out/memcheck" \
  --backend cuda > "$out/memcheck.txt" 2>&1
rc=$?
tail -3 "$out/memcheck.txt"
((rc == 0)) || { echo "gpu_e2e: memcheck rc=$rc"; grep -m20 -i "error\|invalid" "$out/memcheck.txt"; status=1; }

echo "gpu_e2e: $([[ $status == 0 ]] && echo PASSED || echo FAILED)"
exit $status
