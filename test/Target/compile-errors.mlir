// REQUIRES: cuda
// Ops codegen cannot run yet get one diagnostic each, at their location, and
// no bundle is written.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not memwall-compile %s -o %t/b 2>&1 | FileCheck %s
// RUN: not ls %t/b
// f32 attention stays untiled (a warning says why), and untiled attention has
// no kernel.
// CHECK: compile-errors.mlir:[[@LINE+14]]:8: warning: memwall-tile-attention: attention stays untiled: the tiled kernel needs bf16 or f16 inputs, got f32
// CHECK: compile-errors.mlir:[[@LINE+13]]:8: error: codegen runs attention only in its tiled form (memwall.flash_attention); this one stayed untiled
// CHECK-NOT: error:

// Bad options: one message, nonzero exit.
// RUN: not memwall-compile %s --target=h900 -o %t/b 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: memwall-compile: error: unknown target 'h900'; valid targets: a100-40gb
// RUN: not memwall-compile %s 2>&1 | FileCheck %s --check-prefix=NOOUT
// NOOUT: memwall-compile: error: -o BUNDLE_DIR is required
// RUN: echo keep > %t/file
// RUN: not memwall-compile %S/compile-seed.mlir -o %t/file 2>&1 | FileCheck %s --check-prefix=NOTBUNDLE
// NOTBUNDLE: error: '{{.*}}file' exists and is not a bundle: not replacing it
// RUN: grep keep %t/file
func.func @attention(%q: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %0 = memwall.attention %q, %q, %q causal : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}
