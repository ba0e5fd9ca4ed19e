#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Compiles the training benchmark's bundles (needs MLIR: run it on the
# development machine). bench/gpu/train.sh runs them on the GPU machine
# beside bench/gpu/train_bench.py (PyTorch), bench/gpu/README.md "Training".
#   stack       24 GPT-2-medium blocks on hidden states [16, 1024, 1024],
#               backward of mean(out^2), no optimizer (memwall-gen
#               --blocks-only, memwall-autodiff optimizer=none)
#   step        the whole GPT-2-medium step, batch 16: forward, backward,
#               the fused linear cross-entropy head, AdamW with fp32 master
#               weights and moments
# each unconstrained (<name>/), at a budget (<name>.budget/: STACK_BUDGET,
# default 3.07GB, PyTorch's per-block checkpointed peak of the stack in
# ../shared/docs/baselines.md; STEP_BUDGET, none by default: give PyTorch's
# checkpointed peak of the step once measured) and at the least peak
# memwall-remat reaches (<name>.least/). Each bundle keeps manifest.json and
# kernels.ptx only (kernels.mlir is dropped: about 12 MB a bundle to carry).
#   bench/gpu/compile_train_bundles.sh [build-dir]     (default: build)
# Environment: TRAIN_BUNDLES_DIR (default bench/gpu/train-bundles),
# STACK_BUDGET, STEP_BUDGET, LAYERS (default 24: fewer for a quick try).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-build}"
case "$build" in
  /*) ;;
  *) build="$root/$build" ;;
esac
for tool in memwall-gen memwall-opt memwall-compile; do
  if [ ! -x "$build/bin/$tool" ]; then
    echo "compile_train_bundles.sh: error: no $build/bin/$tool (build the compiler first)" >&2
    exit 1
  fi
done
bin="$build/bin"
bundles="${TRAIN_BUNDLES_DIR:-$root/bench/gpu/train-bundles}"
layers="${LAYERS:-24}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
rm -rf "$bundles"
mkdir -p "$bundles"

gen=("$bin/memwall-gen" --preset=gpt2-medium --mode=train --batch=16 --layers="$layers")
"${gen[@]}" --blocks-only -o "$tmp/stack.in.mlir"
"$bin/memwall-opt" "$tmp/stack.in.mlir" \
  --pass-pipeline='builtin.module(memwall-autodiff{optimizer=none})' \
  --mlir-print-debuginfo -o "$tmp/stack.mlir"
"${gen[@]}" -o "$tmp/step.mlir"

# The least peak memwall-remat reaches, from its error at a budget of 1 byte
# ("the least peak it reaches is 5.92 GB"), rounded up to the next 0.01.
least_peak() { # source
  local message
  message="$("$bin/memwall-opt" "$1" --fuse --budget=1B -o /dev/null 2>&1 >/dev/null || true)"
  echo "$message" | sed -nE 's/.*the least peak it reaches is ([0-9.]+) ([kMGT]?B).*/\1 \2/p' |
    awk 'NF == 2 { printf "%.2f%s\n", $1 + 0.01, $2 }'
}

compile_one() { # source bundle-name [memwall-opt flags...]
  local src=$1 name=$2
  shift 2
  "$bin/memwall-opt" "$src" --fuse "$@" --mlir-print-debuginfo -o "$tmp/$name.mlir" \
    > "$tmp/$name.report.txt"
  "$bin/memwall-compile" "$tmp/$name.mlir" --target=h100-sxm -o "$bundles/$name"
  rm -f "$bundles/$name/kernels.mlir"
  cp "$tmp/$name.report.txt" "$bundles/$name/report.txt"
  python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print("%-20s %4d steps, arena %.3f GB, predicted %.2f ms" % (sys.argv[2], len(m["steps"]), m["arena_bytes"] / 1e9, m["predicted"]["time_s"] * 1e3))' \
    "$bundles/$name/manifest.json" "$name"
}

for workload in stack step; do
  src="$tmp/$workload.mlir"
  compile_one "$src" "$workload"
  budget=""
  case "$workload" in
    stack) budget="${STACK_BUDGET-3.07GB}" ;;
    step) budget="${STEP_BUDGET-}" ;;
  esac
  [ -z "$budget" ] || compile_one "$src" "$workload.budget" --budget="$budget"
  least="$(least_peak "$src")"
  if [ -z "$least" ]; then
    echo "compile_train_bundles.sh: error: memwall-remat named no least peak for $workload" >&2
    exit 1
  fi
  compile_one "$src" "$workload.least" --budget="$least"
done
