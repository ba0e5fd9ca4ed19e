#!/usr/bin/env bash
# The main job on the bundled example: installs dependencies, builds, and
# writes the roofline report of GPT-2 (batch 1, 1024 tokens) on an H100 SXM as
# a text table (stdout), JSON and SVG under ${MEMWALL_BUILD_DIR:-build}/report/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${MEMWALL_BUILD_DIR:-$root/build}"

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"

model="$root/examples/gpt2-prefill.mlir"
mkdir -p "$build/report"
for report in - "$build/report/gpt2-h100-sxm.json" "$build/report/gpt2-h100-sxm.svg"; do
  "$build/bin/memwall-opt" "$model" --target=h100-sxm --report="$report" -o /dev/null
done
echo
echo "memwall: wrote $build/report/gpt2-h100-sxm.json and $build/report/gpt2-h100-sxm.svg"
