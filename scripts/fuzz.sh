#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Long fuzzing runs with libFuzzer (docs/fuzzing.md):
#
#   scripts/fuzz.sh                              # every target, 1M runs each
#   scripts/fuzz.sh memwall-ir-fuzzer -runs=10000000 -jobs=2
#
# Builds ${MEMWALL_FUZZ_BUILD_DIR:-build-fuzz} with clang-22, coverage
# instrumentation and ASan/UBSan, then runs each target from its seed corpus
# (test/Fuzz/corpus/<target> and the examples/tests its CMake lists). New
# inputs go to build-fuzz/fuzz-corpus/<target>; crashes to
# build-fuzz/fuzz-artifacts/<target>/ — minimize one with
# `build-fuzz/bin/<target> -minimize_crash=1 -runs=100000 CRASH`, fix the bug,
# and commit the minimized file to test/Fuzz/corpus/<target>/ as its
# regression test.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${MEMWALL_FUZZ_BUILD_DIR:-$root/build-fuzz}"
targets=(memwall-ir-fuzzer memwall-compile-fuzzer memwall-hfconfig-fuzzer
  memwall-target-fuzzer memwall-bundle-fuzzer)

selected=()
while [ $# -gt 0 ] && [[ "$1" != -* ]]; do
  selected+=("$1")
  shift
done
[ ${#selected[@]} -eq 0 ] && selected=("${targets[@]}")
libfuzzer_flags=("$@")
[ ${#libfuzzer_flags[@]} -eq 0 ] && libfuzzer_flags=(-runs=1000000)

missing=()
for package in clang-22 libclang-rt-22-dev; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
    grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "memwall: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}"
fi

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_CXX_FLAGS=-g \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DLLVM_USE_LINKER=lld \
    -DMEMWALL_ENABLE_FUZZERS=ON
fi
cmake --build "$build" --target "${selected[@]}"

# libMLIR.so is not instrumented: LLVM's allocators poison memory it then
# touches (see MEMWALL_ENABLE_SANITIZERS in CMakeLists.txt).
export ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
for target in "${selected[@]}"; do
  corpus="$build/fuzz-corpus/$target"
  seeds="$build/fuzz-seeds/$target"
  artifacts="$build/fuzz-artifacts/$target"
  mkdir -p "$corpus" "$seeds" "$artifacts"
  # libFuzzer takes corpora as directories: gather the listed seed files.
  while IFS= read -r seed; do
    [ -n "$seed" ] && cp -f "$seed" "$seeds/"
  done < "$build/fuzz/$target.seeds"
  committed="$root/test/Fuzz/corpus/$target"
  [ -d "$committed" ] || committed=""
  echo "== $target ${libfuzzer_flags[*]}"
  "$build/bin/$target" -timeout=20 -rss_limit_mb=4096 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "${libfuzzer_flags[@]}" "$corpus" "$seeds" $committed
done
