#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Times memwall-fuse on the largest presets (memwall-opt --fuse on a
# generated model file, report included) and memwall-compile (fuse, codegen,
# PTX, bundle) on the compilable examples; median of N runs (default 5).
# CPU-only.
#   bench/fuse_compile_time.sh [build-dir] [runs]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
runs="${2:-5}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_of() {
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null
  end=$(date +%s.%N)
  python3 -c "print($end - $start)"
}

printf "%-40s %12s %10s\n" what kernels median_s
for preset in gpt3-175b llama-2-70b; do
  for mode in prefill train; do
    "$build/bin/memwall-gen" --preset="$preset" --mode="$mode" -o "$out/m.mlir"
    t=$(for _ in $(seq "$runs"); do
      time_of "$build/bin/memwall-opt" "$out/m.mlir" --fuse --target=h100-sxm --report="$out/r.json" -o /dev/null
    done | median)
    kernels=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['fusion']['totals']; print('%d->%d' % (t['kernels_before'], t['kernels_after']))" "$out/r.json")
    printf "%-40s %12s %10.3f\n" "fuse $preset $mode" "$kernels" "$t"
  done
done
for model in examples/gpt2_block_no_attention.mlir examples/memory_bound_model_*.mlir; do
  [ -f "$root/$model" ] || continue
  t=$(for _ in $(seq "$runs"); do
    time_of "$build/bin/memwall-compile" "$root/$model" --target=h100-sxm -o "$out/b"
  done | median)
  steps=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['steps']))" "$out/b/manifest.json")
  printf "%-40s %12s %10.3f\n" "compile $(basename "$model" .mlir)" "$steps steps" "$t"
done
