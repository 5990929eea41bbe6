#!/usr/bin/env bash
# The wheel as a PyTorch user gets it (scripts/test.sh runs this):
#   scripts/test_wheel.sh [WORK_DIR]          (default build/wheel-test)
#   1. scripts/build_wheel.sh (incremental build-wheel/, ccache) and
#      utils/check_wheel.py: contents, size, each binary's needs, runpaths, tag;
#   2. a fresh venv (the test venv's base Python) that sees the test venv's
#      packages (torch, transformers, ...) except torch_mlir and te_mlir, through
#      a directory of links named in a .pth; the wheel pip-installed there
#      (--no-deps --no-index);
#   3. test/wheel/check_installed.py in it, from an empty directory with
#      TE_MLIR_BUILD, PYTHONPATH and TE_RUNTIME_DIR unset, a PATH of the venv's
#      bin/ alone (no cc, no ld, no build tree) and an empty TE_MLIR_CACHE: a
#      LayerNormLinear step and backend="te_mlir" on a LLaMA-style block and a
#      2-layer LlamaForCausalLM and GPT2LMHeadModel (the main job's models), compiled
#      live by the wheel's te-compile.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/build/wheel-test}
mkdir -p "$work"
work=$(cd "$work" && pwd)
# shellcheck source=venv.sh
source "$root/scripts/venv.sh"
te_venv

echo "== wheel: build and check (scripts/build_wheel.sh)"
whl=$("$root/scripts/build_wheel.sh" "$work/dist" | tail -1)

echo "== wheel: install into a fresh venv ($work/venv)"
base=$("$TE_VENV_PYTHON" -c 'import sys; print(sys._base_executable)')
site=$("$TE_VENV_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -rf "$work/venv" "$work/site-view" "$work/cache" "$work/run"
"$base" -m venv "$work/venv"
mkdir -p "$work/site-view" "$work/cache" "$work/run"
for entry in "$site"/*; do
  case ${entry##*/} in
    torch_mlir* | te_mlir* | *.pth | __pycache__) ;;
    *) ln -s "$entry" "$work/site-view/" ;;
  esac
done
vsite=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$work/site-view" >"$vsite/te_wheel_test_site.pth"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-index "$whl"

echo "== wheel: check the installed package (test/wheel/check_installed.py)"
cp "$root/test/wheel/check_installed.py" "$work/run/"
cd "$work/run"
env -u TE_MLIR_BUILD -u PYTHONPATH -u TE_RUNTIME_DIR -u TE_MLIR_TORCH_OPS -u TE_VENV_PYTHON \
  PATH="$work/venv/bin" TE_MLIR_CACHE="$work/cache" HOME="$work/run" HF_HUB_OFFLINE=1 \
  "$work/venv/bin/python" check_installed.py --device cpu --hf --no-cc
