#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Compiles the GPU benchmark's workloads into bundles (needs MLIR: run it on
# the development machine, not the GPU machine). Sources:
#   bench/gpu/ops/*.mlir, examples/memory_bound_model_*.mlir,
#   examples/gpt2_block_no_attention.mlir
# Each becomes bench/gpu/bundles/<name>/ (manifest.json + kernels.ptx) for
# --target=h100-sxm. The bundles are git-ignored build outputs (never
# committed): carry them to the GPU machine (device run carry=
# ["bench/gpu/bundles"]); bench/gpu/run.sh runs them there.
#   bench/gpu/compile_bundles.sh [build-dir]     (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-build}"
case "$build" in
  /*) ;;
  *) build="$root/$build" ;;
esac
compile="$build/bin/memwall-compile"
if [ ! -x "$compile" ]; then
  echo "compile_bundles.sh: error: no $compile (build the compiler first)" >&2
  exit 1
fi

bundles="$root/bench/gpu/bundles"
rm -rf "$bundles"
mkdir -p "$bundles"

sources=("$root"/bench/gpu/ops/*.mlir "$root"/examples/memory_bound_model_*.mlir
         "$root/examples/gpt2_block_no_attention.mlir")
for src in "${sources[@]}"; do
  name="$(basename "$src" .mlir)"
  "$compile" "$src" --target=h100-sxm -o "$bundles/$name"
  steps="$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(len(m["steps"]), "steps,", "arena", m["arena_bytes"], "bytes")' "$bundles/$name/manifest.json")"
  printf '%-42s %s\n' "$name" "$steps"
done
