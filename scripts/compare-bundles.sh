#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Compiles the same models with two memwall builds and compares the bundles:
# the check a refactoring of the compile path must pass (the PTX of every
# bundle byte-identical).
#
#   scripts/compare-bundles.sh OLD_BUILD NEW_BUILD
#
# OLD_BUILD is e.g. a build of the base commit in a git worktree
# (git worktree add /tmp/base main && MEMWALL_BUILD_DIR=/tmp/base/build
# /tmp/base/scripts/build.sh). Models: bench/gpu/ops/*.mlir, the hand-written
# examples, and NEW_BUILD's generated examples; each compiled for h100-sxm
# (fused) and for a100-80gb with --no-fuse. Prints one line per differing
# file (kernels.ptx, kernels.mlir, manifest.json) and per model that compiles
# with one build only; exits 1 if any PTX differs or a model stops compiling.
set -uo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 OLD_BUILD NEW_BUILD" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
new_build="$(cd "$2" && pwd)"
old="$(cd "$1" && pwd)/bin/memwall-compile"
new="$new_build/bin/memwall-compile"
for compile in "$old" "$new"; do
  [ -x "$compile" ] || { echo "$0: error: no $compile" >&2; exit 2; }
done
work="$(mktemp -d "${TMPDIR:-/tmp}/compare-bundles.XXXXXX")"
trap 'rm -rf "$work"' EXIT

status=0 identical=0
compare() { # NAME MODEL FLAGS...
  local name=$1 model=$2
  shift 2
  "$old" "$model" "$@" -o "$work/old/$name" >/dev/null 2>&1
  local old_ok=$?
  "$new" "$model" "$@" -o "$work/new/$name" >/dev/null 2>"$work/$name.err"
  local new_ok=$?
  if [ $old_ok -ne 0 ] && [ $new_ok -ne 0 ]; then return; fi
  if [ $new_ok -ne 0 ]; then
    echo "no longer compiles: $name: $(head -1 "$work/$name.err")"
    status=1
    return
  fi
  if [ $old_ok -ne 0 ]; then echo "now compiles: $name"; return; fi
  local file differs=0
  for file in kernels.ptx kernels.mlir manifest.json; do
    if ! cmp -s "$work/old/$name/$file" "$work/new/$name/$file"; then
      echo "differs: $name/$file"
      differs=1
      [ $file = kernels.ptx ] && status=1
    fi
  done
  [ $differs -eq 0 ] && identical=$((identical + 1))
}

mkdir -p "$work/old" "$work/new"
for model in "$root"/bench/gpu/ops/*.mlir "$root"/examples/*.mlir \
             "$new_build"/examples/*.mlir; do
  name="$(basename "$model" .mlir)"
  compare "$name.h100" "$model" --target=h100-sxm
  compare "$name.a100-no-fuse" "$model" --target=a100-80gb --no-fuse
done
echo "identical bundles: $identical"
exit $status
