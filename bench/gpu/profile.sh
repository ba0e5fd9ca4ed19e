#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Nsight Compute on chosen kernels of chosen bundles (GPU machine): one
# warm-up-free memwall-run each, the first launch of the kernel matching
# REGEX, the sections that say where time goes (speed of light, occupancy,
# memory workload, warp stall reasons, launch), clocks as found
# (--clock-control none: the device's clocks are not ours to pin).
#   bench/gpu/profile.sh OUTDIR BUNDLE:REGEX...
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: profile.sh OUTDIR BUNDLE:REGEX...}"
shift
build="${MEMWALL_RT_BUILD:-$root/build-rt}"
mkdir -p "$out"
status=0
for spec in "$@"; do
  bundle="${spec%%:*}" regex="${spec#*:}"
  log="$out/ncu-$bundle.txt"
  timeout "${NCU_TIMEOUT_S:-120}" ncu --clock-control none \
    --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section LaunchStats --section SchedulerStats \
    -k "regex:$regex" --launch-count 1 \
    "$build/bin/memwall-run" "$root/bench/gpu/bundles/$bundle" --iters=1 \
    > "$log" 2>&1 || status=1
  echo "ncu $bundle ($regex): $(grep -E 'Duration|DRAM Throughput|Achieved Occupancy|Compute \(SM\) Throughput' "$log" | tr -s ' ' | tr '\n' ';')"
done
exit "$status"
