#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The one command of the GPU benchmark, run on the GPU machine from anywhere
# in the repository (no LLVM/MLIR needed there; the bundles were compiled on
# the development machine by bench/gpu/compile_bundles.sh):
#   1. builds the runtime alone (build-rt, -DMEMWALL_RUNTIME_ONLY=ON, Release)
#   2. ctest --test-dir build-rt -L gpu --output-on-failure
#   3. memwall-run BUNDLE --inputs=random --check --iters=50 --report=... for
#      every bundle in bench/gpu/bundles (a failure is recorded, not fatal),
#      those matching PRIORITY first; the bundles named in NO_CHECK (default:
#      the three large attention workloads and the large attention backward,
#      whose O(S^2) double-precision CPU reference would take minutes, and
#      the Llama-2-7B attention projections, which attn_proj_check_* checks
#      at a small size), and those whose GEMMs do more than CHECK_MAX_GFLOP
#      (the 8192^3 and 16384x4096x4096 GEMMs, the 16384x4096 seed, the
#      Llama-2-7B MLP: their reference takes half a minute each; the same
#      kernels are checked at smaller sizes) run without --check; once MEMWALL_BUDGET_S has passed
#      the rest are skipped (exit code 125), so that PyTorch gets its time
#   4. bench/gpu/pytorch_bench.py (PyTorch eager and torch.compile; every
#      SDPA backend and a naive matmul-softmax-matmul for attention)
#   5. bench/gpu/make_table.py -> $OUT/table.md, also printed
# Everything goes to $OUT (default bench/gpu/out). Exit status 0 when the
# build, the gpu tests, every memwall-run and the PyTorch script succeeded.
#   bench/gpu/run.sh
# Environment: OUT, MEMWALL_RT_BUILD (default build-rt), ITERS (default 50),
# PYTHON (default python3), DEADLINE_S (default 540: torch.compile runs are
# skipped, and PyTorch stopped, so that the whole run ends by then),
# NO_CHECK (space-separated bundle names timed without --check; empty:
# check every bundle), RUN_TIMEOUT_S (default 300: one memwall-run's limit),
# DRY_RUN (non-empty: print the plan, each bundle in order with the --check
# it would get, and run nothing: no GPU needed),
# CHECK_MAX_GFLOP (default 300; empty: check whatever the GEMMs' size),
# PRIORITY (space-separated bundle-name globs run first, in that order;
# default: the generated GEMMs against cuBLASLt, the seed workloads, fp8,
# then the MLPs), MEMWALL_BUDGET_S (default DEADLINE_S - 180: seconds after
# which no further bundle starts),
# MAX_AUTOTUNE_BUDGET (default 0: seconds of the PyTorch run during which the
# GEMM workloads are also timed under torch.compile max-autotune, whose
# autotuning takes minutes a workload; give it a session with device time
# to spare).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
OUT="${OUT:-$root/bench/gpu/out}"
build="${MEMWALL_RT_BUILD:-build-rt}"
iters="${ITERS:-50}"
python="${PYTHON:-python3}"
deadline="${DEADLINE_S:-540}"
run_timeout="${RUN_TIMEOUT_S:-300}"
no_check="${NO_CHECK-attention_b4_h32_s4096_d128_bf16 attention_grad_b16_h16_s1024_d64_causal_bf16 attention_b4_h32_s4096_d128_causal_bf16 attention_b1_h32_s16384_d128_causal_bf16 attn_proj_llama2_7b_2048_bf16 attn_proj_llama2_7b_2048_bf16.memwall attn_proj_llama2_7b_2048_bf16.cublaslt attn_proj_llama2_7b_2048_bf16.mmasync attn_proj_llama2_7b_2048_bf16.ws}"
check_max_gflop="${CHECK_MAX_GFLOP-300}"
memwall_budget="${MEMWALL_BUDGET_S:-$((deadline - 180))}"
priority="${PRIORITY-gemm_8192x8192x8192_bf16* memory_bound_model_* gemm_fp8_check_* gemm_fp8_* gemm_16384x4096x4096_bf16* mlp_*}"
bundles="$root/bench/gpu/bundles"
mkdir -p "$OUT/memwall"
OUT="$(cd "$OUT" && pwd)"
SECONDS=0
log() { echo "[run.sh ${SECONDS}s] $*"; }
status=0

. "$root/bench/gpu/common.sh"
find_bundles "$bundles" bench/gpu/compile_bundles.sh || exit 1
dry_run="${DRY_RUN:-}"
ctest_rc=0
if [ -z "$dry_run" ]; then
  record_device
  build_runtime "$build" || exit 1
  log "ctest -L gpu -> $OUT/ctest-gpu.log"
  ctest --test-dir "$build" -L gpu --output-on-failure > "$OUT/ctest-gpu.log" 2>&1 || ctest_rc=$?
  tail -n 3 "$OUT/ctest-gpu.log"
  [ "$ctest_rc" -eq 0 ] || status=1
fi

# Bundles with all_reduce steps load NCCL: PyTorch's wheel has it where the
# loader's path does not (runtime/test/nccl-gpu-test.sh does the same).
if [ -z "${MEMWALL_NCCL_LIBRARY:-}" ] &&
   ! python3 -c 'import ctypes; ctypes.CDLL("libnccl.so.2")' 2>/dev/null; then
  nccl="$(python3 -c 'import os, nvidia.nccl as n
print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null || true)"
  [ -z "$nccl" ] || [ ! -f "$nccl" ] || export MEMWALL_NCCL_LIBRARY="$nccl"
fi

# The bundles matching PRIORITY's globs first, in that order, then the rest.
ordered=()
declare -A queued=()
for pattern in $priority; do
  for dir in "${bundle_dirs[@]}"; do
    name="$(basename "$dir")"
    # shellcheck disable=SC2053 # the glob is meant to match
    if [[ $name == $pattern ]] && [ -z "${queued[$name]:-}" ]; then
      ordered+=("$dir")
      queued[$name]=1
    fi
  done
done
for dir in "${bundle_dirs[@]}"; do
  [ -n "${queued[$(basename "$dir")]:-}" ] || ordered+=("$dir")
done

# GFLOP of the matmuls of a bundle's reference graph, which --check
# evaluates in double on the CPU (make_table.py's count).
gemm_gflop() { # bundle-dir
  "$python" -c 'import json, sys
sys.dont_write_bytecode = True
sys.path.insert(0, "bench/gpu")
from make_table import reference_matmul_flops
print(int(reference_matmul_flops(json.load(open(sys.argv[1]))) / 1e9))' "$1/manifest.json"
}

codes="$OUT/memwall/exit_codes.txt"
echo "# bundle memwall-run-exit-code (0 ok, 1 error, 3 no device, 4 check failed, 124 timeout, 125 skipped: MEMWALL_BUDGET_S spent)" > "$codes"
for dir in "${ordered[@]}"; do
  name="$(basename "$dir")"
  rm -f "$OUT/memwall/$name.json"
  if [ "$SECONDS" -ge "$memwall_budget" ]; then
    echo "$name 125" >> "$codes"
    log "memwall-run $name: skipped (MEMWALL_BUDGET_S=${memwall_budget}s spent)"
    continue
  fi
  rc=0
  check=--check
  case " $no_check " in
    *" $name "*) check= ;;
  esac
  if [ -n "$check" ] && [ -n "$check_max_gflop" ] &&
     [ "$(gemm_gflop "$dir")" -gt "$check_max_gflop" ]; then
    check=
  fi
  # bf16 attention rounds P before P·V (as FlashAttention-2 does): rows that
  # see few keys land a few ulps from the fp64 reference (docs/attention.md).
  # On an H100, SDPA's own flash and cuDNN kernels land 0.0277 from it by the
  # same measure on B1 H8 S1024 D64 causal (bench/gpu/attention_error.py).
  case "$name" in
    attention_*) [ -n "$check" ] && check="--check --rtol=0.03" ;;
  esac
  if [ -n "$dry_run" ]; then
    echo "plan: $name ${check:-(not checked)}"
    continue
  fi
  timeout "$run_timeout" "$build/bin/memwall-run" "$dir" --inputs=random $check \
    --iters="$iters" --report="$OUT/memwall/$name.json" \
    > "$OUT/memwall/$name.log" 2>&1 || rc=$?
  echo "$name $rc" >> "$codes"
  log "memwall-run $name: exit $rc${check:+ (checked)}"
  [ "$rc" -eq 0 ] || status=1
done

[ -z "$dry_run" ] || exit 0

budget=$((deadline - 60 - SECONDS))
[ "$budget" -ge 30 ] || budget=30
limit=$((deadline - 15 - SECONDS))
[ "$limit" -ge 60 ] || limit=60
log "PyTorch (torch.compile budget ${budget}s, limit ${limit}s) -> $OUT/pytorch.json"
torch_rc=0
timeout "$limit" "$python" bench/gpu/pytorch_bench.py --out "$OUT/pytorch.json" \
  --iters="$iters" --time-budget="$budget" \
  --max-autotune-budget="${MAX_AUTOTUNE_BUDGET:-0}" > "$OUT/pytorch.log" 2>&1 || torch_rc=$?
grep -v '^ ' "$OUT/pytorch.log" | grep -E 'device copy|eager|error|Error' | head -n 40 || true
log "PyTorch: exit $torch_rc"
[ "$torch_rc" -eq 0 ] || status=1

"$python" bench/gpu/make_table.py --memwall-dir "$OUT/memwall" \
  --pytorch "$OUT/pytorch.json" --bundles "$bundles" --exit-codes "$codes" \
  --device-file "$OUT/device.txt" --command "bench/gpu/run.sh" \
  --out "$OUT/table.md"
{
  echo "build: ok"
  echo "ctest -L gpu: exit $ctest_rc"
  grep -v '^#' "$codes" | sed 's/^/memwall-run /'
  echo "pytorch_bench.py: exit $torch_rc"
  echo "total: ${SECONDS}s"
} > "$OUT/summary.txt"
cat "$OUT/table.md"
echo
cat "$OUT/summary.txt"
log "done: $OUT/table.md"
exit "$status"
