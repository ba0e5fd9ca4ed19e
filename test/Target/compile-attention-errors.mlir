// REQUIRES: cuda
// Attention the tensor-core kernel cannot run is one error at its location,
// and no bundle is written.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not memwall-compile %s -o %t/b 2>&1 | FileCheck %s
// RUN: not ls %t/b

// A head dimension of 40 (mma.sync takes k in steps of 16): the tiling pass
// leaves the attention untiled with a warning, and untiled attention has no
// kernel.
// CHECK: compile-attention-errors.mlir:[[@LINE+9]]:8: warning: memwall-tile-attention: attention stays untiled: the tiled kernel needs head dimensions that are multiples of 16 and at most 128, got 40
// CHECK: compile-attention-errors.mlir:[[@LINE+8]]:8: error: codegen runs attention only in its tiled form
// A hand-tiled op whose 16-key K tile (32 chunks of 16 bytes) cannot be
// spread over the 128 threads of a 64-row block.
// CHECK: compile-attention-errors.mlir:[[@LINE+6]]:10: error: codegen cannot run this attention: the attention kernel's tile loads need 16x16 tiles to split evenly over 128 threads
// CHECK-NOT: error:
func.func @main(%q: tensor<1x2x64x40xbf16>, %mask: tensor<1x1x64x64xbf16>,
                %s: tensor<1x1x64x16xbf16>)
    -> (tensor<1x2x64x40xbf16>, tensor<1x1x64x16xbf16>) {
  %0 = memwall.attention %q, %q, %q mask %mask : tensor<1x2x64x40xbf16>, tensor<1x2x64x40xbf16>, tensor<1x2x64x40xbf16>, tensor<1x1x64x64xbf16> -> tensor<1x2x64x40xbf16>
  %1:2 = memwall.flash_attention %s, %s, %s scale 0.25 block_q 64 block_kv 16 splits 1 : (tensor<1x1x64x16xbf16>, tensor<1x1x64x16xbf16>, tensor<1x1x64x16xbf16>) -> (tensor<1x1x64x16xbf16>, tensor<1x1x64xf32>)
  return %0, %1#0 : tensor<1x2x64x40xbf16>, tensor<1x1x64x16xbf16>
}
