#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device lease of the GPU benchmark, packed for the device tool's limits
# (at most 8 files come back from $OUT, none more than 2 folders down):
#   1. bench/gpu/run.sh into $WORK (default /tmp/memwall-gpu)
#   2. compute-sanitizer memcheck on up to SANITIZE_MAX (default 3) bundles
#      whose memwall-run failed, one warm-up iteration, no --check, each
#      limited to SANITIZE_TIMEOUT_S (default 60), logs beside run.sh's
#   3. EXTRA (a command, optional) with WORK exported, e.g. ncu or the
#      calibration, writing under $WORK
#   4. $OUT/results.tgz (everything under $WORK), and $OUT/table.md and
#      $OUT/summary.txt for reading at once
# Exit status: run.sh's.
#   OUT=... bench/gpu/session.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
OUT="${OUT:?OUT (the folder that comes back) is required}"
export WORK="${WORK:-/tmp/memwall-gpu}"
build="${MEMWALL_RT_BUILD:-build-rt}"
rm -rf "$WORK"
mkdir -p "$WORK" "$OUT"
SECONDS=0

OUT="$WORK" bench/gpu/run.sh 2>&1 | tee "$WORK/run.log"
status=${PIPESTATUS[0]}

sanitized=0
if command -v compute-sanitizer >/dev/null 2>&1 && [ -f "$WORK/memwall/exit_codes.txt" ]; then
  while read -r name rc; do
    case "$name" in \#*) continue ;; esac
    [ "$rc" = 0 ] && continue
    [ "$rc" = 3 ] && continue
    [ "$sanitized" -lt "${SANITIZE_MAX:-3}" ] || break
    sanitized=$((sanitized + 1))
    echo "[session.sh ${SECONDS}s] compute-sanitizer memcheck $name (exit $rc)"
    timeout "${SANITIZE_TIMEOUT_S:-60}" compute-sanitizer --tool memcheck \
      --print-limit 20 "$build/bin/memwall-run" "bench/gpu/bundles/$name" \
      --inputs=random --iters=1 > "$WORK/memwall/$name.memcheck.log" 2>&1
    echo "  exit $? ($(grep -c 'Invalid\|Error' "$WORK/memwall/$name.memcheck.log") error lines)"
  done < "$WORK/memwall/exit_codes.txt"
fi

if [ -n "${EXTRA:-}" ]; then
  echo "[session.sh ${SECONDS}s] EXTRA: $EXTRA"
  bash -c "$EXTRA" > "$WORK/extra.log" 2>&1
  echo "  exit $?"
  tail -n 40 "$WORK/extra.log"
fi

cp -f "$WORK/table.md" "$WORK/summary.txt" "$OUT/" 2>/dev/null
tar czf "$OUT/results.tgz" -C "$WORK" .
echo "[session.sh ${SECONDS}s] $(du -h "$OUT/results.tgz" | cut -f1) in $OUT/results.tgz"
exit "$status"
