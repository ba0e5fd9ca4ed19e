// REQUIRES: cuda
// Attention the tensor-core kernel cannot run is tiled but gets one error at
// its location, and no bundle is written. A mask operand is one such case.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not memwall-compile %s -o %t/b 2>&1 | FileCheck %s
// RUN: not ls %t/b
// CHECK: compile-attention-errors.mlir:[[@LINE+4]]:8: error: codegen cannot run this attention: the attention kernel does not take a mask operand (causal masking is supported)
// CHECK-NOT: error:
func.func @main(%q: tensor<1x2x64x64xbf16>, %mask: tensor<1x1x64x64xbf16>)
    -> tensor<1x2x64x64xbf16> {
  %0 = memwall.attention %q, %q, %q mask %mask : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x1x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %0 : tensor<1x2x64x64xbf16>
}
