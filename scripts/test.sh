#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Installs dependencies, builds, and runs every test (lit + GoogleTest) through
# ctest. GPU tests (label gpu) skip with exit code 77 on machines without one.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${MEMWALL_BUILD_DIR:-$root/build}"

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
