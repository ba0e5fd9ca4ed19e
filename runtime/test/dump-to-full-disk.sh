#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# dump-to-full-disk.sh MEMWALL_RUN BUNDLE OUT_DIR: --dump-outputs where a
# tensor file is a link to /dev/full (a full disk) is one error naming the
# file and exit 1; the link stays a link, /dev/full a device, and no
# temporary file is left.
set -u
run=$1 bundle=$2 out=$3
rm -rf "$out" && mkdir -p "$out" && ln -s /dev/full "$out/sum.bin"
stderr_file=$(mktemp)
trap 'rm -f "$stderr_file"' EXIT
"$run" "$bundle" --reference-only --dump-outputs="$out" >/dev/null \
  2>"$stderr_file"
status=$?
cat "$stderr_file"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$status" -eq 1 ] || fail "exit code $status, expected 1"
[ "$(wc -l <"$stderr_file")" -eq 1 ] || fail "expected one line on stderr"
grep -Fq "cannot write '$out/sum.bin': No space left on device" \
  "$stderr_file" || fail "the error must name $out/sum.bin"
[ -L "$out/sum.bin" ] || fail "$out/sum.bin is no longer a symlink"
[ -c /dev/full ] || fail "/dev/full is no longer a character device"
if ls -A "$out" | grep -q -- '\.tmp-'; then
  fail "temporary file left in $out"
fi
echo "PASS"
