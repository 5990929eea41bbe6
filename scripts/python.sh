# Sourced by the scripts: picks the Python interpreter they run, TE_PYTHON.
#
# The first `python3` on PATH may be anyone's (pyenv, conda, a venv) and need
# not have numpy; the scripts use Debian's interpreter, whose numpy
# scripts/bootstrap.sh installs (python3-numpy), unless TE_PYTHON names
# another one that imports numpy.
te_pick_python() {
  local cand
  for cand in "${TE_PYTHON:-}" /usr/bin/python3; do
    [[ -n $cand && -x $cand ]] || continue
    if "$cand" -c 'import numpy' 2>/dev/null; then
      TE_PYTHON=$cand
      return 0
    fi
  done
  echo "te-mlir: no Python with numpy (tried ${TE_PYTHON:+TE_PYTHON=$TE_PYTHON and }/usr/bin/python3); run scripts/bootstrap.sh, or set TE_PYTHON to an interpreter that has numpy" >&2
  return 1
}
