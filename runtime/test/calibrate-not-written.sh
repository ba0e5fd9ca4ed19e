#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# calibrate-not-written.sh [--absent KEY] FILE COMMAND...: runs COMMAND and
# passes its exit code on. When COMMAND fails, FILE must not exist (no
# half-written output); with --absent, when it succeeds, FILE must exist and
# lack KEY.
set -u
absent=""
if [ "$1" = "--absent" ]; then
  absent=$2
  shift 2
fi
file=$1
shift
rm -f "$file"
"$@"
status=$?
if [ "$status" -ne 0 ] && [ -e "$file" ]; then
  echo "FAIL: $file was written although the command failed" >&2
  exit 1
fi
if [ "$status" -eq 0 ] && [ -n "$absent" ]; then
  cat "$file"
  if grep -q -- "\"$absent\"" "$file"; then
    echo "FAIL: $file has $absent" >&2
    exit 1
  fi
fi
exit "$status"
