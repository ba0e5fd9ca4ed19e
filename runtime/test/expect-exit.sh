#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# expect-exit.sh CODE [-p PATTERN]... [-s] -- COMMAND...
# Runs COMMAND and passes when it exits with CODE and its combined stdout and
# stderr match every extended regex PATTERN (line by line, like grep -E).
# -s also requires stderr to be exactly one line (memwall-run's contract for
# errors).
set -u
expected=$1
shift
patterns=()
single_line=0
while [ $# -gt 0 ]; do
  case $1 in
  -p) patterns+=("$2"); shift 2 ;;
  -s) single_line=1; shift ;;
  --) shift; break ;;
  *) echo "expect-exit.sh: bad argument $1" >&2; exit 2 ;;
  esac
done
stdout_file=$(mktemp)
stderr_file=$(mktemp)
trap 'rm -f "$stdout_file" "$stderr_file"' EXIT
"$@" >"$stdout_file" 2>"$stderr_file"
status=$?
cat "$stdout_file" "$stderr_file"
if [ "$status" -ne "$expected" ]; then
  echo "FAIL: exit code $status, expected $expected" >&2
  exit 1
fi
for pattern in ${patterns[@]+"${patterns[@]}"}; do
  if ! cat "$stdout_file" "$stderr_file" | grep -Eq -- "$pattern"; then
    echo "FAIL: output does not match: $pattern" >&2
    exit 1
  fi
done
if [ "$single_line" -eq 1 ] && [ "$(wc -l <"$stderr_file")" -ne 1 ]; then
  echo "FAIL: expected exactly one line on stderr" >&2
  exit 1
fi
exit 0
