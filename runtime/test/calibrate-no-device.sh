#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# calibrate-no-device.sh MEMWALL_RUN FILE: without a usable driver
# --calibrate exits 3 with one line and writes no file. Where it finds a
# device it measures instead: nothing to test (77).
set -u
rm -f "$2"
stderr_file=$(mktemp)
trap 'rm -f "$stderr_file"' EXIT
"$1" --calibrate="$2" >/dev/null 2>"$stderr_file"
status=$?
cat "$stderr_file"
if [ "$status" -eq 0 ]; then
  echo "SKIP: a CUDA device is present"
  exit 77
fi
[ "$status" -eq 3 ] || { echo "FAIL: exit code $status, expected 3" >&2; exit 1; }
if [ "$(wc -l <"$stderr_file")" -ne 1 ] ||
   ! grep -Eq '^memwall-run: error: no CUDA driver/device: .+; --calibrate measures a GPU' "$stderr_file"; then
  echo "FAIL: expected one line 'memwall-run: error: no CUDA driver/device: ...'" >&2
  exit 1
fi
[ ! -e "$2" ] || { echo "FAIL: $2 was written" >&2; exit 1; }
exit 0
