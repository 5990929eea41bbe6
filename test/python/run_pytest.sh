#!/usr/bin/env bash
# The PyTorch package's tests as ctest runs them (test/CMakeLists.txt, test
# "pytest"): pytest test/python on the cpu backend, in the virtual
# environment of scripts/venv.sh (made once per machine), with the op library
# (python/csrc) built for that environment's torch by
# scripts/build_torch_ops.sh. GPU tests report as skipped, with why.
#   test/python/run_pytest.sh BUILD_DIR [pytest options...]
# Writes BUILD_DIR/pytest.xml (JUnit) and BUILD_DIR/venv.log.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
shift
# shellcheck source=/dev/null
source "$root/scripts/venv.sh"
if ! te_venv >"$build/venv.log" 2>&1; then
  tail -5 "$build/venv.log"
  exit 1
fi
"$root/scripts/build_torch_ops.sh" "$build" "$TE_VENV_PYTHON"
cd "$root"
TE_MLIR_BUILD=$build TE_MLIR_CACHE=$build/te-mlir-cache \
  exec "$TE_VENV_PYTHON" -m pytest test/python -q -rs -p no:cacheprovider \
  --junitxml="$build/pytest.xml" "$@"
