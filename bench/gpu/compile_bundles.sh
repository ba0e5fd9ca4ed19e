#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Compiles the GPU benchmark's workloads into bundles (needs MLIR: run it on
# the development machine, not the GPU machine). Sources:
#   bench/gpu/ops/*.mlir, examples/memory_bound_model_*.mlir,
#   examples/gpt2_block_no_attention.mlir
# Each becomes bench/gpu/bundles/<name>/ (manifest.json + kernels.ptx) for
# --target=h100-sxm. GEMM workloads (gemm_*, mlp_*, the seed models) are
# also compiled with --gemm=memwall and --gemm=cublaslt into
# <name>.memwall/ and <name>.cublaslt/, so one run times memwall's generated
# GEMM (wgmma on sm_90a) beside cuBLASLt, the mma.sync kernel into
# <name>.mmasync/ and the warp-specialized wgmma kernel into <name>.ws/. The bundles are git-ignored build outputs (never
# committed): carry them to the GPU machine (device run carry=
# ["bench/gpu/bundles"]); bench/gpu/run.sh runs them there.
#   bench/gpu/compile_bundles.sh [build-dir]     (default: build)
# Environment: BUNDLES_DIR (default bench/gpu/bundles), MEMWALL_TARGET_FILE
# (a calibration file: compile with --target-file instead of the built-in
# h100-sxm; bench/gpu/prediction_ratios.py compares the two).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-build}"
case "$build" in
  /*) ;;
  *) build="$root/$build" ;;
esac
compile="$build/bin/memwall-compile"
if [ ! -x "$compile" ]; then
  echo "compile_bundles.sh: error: no $compile (build the compiler first)" >&2
  exit 1
fi

bundles="${BUNDLES_DIR:-$root/bench/gpu/bundles}"
target=(--target=h100-sxm)
[ -z "${MEMWALL_TARGET_FILE:-}" ] || target=(--target-file="$MEMWALL_TARGET_FILE")
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
rm -rf "$bundles"
mkdir -p "$bundles"

sources=("$root"/bench/gpu/ops/*.mlir "$root"/examples/memory_bound_model_*.mlir
         "$root/examples/gpt2_block_no_attention.mlir")
compile_one() { # source bundle-name [flags...]
  local src=$1 name=$2
  shift 2
  "$compile" "$src" "${target[@]}" "$@" -o "$bundles/$name"
  steps="$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(len(m["steps"]), "steps,", "arena", m["arena_bytes"], "bytes")' "$bundles/$name/manifest.json")"
  printf '%-50s %s\n' "$name" "$steps"
}
for src in "${sources[@]}"; do
  name="$(basename "$src" .mlir)"
  compile_one "$src" "$name"
  case "$name" in
    gemm_w8_*|gemm_w4_*)
      # Weight-only int8/int4 runs on memwall's mma.sync kernel whatever
      # the flags (cuBLASLt takes no dequantizing prologue): one bundle.
      ;;
    gemm_nf4_*)
      # A dequantize kernel, then cuBLASLt (memwall-fuse's choice at 2048
      # rows); <name>.prologue/ dequantizes in memwall's GEMM main loop
      # instead, to time the two side by side.
      compile_one "$src" "$name.prologue" --dequantize=prologue ;;
    gemm_fp8_*)
      # fp8 runs on memwall's wgmma kernels only (no fp8 cuBLASLt path, no
      # mma.sync fp8): the plain bundle and the warp-specialized one, both
      # promoting each k-step into f32, and <name>.fastacc/ accumulating
      # the whole K in the tensor cores (memwall.gemm_fp8_fast_accumulation).
      sed -E 's/^module @([A-Za-z0-9_]+) \{/module @\1 attributes {memwall.gemm_warp_specialized} {/' \
        "$src" > "$tmp/$name.ws.mlir"
      compile_one "$tmp/$name.ws.mlir" "$name.ws"
      sed -E 's/^module @([A-Za-z0-9_]+) \{/module @\1 attributes {memwall.gemm_fp8_fast_accumulation} {/' \
        "$src" > "$tmp/$name.fastacc.mlir"
      compile_one "$tmp/$name.fastacc.mlir" "$name.fastacc" ;;
    gemm_*|mlp_*|attn_proj_*|memory_bound_model_*_bf16)
      compile_one "$src" "$name.memwall" --gemm=memwall
      compile_one "$src" "$name.cublaslt" --gemm=cublaslt
      # --gemm=memwall runs the sm_90a wgmma + TMA kernel where it applies;
      # <name>.mmasync/ keeps the mma.sync kernel (memwall.gemm_wgmma =
      # false) to time the two side by side.
      sed -E 's/^module @([A-Za-z0-9_]+) \{/module @\1 attributes {memwall.gemm_wgmma = false} {/' \
        "$src" > "$tmp/$name.mmasync.mlir"
      grep -q 'memwall.gemm_wgmma' "$tmp/$name.mmasync.mlir" || {
        echo "compile_bundles.sh: error: no 'module @NAME {' line in $src" >&2
        exit 1
      }
      compile_one "$tmp/$name.mmasync.mlir" "$name.mmasync" --gemm=memwall
      # <name>.ws/: the warp-specialized wgmma kernel (a TMA producer
      # warpgroup, two consumers; opt-in until it has run on an H100).
      sed -E 's/^module @([A-Za-z0-9_]+) \{/module @\1 attributes {memwall.gemm_warp_specialized} {/' \
        "$src" > "$tmp/$name.ws.mlir"
      compile_one "$tmp/$name.ws.mlir" "$name.ws" --gemm=memwall ;;
  esac
done

# A per-device program (memwall-partition, docs/parallelism.md) over one
# device: a Llama layer whose two all-reduces run through NCCL on one rank.
"$build/bin/memwall-gen" --family=llama --layers=1 --hidden=1024 --heads=8 \
  --kv-heads=4 --ffn=2816 --vocab=4096 --seq=512 --batch=2 --mode=prefill \
  -o "$tmp/llama_layer.mlir"
"$build/bin/memwall-opt" "$tmp/llama_layer.mlir" \
  --memwall-partition=tensor-parallel=1 --mlir-print-debuginfo \
  -o "$tmp/llama_layer_tp1_bf16.mlir"
compile_one "$tmp/llama_layer_tp1_bf16.mlir" llama_layer_tp1_bf16
