// memwall.in_place pins an append's in-place write for the lowering; it is
// valid only where the cache is a function argument only that append reads.
// RUN: memwall-opt %s -split-input-file -verify-diagnostics

func.func @pinned(%c: tensor<1x2x8x16xbf16>, %u: tensor<1x2x1x16xbf16>) -> tensor<1x2x9x16xbf16> {
  %0 = memwall.kv_cache_append %c, %u {memwall.in_place} : tensor<1x2x8x16xbf16>, tensor<1x2x1x16xbf16> -> tensor<1x2x9x16xbf16>
  return %0 : tensor<1x2x9x16xbf16>
}

// -----

func.func @cache_read_twice(%c: tensor<1x2x8x16xbf16>, %u: tensor<1x2x1x16xbf16>) -> (tensor<1x2x9x16xbf16>, tensor<1x2x8x16xbf16>) {
  // expected-error @below {{'memwall.in_place' needs a cache that is a function argument only this append reads}}
  %0 = memwall.kv_cache_append %c, %u {memwall.in_place} : tensor<1x2x8x16xbf16>, tensor<1x2x1x16xbf16> -> tensor<1x2x9x16xbf16>
  return %0, %c : tensor<1x2x9x16xbf16>, tensor<1x2x8x16xbf16>
}

// -----

func.func @computed_cache(%c: tensor<1x2x8x16xbf16>, %u: tensor<1x2x1x16xbf16>) -> tensor<1x2x9x16xbf16> {
  %s = memwall.scale %c by 2.0 : tensor<1x2x8x16xbf16>
  // expected-error @below {{'memwall.in_place' needs a cache that is a function argument only this append reads}}
  %0 = memwall.kv_cache_append %s, %u {memwall.in_place} : tensor<1x2x8x16xbf16>, tensor<1x2x1x16xbf16> -> tensor<1x2x9x16xbf16>
  return %0 : tensor<1x2x9x16xbf16>
}

// -----

func.func @not_an_append(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'memwall.in_place' must be a unit attribute on a memwall.kv_cache_append}}
  %0 = memwall.relu %x {memwall.in_place} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
