#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# dump-outputs.sh MEMWALL_RUN BUNDLE INPUTS EXPECTED_DIR OUT_DIR [FLAGS...]:
# --dump-outputs writes every output as OUT_DIR/<name>.bin (compared byte for
# byte with EXPECTED_DIR) and OUT_DIR/outputs.json, itself a valid inputs
# file.
set -eu
run=$1 bundle=$2 inputs=$3 expected=$4 out=$5
shift 5
rm -rf "$out"
"$run" "$bundle" --inputs="$inputs" --dump-outputs="$out" "$@" >/dev/null
for file in "$expected"/*.bin; do
  cmp "$file" "$out/$(basename "$file")"
done
grep -q '"file": "sum.bin"' "$out/outputs.json"
echo "PASS"
