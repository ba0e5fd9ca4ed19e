// memwall-tile-attention, memwall-fuse and memwall-annotate-costs run on
// each function (in parallel unless threading is off): nested under
// func.func in a pipeline, or nested by memwall-opt when given as flags.
// Every function reads the target of its module.
// RUN: memwall-opt %s --memwall-tile-attention --memwall-fuse --memwall-annotate-costs | FileCheck %s
// RUN: memwall-opt %s --pass-pipeline='builtin.module(func.func(memwall-tile-attention,memwall-fuse,memwall-annotate-costs))' | FileCheck %s
// RUN: memwall-opt %s --pass-pipeline='builtin.module(func.func(memwall-tile-attention,memwall-fuse,memwall-annotate-costs))' --mlir-disable-threading | FileCheck %s
// A function pass is not scheduled on the module itself.
// RUN: not memwall-opt %s --pass-pipeline='builtin.module(memwall-fuse)' 2>&1 | FileCheck %s --check-prefix=UNNESTED
// UNNESTED: error: Can't add pass 'Fuse' restricted to 'func.func' on a PassManager intended to run on 'builtin.module'

// On the l4 (58 SMs of 100 KiB of shared memory) this attention gets
// 64x32 blocks in 4 splits, where h100-sxm takes 128x64 in 8; the fused
// chain costs 2.98e-06 s, on h100-sxm 2.088e-06 s.
// CHECK: module attributes {memwall.target = #memwall.target<"l4",
module attributes {memwall.target = #memwall.target<"l4">} {
  // CHECK-LABEL: func.func @chain
  // CHECK-SAME: attributes {memwall.fused}
  // CHECK: memwall.fusion elementwise{{.*}}time_s = 2.98e-06
  func.func @chain(%x: tensor<64x1024xbf16>, %b: tensor<1024xbf16>) -> tensor<64x1024xbf16> {
    %0 = memwall.add %x, %b : tensor<64x1024xbf16>, tensor<1024xbf16> -> tensor<64x1024xbf16>
    %1 = memwall.gelu %0 : tensor<64x1024xbf16>
    %2 = memwall.scale %1 by 2.0 : tensor<64x1024xbf16>
    return %2 : tensor<64x1024xbf16>
  }

  // CHECK-LABEL: func.func @attention
  // CHECK-SAME: attributes {memwall.fused}
  // CHECK: memwall.flash_attention {{.*}} block_q 64 block_kv 32 splits 4
  func.func @attention(%q: tensor<1x2x512x128xbf16>) -> tensor<1x2x512x128xbf16> {
    %0 = memwall.attention %q, %q, %q : tensor<1x2x512x128xbf16>, tensor<1x2x512x128xbf16>, tensor<1x2x512x128xbf16> -> tensor<1x2x512x128xbf16>
    return %0 : tensor<1x2x512x128xbf16>
  }
}
