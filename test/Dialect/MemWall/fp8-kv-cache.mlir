// RUN: memwall-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// An fp8 KV cache is read by bf16/f16 queries as stored (attention
// dequantizes as it loads K and V); the result has the queries' type.
// CHECK-LABEL: func.func @fp8_cache
// CHECK: memwall.attention {{.*}} : tensor<1x4x1x16xbf16>, tensor<1x4x8x16xf8E4M3FN>, tensor<1x4x8x16xf8E4M3FN> -> tensor<1x4x1x16xbf16>
// CHECK: memwall.attention {{.*}} : tensor<1x4x1x16xf16>, tensor<1x4x8x16xf8E5M2>, tensor<1x4x8x16xf8E5M2> -> tensor<1x4x1x16xf16>
func.func @fp8_cache(%q: tensor<1x4x1x16xbf16>, %k: tensor<1x4x8x16xf8E4M3FN>,
                     %qh: tensor<1x4x1x16xf16>, %k5: tensor<1x4x8x16xf8E5M2>) {
  %0 = memwall.attention %q, %k, %k causal : tensor<1x4x1x16xbf16>, tensor<1x4x8x16xf8E4M3FN>, tensor<1x4x8x16xf8E4M3FN> -> tensor<1x4x1x16xbf16>
  %1 = memwall.attention %qh, %k5, %k5 causal : tensor<1x4x1x16xf16>, tensor<1x4x8x16xf8E5M2>, tensor<1x4x8x16xf8E5M2> -> tensor<1x4x1x16xf16>
  return
}
// -----

// Key and value are one cache type.
func.func @mixed_cache(%q: tensor<1x4x1x16xbf16>, %k: tensor<1x4x8x16xf8E4M3FN>, %v: tensor<1x4x8x16xbf16>) {
  // expected-error @below {{query, key and value must have the same element type (or key and value an fp8 cache read by bf16/f16 queries)}}
  %0 = memwall.attention %q, %k, %v : tensor<1x4x1x16xbf16>, tensor<1x4x8x16xf8E4M3FN>, tensor<1x4x8x16xbf16> -> tensor<1x4x1x16xbf16>
  return
}
// -----

// fp32 queries do not read an fp8 cache.
func.func @f32_query(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x8x16xf8E4M3FN>) {
  // expected-error @below {{query, key and value must have the same element type}}
  %0 = memwall.attention %q, %k, %k : tensor<1x4x1x16xf32>, tensor<1x4x8x16xf8E4M3FN>, tensor<1x4x8x16xf8E4M3FN> -> tensor<1x4x1x16xf32>
  return
}
// -----

// int4 weights are cast to bf16 at use.
func.func @int4(%w: tensor<64x64xi4>) -> tensor<64x64xbf16> {
  %0 = memwall.cast %w to bf16 : tensor<64x64xi4> -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
