#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# stub-driver.sh MEMWALL_RUN BUNDLE STUB_LIBCUDA: makes the CUDA toolkit's stub
# libcuda.so reachable as libcuda.so.1 (as on a CI machine with the toolkit
# but no driver): cuInit fails with CUDA_ERROR_STUB_LIBRARY (34), which must
# be exit 3 with one clear line, not a crash.
set -u
if [ ! -f "$3" ]; then
  echo "SKIP: no stub library at $3"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ln -s "$3" "$dir/libcuda.so.1"
LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$(dirname "$0")/expect-exit.sh" 3 -s \
  -p '^memwall-run: error: no CUDA driver/device: cuInit failed: CUDA_ERROR_STUB_LIBRARY \(34\)' \
  -- "$1" "$2"
