// RUN: memwall-opt %s -split-input-file --memwall-set-target=target=h100-sxm --memwall-tile-attention -verify-diagnostics | FileCheck %s

// Prefill, head dim 128, bf16 on an H100 (228 KiB of shared memory per SM,
// half of it per block): 128x128 tiles need 2 x (128x128 + 2 x 128 x 256)
// = 160 KiB, too much; 128x64 need 2 x (16384 + 2 x 64 x 256) = 96 KiB.
// 32 heads x 8 query blocks fill more than the 132 SMs: no split.
// CHECK-LABEL: func.func @prefill_gqa
// CHECK: %{{.*}}, %[[LSE:.*]] = memwall.flash_attention %arg0, %arg1, %arg2 causal scale 0.088388{{[0-9]*}} block_q 128 block_kv 64 splits 1 : (tensor<1x32x1024x128xbf16>, tensor<1x8x1024x128xbf16>, tensor<1x8x1024x128xbf16>) -> (tensor<1x32x1024x128xbf16>, tensor<1x32x1024xf32>)
// CHECK-NOT: memwall.attention
func.func @prefill_gqa(%q: tensor<1x32x1024x128xbf16>, %k: tensor<1x8x1024x128xbf16>, %v: tensor<1x8x1024x128xbf16>) -> tensor<1x32x1024x128xbf16> {
  %o = memwall.attention %q, %k, %v causal : tensor<1x32x1024x128xbf16>, tensor<1x8x1024x128xbf16>, tensor<1x8x1024x128xbf16> -> tensor<1x32x1024x128xbf16>
  return %o : tensor<1x32x1024x128xbf16>
}

// -----

// Head dim 64: 128x128 tiles fit (2 x (8192 + 2 x 128 x 128) = 80 KiB).
// CHECK-LABEL: func.func @head_dim_64
// CHECK: memwall.flash_attention {{.*}} block_q 128 block_kv 128 splits 1
func.func @head_dim_64(%q: tensor<4x12x512x64xf16>) -> tensor<4x12x512x64xf16> {
  %o = memwall.attention %q, %q, %q : tensor<4x12x512x64xf16>, tensor<4x12x512x64xf16>, tensor<4x12x512x64xf16> -> tensor<4x12x512x64xf16>
  return %o : tensor<4x12x512x64xf16>
}

// -----

// Decode over a 4096-token cache: 32 heads x 1 query block fill 32 of 132
// SMs, so the 64 key blocks are split (flash-decoding). A block of one query
// row streams K and V, so the splits fill about 4 waves of SMs (one wave
// kept too few bytes in flight on an H100): 17 ways, 544 blocks.
// CHECK-LABEL: func.func @decode_split_kv
// CHECK: memwall.flash_attention {{.*}} causal scale {{.*}} block_q 128 block_kv 64 splits 17
func.func @decode_split_kv(%q: tensor<1x32x1x128xbf16>, %k: tensor<1x32x4096x128xbf16>) -> tensor<1x32x1x128xbf16> {
  %o = memwall.attention %q, %k, %k causal : tensor<1x32x1x128xbf16>, tensor<1x32x4096x128xbf16>, tensor<1x32x4096x128xbf16> -> tensor<1x32x1x128xbf16>
  return %o : tensor<1x32x1x128xbf16>
}

// -----

// What the kernel does not support stays untiled, with a warning.
// CHECK-LABEL: func.func @unsupported
// CHECK: memwall.attention
// CHECK: memwall.attention
func.func @unsupported(%q: tensor<1x2x16x64xf32>, %r: tensor<1x2x16x100xbf16>) -> (tensor<1x2x16x64xf32>, tensor<1x2x16x100xbf16>) {
  // expected-warning @below {{memwall-tile-attention: attention stays untiled: the tiled kernel needs bf16 or f16 inputs, got f32}}
  %o = memwall.attention %q, %q, %q : tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  // expected-warning @below {{memwall-tile-attention: attention stays untiled: the tiled kernel needs head dimensions that are multiples of 16 and at most 128, got 100}}
  %p = memwall.attention %r, %r, %r : tensor<1x2x16x100xbf16>, tensor<1x2x16x100xbf16>, tensor<1x2x16x100xbf16> -> tensor<1x2x16x100xbf16>
  return %o, %p : tensor<1x2x16x64xf32>, tensor<1x2x16x100xbf16>
}

// -----

// A training step: the backward of a tiled attention reads its log-sum-exp
// (FlashAttention-2 form, key blocks outside: tiles swapped). 2 heads x 2
// query blocks leave the SMs idle: the 2 key blocks are split.
// CHECK-LABEL: func.func @train
// CHECK: %[[O:.*]], %[[L:.*]] = memwall.flash_attention %arg0, %arg1, %arg1 causal scale {{.*}} block_q 128 block_kv 128 splits 2
// CHECK: memwall.flash_attention_grad %arg0, %arg1, %arg1, %[[O]], %{{.*}}, %[[L]] causal scale {{.*}} block_q 128 block_kv 128 {memwall.phase = "backward"}
// CHECK-NOT: memwall.attention_grad
func.func @train(%q: tensor<1x2x256x64xbf16> {memwall.kind = #memwall.arg_kind<weight>},
                 %k: tensor<1x2x256x64xbf16> {memwall.kind = #memwall.arg_kind<weight>}) -> (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) {
  %o = memwall.attention %q, %k, %k causal : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16> -> tensor<1x2x256x64xbf16>
  %dq, %dk, %dv = memwall.attention_grad %q, %k, %k, %o, %o causal scale 1.250000e-01 {memwall.phase = "backward"} : (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) -> (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
  return %dq, %dk, %dv : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>
}
