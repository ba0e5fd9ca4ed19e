// REQUIRES: cuda
// Attention the tensor-core kernel cannot run (here a head dimension of 40:
// tiled, since it is a multiple of 8, but mma.sync takes k in steps of 16) is
// one error at its location, and no bundle is written.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not memwall-compile %s -o %t/b 2>&1 | FileCheck %s
// RUN: not ls %t/b
// CHECK: compile-attention-errors.mlir:[[@LINE+4]]:8: error: codegen cannot run this attention: the attention kernel needs head dimensions that are multiples of 16 and at most 128 (got 40 and 40)
// CHECK-NOT: error:
func.func @main(%q: tensor<1x2x64x40xbf16>, %mask: tensor<1x1x64x64xbf16>)
    -> tensor<1x2x64x40xbf16> {
  %0 = memwall.attention %q, %q, %q mask %mask : tensor<1x2x64x40xbf16>, tensor<1x2x64x40xbf16>, tensor<1x2x64x40xbf16>, tensor<1x1x64x64xbf16> -> tensor<1x2x64x40xbf16>
  return %0 : tensor<1x2x64x40xbf16>
}
