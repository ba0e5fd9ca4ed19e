# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# What bench/gpu/run.sh and bench/gpu/train.sh share, sourced by both after
# they set OUT (an existing directory) and define log().

# The bundle directories under $1 into the array bundle_dirs; fails, naming
# $2 (the script that compiles them), when there are none.
find_bundles() { # dir compile-script
  shopt -s nullglob
  bundle_dirs=("$1"/*/)
  shopt -u nullglob
  if [ "${#bundle_dirs[@]}" -eq 0 ]; then
    echo "error: no bundles in $1 (run $2 on a machine with MLIR)" >&2
    return 1
  fi
}

# The GPU's name and driver into $OUT/device.txt (and nvidia-smi's output
# into $OUT/nvidia-smi.txt).
record_device() {
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt" || echo "unknown (nvidia-smi failed)" > "$OUT/device.txt"
    nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true
  else
    echo "unknown (no nvidia-smi)" > "$OUT/device.txt"
  fi
  log "device: $(head -n 1 "$OUT/device.txt")"
}

# The runtime alone (no LLVM/MLIR), Release, into $1; fails with the build
# log's tail.
build_runtime() { # build-dir
  log "building $1 (runtime only) -> $OUT/build.log"
  if ! { cmake -G Ninja -S . -B "$1" -DMEMWALL_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release &&
         ninja -C "$1"; } > "$OUT/build.log" 2>&1; then
    tail -n 40 "$OUT/build.log" >&2
    echo "error: the runtime-only build failed (see $OUT/build.log)" >&2
    return 1
  fi
}
