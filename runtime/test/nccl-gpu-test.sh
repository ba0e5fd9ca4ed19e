#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# nccl-gpu-test.sh COMMAND...: gpu-test.sh for a bundle with all_reduce
# steps. memwall-run loads $MEMWALL_NCCL_LIBRARY, else libnccl.so.2 from the
# loader's path; where neither has one, PyTorch's wheel (nvidia-nccl) is
# tried; without any NCCL the test is skipped (77).
here=$(dirname "$0")
if [ -z "${MEMWALL_NCCL_LIBRARY:-}" ] && command -v python3 >/dev/null &&
   ! python3 -c 'import ctypes; ctypes.CDLL("libnccl.so.2")' 2>/dev/null; then
  wheel=$(python3 -c 'import os, nvidia.nccl as n
print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  if [ -z "$wheel" ] || [ ! -f "$wheel" ]; then
    echo "SKIP: no libnccl.so.2 (set MEMWALL_NCCL_LIBRARY)"
    exit 77
  fi
  export MEMWALL_NCCL_LIBRARY=$wheel
fi
exec "$here/gpu-test.sh" "$@"
