#!/usr/bin/env bash
# Compiles every bench/cases/*.mlir with te-compile --train into bench/build/<case>.so
# (bench/build is git-ignored). Runs where MLIR is (te-compile); the GPU machine only
# needs the .so files and build-rt-cuda/lib/libte_runtime.so.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tc="${TE_COMPILE:-$root/build/bin/te-compile}"
mkdir -p "$root/bench/build"
rc=0
for f in "$root"/bench/cases/*.mlir; do
  name="$(basename "$f" .mlir)"
  if "$tc" "$f" --train -o "$root/bench/build/$name.so"; then
    echo "compiled $name"
  else
    echo "FAILED $name" >&2; rc=1
  fi
done
exit $rc
