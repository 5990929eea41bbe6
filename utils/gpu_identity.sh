#!/usr/bin/env bash
# Bit-identity of the runtime on the GPU machine across a change: builds the
# runtime alone (TE_RUNTIME_ONLY, no MLIR there) from this checkout and from a
# base source tree, runs the libraries of `identity_check.sh build` on the
# cuda backend with each te-run, and diffs the two manifests.
#   here:             git archive BASE | gzip > base-src.tar.gz
#                     utils/identity_check.sh build LIB_DIR   (te-compile of BASE)
#   on the GPU:       utils/gpu_identity.sh base-src.tar.gz LIB_DIR OUT
# OUT gets base/manifest.txt, new/manifest.txt, the build logs and
# identity.diff (empty when identical). Exit status 0 only when both builds
# succeed, no run fails and the manifests are equal. Also runs the new tree's
# te-kernels-selftest (OUT/selftest.log).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base_tgz=$(realpath "${1:?usage: gpu_identity.sh BASE_SRC_TGZ LIB_DIR OUT}")
libs=$(realpath "${2:?LIB_DIR}")
out=${3:?OUT}
mkdir -p "$out"
out=$(realpath "$out")
work=${TMPDIR:-/tmp}/te-gpu-identity
jobs=$(nproc)

configure_build() { # src build log
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTE_RUNTIME_ONLY=ON \
    -DTE_BUILD_UNITTESTS=OFF >"$3" 2>&1 && ninja -C "$2" -j "$jobs" >>"$3" 2>&1
}

rm -rf "$work/base-src" && mkdir -p "$work/base-src"
tar xzf "$base_tgz" -C "$work/base-src" || { echo "cannot unpack $base_tgz" >&2; exit 1; }
configure_build "$work/base-src" "$work/build-base" "$out/build-base.log" ||
  { echo "base build failed: $(tail -3 "$out/build-base.log")" >&2; exit 1; }
configure_build "$root" "$work/build-new" "$out/build-new.log" ||
  { echo "new build failed: $(tail -3 "$out/build-new.log")" >&2; exit 1; }
# The new tree must not have found MLIR: the runtime builds without it.
grep -q "TE_RUNTIME_ONLY (no MLIR)" "$out/build-new.log" || { echo "not a runtime-only build" >&2; exit 1; }

status=0
if [[ -x $work/build-new/bin/te-kernels-selftest ]]; then
  "$work/build-new/bin/te-kernels-selftest" >"$out/selftest.log" 2>&1
  rc=$?
  ((rc == 0)) || status=1
  echo "selftest rc=$rc $(tail -1 "$out/selftest.log")"
fi
for v in base new; do
  TE_RUN=$work/build-$v/bin/te-run "$root/utils/identity_check.sh" run "$libs" cuda "$out/$v" ||
    status=1
done
diff "$out/base/manifest.txt" "$out/new/manifest.txt" >"$out/identity.diff" || status=1
grep -q ' rc=' "$out/new/manifest.txt" && status=1
echo "gpu_identity: $(wc -l <"$out/new/manifest.txt") manifest lines," \
  "$(grep -c ' rc=' "$out/new/manifest.txt") failed runs," \
  "$(wc -l <"$out/identity.diff") diff lines"
exit $status
