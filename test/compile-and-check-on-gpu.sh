#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# compile-and-check-on-gpu.sh COMPILE RUN MODEL WORKDIR [memwall-run flags]:
# compiles MODEL and runs the bundle with --check on the GPU. Without a CUDA
# driver or device memwall-run exits 3, which becomes 77 (ctest: skipped).
set -u
compile="$1" run="$2" model="$3" work="$4"
shift 4
rm -rf "$work"
mkdir -p "$(dirname "$work")"
"$compile" "$model" -o "$work" || exit 1
"$run" "$work" --check --iters=5 "$@"
status=$?
if [ "$status" -eq 3 ]; then
  echo "SKIP: no CUDA driver or device"
  exit 77
fi
exit "$status"
