// Shapes the fuzzer found crashing or hanging the passes: zero-sized
// dimensions cost nothing and divide nothing, and cost queries are O(1) in
// the shape.
// RUN: memwall-opt %s -split-input-file --fuse --target=h100-sxm --memwall-annotate-costs -verify-diagnostics | FileCheck %s
// RUN: memwall-opt %s -split-input-file --memwall-set-target=target=h100-sxm --memwall-tile-attention --memwall-annotate-costs -verify-diagnostics | FileCheck %s --check-prefix=TILE

// A zero-length row: the fusion cost model divided by it (SIGFPE). Empty
// tensors run no generated kernel, so nothing fuses; each op costs nothing
// but its launch.
// CHECK-LABEL: func.func @zero_length_rows
// CHECK-NOT: memwall.fusion
// CHECK: memwall.relu {{.*}}#memwall.cost<flops = 0, bytes_read = 0, bytes_written = 0
// CHECK: memwall.softmax {{.*}}#memwall.cost<flops = 0, bytes_read = 0, bytes_written = 0
func.func @zero_length_rows(%a: tensor<4x0xf32>) -> tensor<4x0xf32> {
  %0 = memwall.relu %a : tensor<4x0xf32>
  %1 = memwall.softmax %0 axis -1 : tensor<4x0xf32>
  return %1 : tensor<4x0xf32>
}

// -----
// Zero query heads: the tiling's split choice divided by the query blocks
// (SIGFPE).
// TILE-LABEL: func.func @zero_heads
// TILE: memwall.flash_attention {{.*}} splits 1 {memwall.cost = #memwall.cost<flops = 0,
func.func @zero_heads(%q: tensor<1x0x128x64xbf16>, %k: tensor<1x2x128x64xbf16>) -> tensor<1x0x128x64xbf16> {
  %0 = memwall.attention %q, %k, %k causal : tensor<1x0x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x0x128x64xbf16>
  return %0 : tensor<1x0x128x64xbf16>
}

// -----
// A head dimension of 0 is no multiple of 16 the kernel runs.
// TILE-LABEL: func.func @zero_head_dim
func.func @zero_head_dim(%q: tensor<1x2x128x0xbf16>) -> tensor<1x2x128x0xbf16> {
  // expected-warning @below {{memwall-tile-attention: attention stays untiled: the tiled kernel needs positive head dimensions, got 0}}
  %0 = memwall.attention %q, %q, %q : tensor<1x2x128x0xbf16>, tensor<1x2x128x0xbf16>, tensor<1x2x128x0xbf16> -> tensor<1x2x128x0xbf16>
  return %0 : tensor<1x2x128x0xbf16>
}

// -----
// Sq = 2^40 queries: the tiled traffic looped over its 2^33 query blocks in
// every cost query (a hang). Closed forms answer at once. The annotation's
// bytes read (no L2 reuse): Q, 2^45 bytes, plus the one 64-key K/V block
// (64 B a key) each of the 2^33 query blocks streams, 2^45. FLOPs: 4 x 2^40
// queries x 16 keys x 16.
// CHECK-LABEL: func.func @huge_sequence
// CHECK: memwall.flash_attention {{.*}}#memwall.cost<flops = 1125899906842624, bytes_read = 70368744177664,
func.func @huge_sequence(%q: tensor<1x1x1099511627776x16xbf16>, %k: tensor<1x1x16x16xbf16>) -> tensor<1x1x1099511627776x16xbf16> {
  %0:2 = memwall.flash_attention %q, %k, %k scale 0.25 block_q 128 block_kv 64 splits 1 : (tensor<1x1x1099511627776x16xbf16>, tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>) -> (tensor<1x1x1099511627776x16xbf16>, tensor<1x1x1099511627776xf32>)
  return %0#0 : tensor<1x1x1099511627776x16xbf16>
}
