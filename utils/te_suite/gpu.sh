#!/usr/bin/env bash
# TransformerEngine's module tests against te_mlir.torch on the H200 (docs/python.md,
# "Running TransformerEngine's tests"). The GPU machine has no te-compile and no TE source:
#   utils/te_suite/gpu.sh --pack TE_SRC CACHE   # CPU machine: build-tes/pack.tar.xz = te-compile
#       (the cache keys hold its sha256), the runtime and op library (stripped), CACHE (filled
#       by run.py --fill-cuda-cache), TE's test files (run.py --export), a copy of pytest
#   utils/te_suite/gpu.sh OUT [run.py args]     # GPU machine, with build-tes/ and .te-peer/
#       (../shared/tools/te-peer) carried: installs TE, runs run.py --mode gpu, JSON in OUT
# TE_SUITE_SLIM=1 with --pack leaves out te-compile, the runtime, the op library and
# pytest (2 MB instead of 7: with .te-peer's 41 MB and the tracked tree it fits one 64 MiB
# call; the wheel's static te-compile compiles there); the run then takes them from the
# wheel that `utils/gpu_python.sh OUT none` (carrying
# .gpu-unit) installed in /tmp/te-wheel on the same warm machine, and pytest from the
# machine's Python.
# TE_SUITE_BUILD (default build-tes) and TE_PEER (default .te-peer) name them elsewhere.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
b=${TE_SUITE_BUILD:-$root/build-tes}   # where the pack is
peer=${TE_PEER:-$root/.te-peer}
if [[ ${1:-} == --pack ]]; then
  te_src=${2:?usage: gpu.sh --pack TE_SRC CACHE}; cache=${3:?usage: gpu.sh --pack TE_SRC CACHE}
  build=${TE_MLIR_BUILD:-$root/build}
  py=${PYTHON:-python3}
  rm -rf "$b/stage" && mkdir -p "$b/stage/bin" "$b/stage/lib" "$b/stage/py" "$b/stage/cache"
  if [[ ${TE_SUITE_SLIM:-0} != 1 ]]; then
    cp "$build/bin/te-compile" "$b/stage/bin/"
    cp "$build/lib/libte_runtime.so" "$build/lib/libte_torch_ops.so" "$b/stage/lib/"
    strip --strip-unneeded "$b"/stage/lib/*.so
  else
    rmdir "$b/stage/lib" "$b/stage/bin"
  fi
  (cd "$cache" && find . -maxdepth 1 \( -name '*.so' -o -name '*.sha256' -o -name '*.json' \) \
     -exec cp {} "$b/stage/cache/" \;)
  "$py" "$root/utils/te_suite/run.py" --te-src "$te_src" --export "$b/stage/te-tests" >/dev/null
  site=$("$py" -c 'import os, pytest; print(os.path.dirname(os.path.dirname(pytest.__file__)))')
  [[ ${TE_SUITE_SLIM:-0} == 1 ]] || for m in _pytest pytest pluggy iniconfig packaging py.py; do
    [[ -e $site/$m ]] && cp -r "$site/$m" "$b/stage/py/"
  done
  find "$b/stage/py" -name __pycache__ -prune -exec rm -rf {} +
  (cd "$b/stage" && tar cf - .) | xz -9 -T2 > "$b/pack.tar.xz"
  rm -rf "$b/stage"
  ls -la "$b/pack.tar.xz"
  exit 0
fi
out=${1:?usage: gpu.sh OUT [run.py args]}; shift
mkdir -p "$out" "$b/run"
tar xJf "$b/pack.tar.xz" -C "$b/run"
if [[ ! -d $b/run/lib ]]; then  # a slim pack: the wheel's te-compile, runtime and op library
  wl=/tmp/te-wheel/site/te_mlir/_native
  [[ -f $wl/lib/libte_runtime.so ]] || { echo "gpu.sh: a slim pack needs the wheel in /tmp/te-wheel (utils/gpu_python.sh OUT none, carrying .gpu-unit, first)" >&2; exit 1; }
  ln -sfn "$wl/lib" "$b/run/lib"
  [[ -e $b/run/bin ]] || ln -sfn "$wl/bin" "$b/run/bin"
fi
bash "$peer/setup_device.sh" > "$out/te_setup.log" 2>&1 || { tail -5 "$out/te_setup.log"; exit 1; }
export PYTHONPATH=/tmp/site
python3 -c 'import pytest' 2>/dev/null || export PYTHONPATH=$PYTHONPATH:$b/run/py
export TE_MLIR_BUILD=$b/run TE_MLIR_CACHE=$b/run/cache PYTHONUNBUFFERED=1
python3 "$root/utils/te_suite/run.py" --te-src "$b/run/te-tests" --mode gpu --python python3 "$@"
