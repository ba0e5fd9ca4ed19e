#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# no-device.sh MEMWALL_RUN BUNDLE [ENV_DIR]: on a machine without a usable
# driver memwall-run must exit 3 with one line naming the reason and where to
# go without a GPU (memwall-simulate BUNDLE, --reference-only). Where it finds
# a device it runs normally instead: then there is nothing to test (77).
set -u
stderr_file=$(mktemp)
trap 'rm -f "$stderr_file"' EXIT
"$1" "$2" --iters=1 >/dev/null 2>"$stderr_file"
status=$?
cat "$stderr_file"
if [ "$status" -eq 0 ]; then
  echo "SKIP: a CUDA device is present"
  exit 77
fi
if [ "$status" -ne 3 ]; then
  echo "FAIL: exit code $status, expected 3" >&2
  exit 1
fi
if [ "$(wc -l <"$stderr_file")" -ne 1 ] ||
   ! grep -Eq '^memwall-run: error: no CUDA driver/device: .+' "$stderr_file"; then
  echo "FAIL: expected one line 'memwall-run: error: no CUDA driver/device: ...'" >&2
  exit 1
fi
if ! grep -Fq "'memwall-simulate $2'" "$stderr_file" ||
   ! grep -Fq "'memwall-run $2 --reference-only'" "$stderr_file"; then
  echo "FAIL: the message must point to 'memwall-simulate $2' and" \
    "'memwall-run $2 --reference-only'" >&2
  exit 1
fi
exit 0
