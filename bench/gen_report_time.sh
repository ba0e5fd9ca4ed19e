#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Times generate + report for the largest presets: memwall-gen piped into
# memwall-opt --report, median of N runs (default 5). CPU-only.
#   bench/gen_report_time.sh [build-dir] [runs]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
runs="${2:-5}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

printf "%-12s %-8s %6s %10s\n" preset mode ops median_s
for preset in gpt3-175b llama-2-70b; do
  for mode in prefill decode train; do
    times=()
    for _ in $(seq "$runs"); do
      start=$(date +%s.%N)
      "$build/bin/memwall-gen" --preset="$preset" --mode="$mode" |
        "$build/bin/memwall-opt" --target=h100-sxm --report="$out/r.json" -o /dev/null
      end=$(date +%s.%N)
      times+=("$(python3 -c "print($end - $start)")")
    done
    median=$(printf "%s\n" "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    ops=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['ops']))" "$out/r.json")
    printf "%-12s %-8s %6s %10.3f\n" "$preset" "$mode" "$ops" "$median"
  done
done
