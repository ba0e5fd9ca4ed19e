#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Recomputation solver benchmark: solve time (the memwall-remat pass alone,
# from --mlir-timing) and predicted overhead per solver, for training graphs
# at several per-device budgets. Writes bench/remat/out/results.jsonl and
# prints a markdown table (bench/remat/table.py).
#
#   bench/remat/run.sh [build-dir] [milp-time-limit-s]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
limit="${2:-30}"
out="$root/bench/remat/out"
mkdir -p "$out"
: > "$out/results.jsonl"
gen="$build/bin/memwall-gen"
opt="$build/bin/memwall-opt"

# model | memwall-gen flags | sharding flags | budgets (GB)
cases=(
  "gpt2-medium|--batch=16||16 12 10"
  "llama-2-7b||--devices=8 --zero-stage=3|28 24 20"
  "llama-2-70b||--devices=64 --zero-stage=3|100 80 60"
  "gpt3-175b||--devices=64 --zero-stage=3|120 100 80"
)
for entry in "${cases[@]}"; do
  IFS='|' read -r model genflags sharding budgets <<<"$entry"
  # shellcheck disable=SC2086
  "$gen" --preset="$model" --mode=train $genflags -o "$out/$model.mlir"
  for budget in $budgets; do
    for solver in milp dp greedy; do
      report="$out/$model-$budget-$solver.json"
      timing="$out/$model-$budget-$solver.timing"
      status=0
      # shellcheck disable=SC2086
      "$opt" "$out/$model.mlir" --fuse --target=h100-sxm $sharding \
        --budget="${budget}GB" --remat-solver="$solver" \
        --remat-time-limit="$limit" --report="$report" -o /dev/null \
        --mlir-timing --mlir-timing-display=list 2>"$timing" || status=$?
      python3 "$root/bench/remat/table.py" record "$model" "$budget" "$solver" \
        "$status" "$report" "$timing" >>"$out/results.jsonl"
      rm -f "$report"
    done
  done
done
python3 "$root/bench/remat/table.py" table "$out/results.jsonl"
