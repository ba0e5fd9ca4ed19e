// REQUIRES: memwall-plugin
// A plugin built for another MLIR/LLVM release is refused with a message
// that says so, as a dialect and as a pass plugin; mlir-opt then fails
// cleanly (`not` fails on a crash) instead of running mismatched code.

// RUN: not mlir-opt %s --load-dialect-plugin=%memwall_wrong_release_plugin 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DIALECT
// DIALECT: error: the memwall dialect plugin was built for MLIR/LLVM {{[0-9]+\.[0-9]+}} but this tool uses MLIR/LLVM {{[0-9.]+}}; refusing to load it
// DIALECT: Failed to load dialect plugin
// DIALECT: Dialect `memwall' not found

// RUN: not mlir-opt %s --load-pass-plugin=%memwall_wrong_release_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-default)' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PASS
// PASS: error: the memwall pass plugin was built for MLIR/LLVM {{[0-9]+\.[0-9]+}} but this tool uses MLIR/LLVM {{[0-9.]+}}; refusing to load it
// PASS: Failed to load passes from
// PASS-NOT: Stack dump

// The matching build loads (the check above is about the release alone).
// RUN: mlir-opt %s --load-dialect-plugin=%memwall_plugin -o /dev/null

func.func @f(%r: tensor<4xf32>) {
  %0 = memwall.relu %r : tensor<4xf32>
  return
}
