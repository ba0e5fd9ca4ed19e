#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# ptxas-check.sh PTXAS PTX_FILE ARCH: the hand-written PTX must assemble;
# skipped (77) where ptxas is missing.
if [ -z "$1" ] || [ ! -x "$1" ]; then
  echo "SKIP: ptxas not found"
  exit 77
fi
exec "$1" -arch="$3" "$2" -o /dev/null
