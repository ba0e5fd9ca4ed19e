#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# fake-report.sh MEMWALL_RUN BUNDLE REPORT: with the fake driver, --check
# --report writes the JSON report (atomically) with every documented field.
set -eu
rm -f "$3"
"$1" "$2" --check --iters=2 --report="$3" >/dev/null
cat "$3"
for key in '"bundle": "' '"device": "Fake CUDA device (sm_90)"' \
  '"iters": 2' '"name": "add_0"' '"kind": "kernel"' '"ops": \[' \
  '"predicted_time_s": 2e-06' '"measured_time_s": 0.0005' '"total": {' \
  '"measured_time_s": 0.001' '"predicted_peak_bytes": 1024' \
  '"arena_bytes": 1024' '"workspace_bytes": 0' '"measured_peak_bytes": 1024' \
  '"check": {' '"passed": true' '"max_abs_error": 0' '"tolerance": 1e-05' \
  '"reference_rel_error": 0' '"bound": 1e-05' '"step": "add_0"' \
  '"buffer": "t"'; do
  grep -q -- "$key" "$3" || { echo "FAIL: report lacks $key" >&2; exit 1; }
done
if ls -A "$(dirname "$3")" | grep -q -- "^\.$(basename "$3")\.tmp-"; then
  echo "FAIL: temporary report file left behind" >&2
  exit 1
fi
