#!/bin/sh
#===- check_exports.sh - libte_runtime.so exports its API only -*- sh -*-===#
#
# usage: check_exports.sh NM LIBRARY TERuntime.def TEModule.h
#
# Lists the dynamic symbols LIBRARY defines (NM -D --defined-only) and fails
# on any that is not te_rt_* / te_module_* (te_rt_internal_* included: those
# are internals), printing the offenders, and on any function of the ABI
# (TERuntime.def's TE_RT_FUNC names, TEModule.h's te_module_* declarations)
# that it does not export. Run by ctest (TERuntime.exports).
#
#===------------------------------------------------------------------------===#
set -eu
if [ $# -ne 4 ]; then
  echo "usage: $0 NM LIBRARY TERuntime.def TEModule.h" >&2
  exit 2
fi
nm=$1 lib=$2 def=$3 module=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Defined dynamic symbols, one name a line (any @VERSION dropped).
if ! "$nm" -D --defined-only --format=posix "$lib" >"$tmp/nm"; then
  echo "FAIL: $nm -D --defined-only $lib failed" >&2
  exit 1
fi
awk '{ sub(/@.*/, "", $1); print $1 }' "$tmp/nm" | sort -u >"$tmp/exports"
# The ABI: TE_RT_FUNC(ret, name, ...) and TE_RT_API ... te_module_x(.
{
  sed -n 's/^TE_RT_FUNC([^,]*, *\([A-Za-z_0-9]*\).*/\1/p' "$def"
  sed -n 's/^TE_RT_API[^(]*[ *]\(te_module_[A-Za-z_0-9]*\)(.*/\1/p;
          s/^\(te_module_[A-Za-z_0-9]*\)(.*/\1/p' "$module"
} | sort -u >"$tmp/api"

status=0
grep -v -E '^(te_rt_|te_module_)' "$tmp/exports" >"$tmp/bad" || true
grep -E '^te_rt_internal_' "$tmp/exports" >>"$tmp/bad" || true
if [ -s "$tmp/bad" ]; then
  echo "FAIL: $lib exports $(wc -l <"$tmp/bad") symbols outside" \
    "te_rt_* / te_module_*:"
  sed 's/^/  /' "$tmp/bad"
  status=1
fi
if [ ! -s "$tmp/api" ]; then
  echo "FAIL: no API function found in $def and $module"
  status=1
fi
comm -23 "$tmp/api" "$tmp/exports" >"$tmp/missing"
if [ -s "$tmp/missing" ]; then
  echo "FAIL: $lib does not export $(wc -l <"$tmp/missing") functions of" \
    "its API:"
  sed 's/^/  /' "$tmp/missing"
  status=1
fi
if [ $status -eq 0 ]; then
  echo "PASS: $lib exports $(wc -l <"$tmp/exports") symbols, the" \
    "$(wc -l <"$tmp/api") functions of its API"
fi
exit $status
