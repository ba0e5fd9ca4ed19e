#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# gpu-test.sh COMMAND...: runs a test that needs a GPU; memwall-run's exit
# code 3 (no CUDA driver or device) becomes 77, which ctest reports as skipped.
"$@"
status=$?
if [ "$status" -eq 3 ]; then
  echo "SKIP: no CUDA driver or device"
  exit 77
fi
exit "$status"
