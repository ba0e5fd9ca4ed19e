#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# calibrate-fake.sh MEMWALL_RUN DIR [MEMWALL_COMPILE MODEL]: with the fake
# driver (its clock runs at H100-like rates), --calibrate prints every
# measurement, writes the raw report and a target file holding exactly the
# documented keys; memwall-compile, when given, accepts the file as
# --target-file.
set -u
run=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
target=$dir/h100-measured.json report=$dir/report.json
"$run" --calibrate="$target" --calibrate-base=h100-sxm --iters=3 \
  --report="$report" >"$dir/stdout" 2>"$dir/stderr"
status=$?
cat "$dir/stdout" "$dir/stderr"
[ "$status" -eq 0 ] || { echo "FAIL: exit code $status" >&2; exit 1; }
fail() { echo "FAIL: $*" >&2; exit 1; }
for pattern in '^device: Fake CUDA device \(sm_90\), base h100-sxm$' \
  '^copy: 2800\.0 GB/s ' \
  '^8192 +8192 +8192 +bf16 +[0-9.]+ +[0-9.]+ +0\.70[0-9] +large$' \
  '^1024 +1024 +512 +f16 +[0-9.]+ +[0-9.]+ +0\.[0-9]+ +small$' \
  '^1 +4096 +4096 +bf16 .* skinny$' \
  '^gemm efficiency bf16 \(median per class\): large 0\.[0-9]+ small 0\.[0-9]+ skinny 0\.[0-9]+$' \
  '^gemm efficiency f16 ' \
  '^launch: 2\.000 us per kernel on a stream, 1\.000 us in a CUDA graph'; do
  grep -Eq -- "$pattern" "$dir/stdout" || fail "stdout does not match $pattern"
done
for key in '"name": "h100-sxm-measured"' '"base": "h100-sxm"' \
  '"calibration": "memwall-run --calibrate on Fake CUDA device, driver 13.0, 20' \
  '"memory_bandwidth_bytes_per_s": 28000' '"large": 0.7' '"small": 0.' \
  '"skinny": 0.' '"kernel_launch_s": 2e-06' '"graph_kernel_launch_s": 1e-06'; do
  grep -q -- "$key" "$target" || fail "target file lacks $key"
done
for key in '"device": "Fake CUDA device"' '"driver_version": 13000' \
  '"bytes": 1073741824' '"gemms": \[' '"dtype": "f16"' '"class": "small"' \
  '"f16_gemm_efficiency": {' '"launches": 1000'; do
  grep -q -- "$key" "$report" || fail "report lacks $key"
done
if [ $# -ge 4 ]; then
  "$3" "$4" --target-file="$target" --emit=fused >/dev/null ||
    fail "memwall-compile refused --target-file=$target"
  "$3" "$4" --target=h100-sxm --target-file="$target" --emit=fused \
    >/dev/null || fail "memwall-compile refused --target=h100-sxm with it"
fi
exit 0
