# Sourced by the scripts: `te_venv` makes sure a virtual environment with
# scripts/requirements.txt (torch, torch-mlir, transformers, numpy, pytest)
# exists and sets TE_VENV_PYTHON to its interpreter.
#
# Where: $TE_VENV when set (an existing venv is used as is if it imports
# everything), else ~/.cache/te-mlir/venv-<hash of requirements.txt>, made
# once per machine with Debian's python3 (never the first python3 on PATH,
# which may be anyone's) and reused by every clone: the wheels are ~4 GB.
# te_mlir is not installed there: PYTHONPATH points at the asking clone's
# python/, so the package tests run what is checked out.
te_venv() {
  local root req hash dir py
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  req=$root/scripts/requirements.txt
  hash=$(sha256sum "$req" | cut -c1-12)
  dir=${TE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/te-mlir/venv-$hash}
  py=$dir/bin/python
  local probe='import torch, torch_mlir.fx, transformers, numpy, ml_dtypes, pytest'
  if [[ ! -x $py ]] || ! "$py" -c "$probe" 2>/dev/null; then
    if [[ -n ${TE_VENV:-} && -x $py ]]; then
      echo "te-mlir: TE_VENV=$TE_VENV lacks some of $req; installing them there" >&2
    fi
    echo "venv: setting up $dir (torch, torch-mlir, transformers: a few GB, once per machine)"
    local base=/usr/bin/python3
    [[ -x $base ]] || base=$(command -v python3)
    if [[ ! -x $py ]]; then
      "$base" -m venv "$dir" || {
        echo "te-mlir: cannot create a virtual environment with $base (on Debian: apt-get install python3-venv)" >&2
        return 1
      }
    fi
    "$py" -m pip install -q --disable-pip-version-check -r "$req" || {
      echo "te-mlir: pip could not install $req into $dir" >&2
      return 1
    }
    "$py" -c "$probe" || { echo "te-mlir: $dir still cannot import: $probe" >&2; return 1; }
  fi
  # te_mlir itself comes from the clone that asks (PYTHONPATH=python/), not
  # from the venv, which clones share.
  export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
  TE_VENV_PYTHON=$py
  export TE_VENV_PYTHON
}
