#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# gpu-report.sh MEMWALL_RUN BUNDLE REPORT: --check --report writes a JSON
# report whose check passed; exit 3 (no device) becomes 77.
set -u
rm -f "$3"
"$1" "$2" --check --iters=3 --report="$3"
status=$?
if [ "$status" -eq 3 ]; then
  echo "SKIP: no CUDA driver or device"
  exit 77
fi
[ "$status" -eq 0 ] || exit "$status"
cat "$3"
for key in '"bundle"' '"device"' '"steps"' '"measured_time_s"' \
  '"workspace_bytes": 33554432' '"measured_peak_bytes"' '"passed": true'; do
  grep -q -- "$key" "$3" || { echo "FAIL: report lacks $key" >&2; exit 1; }
done
