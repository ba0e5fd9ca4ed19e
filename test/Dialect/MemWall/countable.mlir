// RUN: memwall-opt %s -split-input-file -verify-diagnostics

// Every memwall op's tensors, FLOPs and bytes must fit int64: past it they
// used to wrap silently (a 2^32 x 2^32 matmul read as 0 FLOPs and 0 bytes,
// "fits"). One error on the op, naming the quantity.

func.func @elements(%a: tensor<4294967296x4294967296xbf16>) {
  // expected-error @below {{has 2^64 elements, more than memwall can count (int64)}}
  %0 = memwall.matmul %a, %a : tensor<4294967296x4294967296xbf16>, tensor<4294967296x4294967296xbf16> -> tensor<4294967296x4294967296xbf16>
  return
}

// -----
// 2^62 f32 elements are countable; their 2^64 bytes are not (the byte count
// used to land in the JSON report negative).
func.func @bytes(%a: tensor<4611686018427387904xf32>) {
  // expected-error @below {{'tensor<4611686018427387904xf32>' takes 2^64 bytes, more than memwall can count (int64)}}
  %0 = memwall.relu %a : tensor<4611686018427387904xf32>
  return
}

// -----
func.func @bytes_not_a_power_of_two(%a: tensor<3x1000000000000000000xf32>) {
  // expected-error @below {{takes about 1.20e+19 bytes, more than memwall can count (int64)}}
  %0 = memwall.relu %a : tensor<3x1000000000000000000xf32>
  return
}

// -----
// Each operand fits (2^62 bytes); the op reads 2^63.
func.func @bytes_read(%a: tensor<1152921504606846976xf32>) {
  // expected-error @below {{its bytes read are more than memwall can count (int64)}}
  %0 = memwall.add %a, %a : tensor<1152921504606846976xf32>, tensor<1152921504606846976xf32> -> tensor<1152921504606846976xf32>
  return
}

// -----
// 2^62 bytes read and 2^62 written: the report's per-op sum would wrap.
func.func @bytes_moved(%a: tensor<2305843009213693952xbf16>) {
  // expected-error @below {{its bytes moved (read + written) are more than memwall can count (int64)}}
  %0 = memwall.relu %a : tensor<2305843009213693952xbf16>
  return
}

// -----
// 2^21 x 2^21 bf16 operands (8 TiB) are countable; 2 M N K = 2^64 FLOPs are
// not.
func.func @matmul_flops(%a: tensor<2097152x2097152xbf16>) {
  // expected-error @below {{its FLOPs are more than memwall can count (int64)}}
  %0 = memwall.matmul %a, %a : tensor<2097152x2097152xbf16>, tensor<2097152x2097152xbf16> -> tensor<2097152x2097152xbf16>
  return
}

// -----
// Sq = Sk = 2^31: 2^62 score pairs per head, times 2 (D + Dv) FLOPs.
func.func @attention_flops(%q: tensor<1x1x2147483648x64xbf16>) {
  // expected-error @below {{its FLOPs are more than memwall can count (int64)}}
  %0 = memwall.attention %q, %q, %q : tensor<1x1x2147483648x64xbf16>, tensor<1x1x2147483648x64xbf16>, tensor<1x1x2147483648x64xbf16> -> tensor<1x1x2147483648x64xbf16>
  return
}

// -----
// Type inference adds dimensions with overflow checks.
func.func @pad(%a: tensor<4xf32>) {
  // expected-error @below {{padding [9223372036854775807] and [1] of [4] gives a dimension larger than int64}}
  %0 = memwall.pad %a low [9223372036854775807] high [1] : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----
func.func @concat(%a: tensor<4611686018427387904xi1>) {
  // expected-error @below {{the inputs' axis-0 sizes add up to more than int64}}
  %0 = memwall.concat %a, %a axis 0 : tensor<4611686018427387904xi1>, tensor<4611686018427387904xi1> -> tensor<4611686018427387904xi1>
  return
}

// -----
func.func @kv_cache_append(%c: tensor<1x1x9223372036854775807x1xbf16>, %u: tensor<1x1x1x1xbf16>) {
  // expected-error @below {{cache and update lengths add up to more than int64}}
  %0 = memwall.kv_cache_append %c, %u : tensor<1x1x9223372036854775807x1xbf16>, tensor<1x1x1x1xbf16> -> tensor<1x1x9223372036854775807x1xbf16>
  return
}

// -----
// Both element counts wrap to 0 in ShapedType::getNumElements, which made
// this reshape "valid" and autodiff's reshape back fail with an LLVM ERROR.
func.func @reshape(%a: tensor<4294967296x4294967296xf32>) {
  // expected-error @below {{cannot reshape [4294967296, 4294967296] (more than 2^63 elements) to [8589934592, 4294967296] (more than 2^63 elements)}}
  %0 = memwall.reshape %a [8589934592, 4294967296] : tensor<4294967296x4294967296xf32> -> tensor<8589934592x4294967296xf32>
  return
}

// -----
// A tile larger than any shared memory: the traffic's closed forms repeat
// per block residue, so block sizes are bounded.
func.func @huge_block(%q: tensor<1x1x16x16xbf16>) {
  // expected-error @below {{block sizes must be at most 4096, got block_q 8192 and block_kv 64}}
  %0:2 = memwall.flash_attention %q, %q, %q scale 0.25 block_q 8192 block_kv 64 splits 1 : (tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>) -> (tensor<1x1x16x16xbf16>, tensor<1x1x16xf32>)
  return
}

// -----
// Non-finite attributes would reach the bundle's JSON as bare inf/nan.
func.func @scale_inf(%a: tensor<4xf32>) {
  // expected-error @below {{factor must be a finite number, got INF}}
  %0 = memwall.scale %a by 0x7FF0000000000000 : tensor<4xf32>
  return
}

// -----
func.func @adamw_eps_inf(%p: tensor<4xf32>) {
  // expected-error @below {{eps must be a positive finite number, got INF}}
  %0:3 = memwall.adamw %p, %p, %p, %p lr 1.0e-03 eps 0x7FF0000000000000 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----
func.func @adamw_weight_decay_nan(%p: tensor<4xf32>) {
  // expected-error @below {{weight_decay must be a finite number, got nan}}
  %0:3 = memwall.adamw %p, %p, %p, %p lr 1.0e-03 weight_decay 0x7FF8000000000000 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----
// Zero-sized dimensions are countable: no work, no error.
func.func @empty(%a: tensor<4x0xf32>, %b: tensor<0x8xbf16>) {
  %0 = memwall.relu %a : tensor<4x0xf32>
  %1 = memwall.softmax %0 axis -1 : tensor<4x0xf32>
  %2 = memwall.matmul %b, %b {transpose_lhs} : tensor<0x8xbf16>, tensor<0x8xbf16> -> tensor<8x8xbf16>
  return
}
