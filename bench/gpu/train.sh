#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The training benchmark, run on the GPU machine (no LLVM/MLIR there; the
# bundles were compiled on the development machine by
# bench/gpu/compile_train_bundles.sh and carried in bench/gpu/train-bundles):
#   1. builds the runtime alone (build-rt, as bench/gpu/run.sh)
#   2. memwall-run BUNDLE --inputs=random --iters=ITERS --report=... for every
#      training bundle: ITERS training steps after one warm-up step, the
#      weights and optimizer state updated in place in the arena from step to
#      step; no --check (the reference of a GPT-2-medium step takes hours on
#      the CPU: memwall-simulate checks the tiny steps instead)
#   3. bench/gpu/train_bench.py: PyTorch eager, torch.compile, per-block
#      checkpointing and torch.compile with activation_memory_budget
#   4. bench/gpu/train_table.py -> $OUT/train.md, also printed
#   bench/gpu/train.sh
# Environment: OUT (default bench/gpu/out-train), MEMWALL_RT_BUILD (default
# build-rt), ITERS (default 10), PYTHON (default python3), RUN_TIMEOUT_S
# (default 240: one memwall-run's limit), TORCH_TIMEOUT_S (default 420).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
OUT="${OUT:-$root/bench/gpu/out-train}"
build="${MEMWALL_RT_BUILD:-build-rt}"
iters="${ITERS:-10}"
python="${PYTHON:-python3}"
bundles="$root/bench/gpu/train-bundles"
mkdir -p "$OUT/memwall"
OUT="$(cd "$OUT" && pwd)"
SECONDS=0
log() { echo "[train.sh ${SECONDS}s] $*"; }
status=0

. "$root/bench/gpu/common.sh"
find_bundles "$bundles" bench/gpu/compile_train_bundles.sh || exit 1
record_device
if [ ! -x "$build/bin/memwall-run" ]; then
  build_runtime "$build" || exit 1
fi

codes="$OUT/memwall/exit_codes.txt"
echo "# bundle memwall-run-exit-code (0 ok, 1 error, 3 no device, 124 timeout)" > "$codes"
for dir in "${bundle_dirs[@]}"; do
  name="$(basename "$dir")"
  rc=0
  timeout "${RUN_TIMEOUT_S:-240}" "$build/bin/memwall-run" "$dir" --inputs=random \
    --iters="$iters" --report="$OUT/memwall/$name.json" \
    > "$OUT/memwall/$name.log" 2>&1 || rc=$?
  echo "$name $rc" >> "$codes"
  log "memwall-run $name: exit $rc"
  [ "$rc" -eq 0 ] || status=1
done

log "PyTorch -> $OUT/train_pytorch.json"
torch_rc=0
timeout "${TORCH_TIMEOUT_S:-420}" "$python" bench/gpu/train_bench.py \
  --out "$OUT/train_pytorch.json" --iters="$iters" > "$OUT/train_pytorch.log" 2>&1 || torch_rc=$?
grep -E '^(stack|step) ' "$OUT/train_pytorch.log" || true
log "PyTorch: exit $torch_rc"
[ "$torch_rc" -eq 0 ] || status=1

"$python" bench/gpu/train_table.py --memwall-dir "$OUT/memwall" \
  --pytorch "$OUT/train_pytorch.json" --bundles "$bundles" \
  --device-file "$OUT/device.txt" --out "$OUT/train.md"
cat "$OUT/train.md"
log "done: $OUT/train.md"
exit "$status"
