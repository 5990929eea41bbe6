#!/usr/bin/env bash
# te-mlir's PyTorch layer on the H200 (no MLIR, no torch-mlir there), from a bundle
# made here by `utils/gpu_python.sh --pack`:
#   utils/gpu_python.sh --pack            # CPU machine: build-gpu.tar.xz = te-compile (for
#                                         # the cache keys), te-run, libte_runtime.so,
#                                         # libte_torch_ops.so, TERuntime unit tests and
#                                         # fixtures, the compiled-library cache
#                                         # (TE_MLIR_CACHE=build-gpu/cache filled by the
#                                         # pytest suite, seed_overhead --prefill and
#                                         # decoder_layer --prepare), the anchors' scripts
#   utils/gpu_python.sh OUT [STEPS]       # GPU machine, with build-gpu.tar.xz and .te-peer
# STEPS (comma list, default unit,pytest,seed): te (install TransformerEngine from
# .te-peer), unit (TERuntimeTests *Cuda* and the guest tests), pytest (test/python), seed
# (anchors' seed_overhead.py), decoder16, decoder8192 (bench/decoder_layer.py), rodiag
# (bench/diag_reduce_overhead.py; RODIAG_ARGS), memory
# (anchors' module_memory.py), dropin (the modules' drop-in tests with
# TE_MLIR_TEST_TARGET=auto), weights (bench/weights_memory.py), energy (bench/energy.py;
# ENERGY_ARGS), profile (bench/host_profile.py), layer (anchors' layer_memory.py; LAYER_ARGS). Logs and JSON go to OUT. DECODER16_ARGS / DECODER8192_ARGS:
# extra decoder_layer.py arguments (e.g. --recipes bf16 --no-compile).
#
# Wheel mode (no build-gpu bundle; the wheel's te-compile compiles live there):
#   utils/gpu_python.sh --pack-wheel      # here: scripts/build_wheel.sh .whl first; puts
#                                         # the CUDA unit tests (xz), the anchors'
#                                         # scripts and the wheel's files
#                                         # (slim.tar.xz, 21 MB against the wheel's 31)
#                                         # into .gpu-unit/ (git-ignored)
#   utils/gpu_python.sh OUT STEPS         # on the GPU machine with carry [".gpu-unit"]
#                                         # (or [".whl", ".gpu-unit"] for a pack without
#                                         # slim.tar.xz): the wheel's files go to
#                                         # /tmp/te-wheel/site (kept while the machine is
#                                         # warm, so a later call carrying .te-peer
#                                         # instead finds them) and serve as TE_MLIR_BUILD;
#                                         # a carried slim.tar.xz replaces what is there
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ ${1:-} == --pack-wheel ]]; then
  b=$root/build
  u=$root/.gpu-unit
  rm -rf "$u"; mkdir -p "$u/unittests" "$u/anchors"
  cp "$b/unittests/TERuntimeTests" "$b/unittests/TERuntimeGuestTests" "$u/unittests/"
  strip --strip-unneeded "$u"/unittests/TERuntime*
  xz -9 -T2 "$u/unittests/TERuntimeTests"
  cp -r "$b/unittests/fixtures" "$u/unittests/"
  cp "$root"/../shared/anchors/{seed_overhead,module_memory,layer_memory}.py "$u/anchors/" 2>/dev/null
  # the wheel's files, unzipped (python -m zipfile drops the exec bits: te-compile
  # needs its own) and xz'd: 10 MB less to carry than the wheel
  whl=$(ls "$root"/.whl/te_mlir-*.whl | head -1)
  t=$(mktemp -d)
  python3 -m zipfile -e "$whl" "$t" && chmod +x "$t"/te_mlir/_native/bin/*
  (cd "$t" && tar cf - . | xz -6 -T2 > "$u/slim.tar.xz")
  rm -rf "$t"
  du -sh "$u" "$u/slim.tar.xz" "$whl"
  exit 0
fi
if [[ ${1:-} == --pack ]]; then
  b=$root/build
  g=$root/build-gpu
  mkdir -p "$g/bin" "$g/lib" "$g/unittests" "$g/cache" "$g/anchors"
  cp "$b/bin/te-compile" "$b/bin/te-run" "$g/bin/"
  cp "$b/lib/libte_runtime.so" "$b/lib/libte_torch_ops.so" "$g/lib/"
  cp "$b/unittests/TERuntimeTests" "$b/unittests/TERuntimeGuestTests" "$g/unittests/"
  cp -r "$b/unittests/fixtures" "$g/unittests/"
  cp "$root"/../shared/anchors/{seed_overhead,module_memory,layer_memory}.py "$g/anchors/" 2>/dev/null
  # smaller to carry (64 MiB a call, TransformerEngine's 40 MB included); te-compile stays
  # as built: the cache keys hold its sha256
  strip --strip-unneeded "$g"/unittests/TERuntime* "$g"/lib/*.so "$g/bin/te-run"
  (cd "$root" && tar cf - build-gpu | xz -9e -T2 > build-gpu.tar.xz)
  ls -la "$root/build-gpu.tar.xz"
  exit 0
fi
out=${1:?usage: utils/gpu_python.sh OUT [STEPS]}
steps=${2:-unit,pytest,seed}
mkdir -p "$out"
cd "$root"
export PYTHONUNBUFFERED=1
if [[ ! -d build-gpu && ! -f build-gpu.tar.xz ]]; then
  # wheel mode: build-gpu is assembled from the installed wheel and .gpu-unit
  tw=/tmp/te-wheel
  if [[ -f .gpu-unit/slim.tar.xz ]]; then
    rm -rf $tw/site && mkdir -p $tw/site $tw/cache
    tar xJf .gpu-unit/slim.tar.xz -C $tw/site || exit 1
  elif [[ ! -d $tw/site/te_mlir/_native ]]; then
    whl=$(ls .whl/te_mlir-*.whl 2>/dev/null | head -1)
    [[ -n $whl ]] || { echo "gpu_python: no build-gpu, no build-gpu.tar.xz, no .whl/te_mlir-*.whl" >&2; exit 1; }
    mkdir -p $tw/site $tw/cache
    python3 -m pip install -q --no-deps --no-index --disable-pip-version-check --target $tw/site "$whl" || exit 1
  fi
  [[ -d .gpu-unit ]] && mkdir -p $tw/unit && tar cf - --exclude=slim.tar.xz -C .gpu-unit . | tar xf - -C $tw/unit \
    && { [[ ! -f $tw/unit/unittests/TERuntimeTests.xz ]] || xz -df $tw/unit/unittests/TERuntimeTests.xz; }
  mkdir -p build-gpu
  ln -sfn $tw/site/te_mlir/_native/bin build-gpu/bin
  ln -sfn $tw/site/te_mlir/_native/lib build-gpu/lib
  ln -sfn $tw/cache build-gpu/cache
  [[ -d $tw/unit/unittests ]] && ln -sfn $tw/unit/unittests build-gpu/unittests
  [[ -d $tw/unit/anchors ]] && ln -sfn $tw/unit/anchors build-gpu/anchors
  echo "gpu_python: wheel mode, binaries from $tw/site/te_mlir/_native"
fi
[[ -d build-gpu ]] || tar xJf build-gpu.tar.xz
# the unit tests' fixtures and their runtime at the paths they were built with
src_build=$(strings build-gpu/unittests/TERuntimeTests | grep -m1 -oE '/[^"]*/unittests/fixtures/' | sed 's#/unittests/fixtures/##')
if [[ -n $src_build && ! -e $src_build/unittests/fixtures ]]; then
  mkdir -p "$src_build/unittests" "$src_build/lib"
  cp -r build-gpu/unittests/fixtures "$src_build/unittests/"
  cp build-gpu/lib/libte_runtime.so "$src_build/lib/"
fi
export TE_MLIR_BUILD=$root/build-gpu TE_MLIR_CACHE=$root/build-gpu/cache
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
has() { [[ ,$steps, == *,$1,* ]]; }
status=0
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))' | tee "$out/env.txt"
if has te; then
  echo "== TransformerEngine (te-peer)"
  bash .te-peer/setup_device.sh > "$out/te_setup.log" 2>&1 || { echo "te setup failed"; tail -5 "$out/te_setup.log"; }
fi
[[ -d /tmp/site/transformer_engine ]] && export PYTHONPATH=/tmp/site:$PYTHONPATH
if has unit; then
  echo "== exports"
  nm -D --defined-only build-gpu/lib/libte_runtime.so | grep -vc ' te_rt_\| te_module_' | tee "$out/exports_other.txt"
  echo "== TERuntimeTests (CUDA)"
  build-gpu/unittests/TERuntimeTests --gtest_filter='*Cuda*:*ZeroRanges*:*ModulePadding*' > "$out/unit_cuda.log" 2>&1
  rc=$?; tail -3 "$out/unit_cuda.log"; ((rc == 0)) || status=1
  build-gpu/unittests/TERuntimeGuestTests > "$out/unit_guest.log" 2>&1; rc=$?; tail -2 "$out/unit_guest.log"
  ((rc == 0)) || status=1
fi
if has pytest; then
  echo "== pytest test/python (GPU tests, the C++ op layer, the guest tests)"
  timeout 400 python3 -m pytest test/python -q -rs -p no:cacheprovider -k "${PYTEST_K:-cuda or gpu or cpp or guest}" \
    > "$out/pytest.log" 2>&1
  rc=$?; grep -E "passed|failed|^FAILED|^ERROR" "$out/pytest.log" | tail -15; ((rc == 0)) || status=1
fi
if has seed; then
  echo "== seed_overhead.py"
  timeout 360 python3 build-gpu/anchors/seed_overhead.py --device cuda --out "$out/seed_overhead.json" \
    > "$out/seed_overhead.log" 2>&1
  tail -8 "$out/seed_overhead.log"
fi
for t in 16 8192; do
  if has decoder$t; then
    echo "== decoder_layer.py $t tokens"
    args_var=DECODER${t}_ARGS
    timeout 420 python3 bench/decoder_layer.py --tokens $t ${!args_var:-} --out "$out/decoder_$t.json" \
      > "$out/decoder_$t.log" 2>&1
    tail -14 "$out/decoder_$t.log"
  fi
done
if has rodiag; then
  echo "== bench/diag_reduce_overhead.py (host time of the reduce-overhead step, per engine)"
  timeout 300 python3 bench/diag_reduce_overhead.py ${RODIAG_ARGS:-} > "$out/diag_reduce_overhead.log" 2>&1
  sed -n 1,8p "$out/diag_reduce_overhead.log"
fi
if has dropin; then
  echo "== pytest: the modules' drop-in tests on the GPU (TE_MLIR_TEST_TARGET=auto)"
  files=$(ls test/python/test_dropin.py test/python/test_primary_weights.py \
    test/python/test_norm_modules.py 2>/dev/null)
  TE_MLIR_TEST_TARGET=auto timeout 400 python3 -m pytest $files -q -rs -p no:cacheprovider \
    > "$out/dropin.log" 2>&1
  rc=$?; grep -E "passed|failed|^FAILED|^ERROR" "$out/dropin.log" | tail -15; ((rc == 0)) || status=1
fi
if has weights; then
  echo "== bench/weights_memory.py"
  timeout 300 python3 bench/weights_memory.py --recipes ${WEIGHTS_RECIPES:-bf16,fp8-current,fp8-delayed,fp8-block} \
    --out "$out/weights_memory.json" > "$out/weights_memory.log" 2>&1
  tail -20 "$out/weights_memory.log"
fi
if has energy; then
  echo "== bench/energy.py"
  timeout 420 python3 bench/energy.py ${ENERGY_ARGS:-} --out "$out/energy.json" > "$out/energy.log" 2>&1
  tail -22 "$out/energy.log"
fi
if has profile; then
  echo "== bench/host_profile.py (where the host time goes; the null-module floors)"
  timeout 300 python3 bench/host_profile.py --device cuda --out "$out/host_profile.json" \
    > "$out/host_profile.log" 2>&1
  head -20 "$out/host_profile.log"
fi
if has memory; then
  timeout 200 python3 build-gpu/anchors/module_memory.py > "$out/module_memory.log" 2>&1; tail -12 "$out/module_memory.log"
fi
if has layer; then
  echo "== anchors' layer_memory.py (the decoder layer's held and peak memory, 8192 tokens)"
  timeout 300 python3 build-gpu/anchors/layer_memory.py --bench bench/decoder_layer.py \
    ${LAYER_ARGS:-} --out "$out/layer_memory.json" > "$out/layer_memory.log" 2>&1
  tail -14 "$out/layer_memory.log"
fi
exit $status
