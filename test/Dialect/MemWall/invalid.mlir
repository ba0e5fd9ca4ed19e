// RUN: memwall-opt %s -split-input-file -verify-diagnostics

// One case per verifier and type-inference check of the memwall dialect.
// Each error is reported once, in the words of the check that failed.

func.func @case0(%a: tensor<4x8xbf16>, %b: tensor<9x16xbf16>) {
  // expected-error @below {{contraction dimensions differ: lhs has K = 8, rhs has K = 9}}
  %0 = memwall.matmul %a, %b : tensor<4x8xbf16>, tensor<9x16xbf16> -> tensor<4x16xbf16>
  return
}
// -----

func.func @case1(%a: tensor<4x8xbf16>, %b: tensor<8x16xf16>) {
  // expected-error @below {{operands must have the same element type}}
  %0 = memwall.matmul %a, %b : tensor<4x8xbf16>, tensor<8x16xf16> -> tensor<4x16xbf16>
  return
}
// -----

func.func @case2(%a: tensor<8xbf16>, %b: tensor<8x16xbf16>) {
  // expected-error @below {{operands must have rank >= 2}}
  %0 = memwall.matmul %a, %b : tensor<8xbf16>, tensor<8x16xbf16> -> tensor<16xbf16>
  return
}
// -----

func.func @case3(%a: tensor<2x4x8xbf16>, %b: tensor<3x8x16xbf16>) {
  // expected-error @below {{batch dimensions [2] and [3] do not broadcast}}
  %0 = memwall.matmul %a, %b : tensor<2x4x8xbf16>, tensor<3x8x16xbf16> -> tensor<2x4x16xbf16>
  return
}
// -----

func.func @case4(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %c: tensor<8xbf16>) {
  // expected-error @below {{bias must have shape [16], got [8]}}
  %0 = memwall.matmul %a, %b bias %c : tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<8xbf16> -> tensor<4x16xbf16>
  return
}
// -----

func.func @case5(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) {
  // expected-error @below {{result type 'tensor<4x15xbf16>' does not match the inferred type 'tensor<4x16xbf16>'}}
  %0 = memwall.matmul %a, %b : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x15xbf16>
  return
}
// -----

func.func @case6(%a: tensor<4x8xf8E4M3FN>, %b: tensor<8x16xf8E4M3FN>) {
  // expected-error @below {{result #0 must be statically shaped tensor of}}
  %0 = memwall.matmul %a, %b : tensor<4x8xf8E4M3FN>, tensor<8x16xf8E4M3FN> -> tensor<4x16xf8E4M3FN>
  return
}
// -----

func.func @case7(%a: tensor<?x8xbf16>, %b: tensor<8x16xbf16>) {
  // expected-error @below {{operand #0 must be statically shaped tensor}}
  %0 = memwall.matmul %a, %b : tensor<?x8xbf16>, tensor<8x16xbf16> -> tensor<?x16xbf16>
  return
}
// -----

func.func @case8(%a: tensor<4x8xbf16>, %b: tensor<3x8xbf16>) {
  // expected-error @below {{shapes [4, 8] and [3, 8] do not broadcast}}
  %0 = memwall.add %a, %b : tensor<4x8xbf16>, tensor<3x8xbf16> -> tensor<4x8xbf16>
  return
}
// -----

func.func @case9(%a: tensor<4x8xbf16>, %b: tensor<4x8xf32>) {
  // expected-error @below {{operands must have the same element type, got 'bf16' and 'f32'}}
  %0 = memwall.mul %a, %b : tensor<4x8xbf16>, tensor<4x8xf32> -> tensor<4x8xbf16>
  return
}
// -----

func.func @case10(%a: tensor<4x8xi8>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = memwall.sub %a, %a : tensor<4x8xi8>, tensor<4x8xi8> -> tensor<4x8xi8>
  return
}
// -----

func.func @case11(%a: tensor<?x8xbf16>) {
  // expected-error @below {{operand #0 must be statically shaped tensor}}
  %0 = memwall.relu %a : tensor<?x8xbf16>
  return
}
// -----

func.func @case12(%a: tensor<4x8xi32>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of 32-bit float}}
  %0 = memwall.silu %a : tensor<4x8xi32>
  return
}
// -----

func.func @case13(%a: tensor<4x8xbf16>, %b: tensor<4x4xbf16>) {
  // expected-error @below {{requires the same type for all operands and results}}
  %0 = "memwall.swiglu"(%a, %b) : (tensor<4x8xbf16>, tensor<4x4xbf16>) -> tensor<4x8xbf16>
  return
}
// -----

func.func @case14(%a: tensor<4x8xbf16>) {
  // expected-error @below {{rate must be in [0, 1), got 1.000000e+00}}
  %0 = memwall.dropout %a rate 1.0 : tensor<4x8xbf16>
  return
}
// -----

func.func @case15(%a: tensor<4x8xbf16>) {
  // expected-error @below {{rate must be in [0, 1), got -5.000000e-01}}
  %0 = memwall.dropout %a rate -0.5 : tensor<4x8xbf16>
  return
}
// -----

func.func @case16(%a: tensor<4x8xbf16>, %w: tensor<4xbf16>) {
  // expected-error @below {{weight must have shape [8] (the last dimension of the input), got [4]}}
  %0 = memwall.layer_norm %a, %w : tensor<4x8xbf16>, tensor<4xbf16>
  return
}
// -----

func.func @case17(%a: tensor<4x8xbf16>, %w: tensor<8xbf16>, %b: tensor<2x8xbf16>) {
  // expected-error @below {{bias must have shape [8] (the last dimension of the input), got [2, 8]}}
  %0 = memwall.layer_norm %a, %w, %b : tensor<4x8xbf16>, tensor<8xbf16>, tensor<2x8xbf16>
  return
}
// -----

func.func @case18(%a: tensor<4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @below {{epsilon must be a positive finite number, got 0}}
  %0 = memwall.layer_norm %a, %w eps 0.0 : tensor<4x8xbf16>, tensor<8xbf16>
  return
}
// -----

func.func @case19(%a: tensor<4x8xbf16>, %w: tensor<8x1xbf16>) {
  // expected-error @below {{weight must have shape [8]}}
  %0 = memwall.rms_norm %a, %w : tensor<4x8xbf16>, tensor<8x1xbf16>
  return
}
// -----

func.func @case20(%a: tensor<4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @below {{epsilon must be a positive finite number, got -1}}
  %0 = memwall.rms_norm %a, %w eps -1.0 : tensor<4x8xbf16>, tensor<8xbf16>
  return
}
// -----

func.func @case21(%a: tensor<bf16>, %w: tensor<8xbf16>) {
  // expected-error @below {{input must have rank >= 1}}
  %0 = memwall.rms_norm %a, %w : tensor<bf16>, tensor<8xbf16>
  return
}
// -----

func.func @case22(%a: tensor<4x8xbf16>) {
  // expected-error @below {{axis 2 is out of range for rank 2}}
  %0 = memwall.softmax %a axis 2 : tensor<4x8xbf16>
  return
}
// -----

func.func @case23(%a: tensor<4x8xf32>) {
  // expected-error @below {{axes must not be empty}}
  %0 = memwall.reduce sum %a axes [] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}
// -----

func.func @case24(%a: tensor<4x8xf32>) {
  // expected-error @below {{axis -1 is reduced twice}}
  %0 = memwall.reduce sum %a axes [1, -1] : tensor<4x8xf32> -> tensor<4xf32>
  return
}
// -----

func.func @case25(%a: tensor<4x8xf32>) {
  // expected-error @below {{axis -3 is out of range for rank 2}}
  %0 = memwall.reduce mean %a axes [-3] : tensor<4x8xf32> -> tensor<8xf32>
  return
}
// -----


func.func @case27(%q: tensor<1x4x8x16xbf16>, %k: tensor<4x8x16xbf16>) {
  // expected-error @below {{query, key and value must have rank 4 [B, H, S, D]}}
  %0 = memwall.attention %q, %k, %k : tensor<1x4x8x16xbf16>, tensor<4x8x16xbf16>, tensor<4x8x16xbf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----

func.func @case28(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x4x8x16xf16>) {
  // expected-error @below {{query, key and value must have the same element type}}
  %0 = memwall.attention %q, %k, %k : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xf16>, tensor<1x4x8x16xf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----

func.func @case29(%q: tensor<1x4x8x16xbf16>, %k: tensor<2x4x8x16xbf16>) {
  // expected-error @below {{batch sizes differ: query 1, key 2, value 2}}
  %0 = memwall.attention %q, %k, %k : tensor<1x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----

func.func @case30(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x4x8x32xbf16>) {
  // expected-error @below {{query head dim 16 differs from key head dim 32}}
  %0 = memwall.attention %q, %k, %k : tensor<1x4x8x16xbf16>, tensor<1x4x8x32xbf16>, tensor<1x4x8x32xbf16> -> tensor<1x4x8x32xbf16>
  return
}
// -----

func.func @case31(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x4x8x16xbf16>, %v: tensor<1x4x9x16xbf16>) {
  // expected-error @below {{key and value must agree on heads and sequence length}}
  %0 = memwall.attention %q, %k, %v : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x9x16xbf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----

func.func @case32(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x3x8x16xbf16>) {
  // expected-error @below {{query heads (4) must be a multiple of key/value heads (3)}}
  %0 = memwall.attention %q, %k, %k : tensor<1x4x8x16xbf16>, tensor<1x3x8x16xbf16>, tensor<1x3x8x16xbf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----

func.func @case33(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x4x4x16xbf16>) {
  // expected-error @below {{causal attention needs query length <= key length, got 8 > 4}}
  %0 = memwall.attention %q, %k, %k causal : tensor<1x4x8x16xbf16>, tensor<1x4x4x16xbf16>, tensor<1x4x4x16xbf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----

func.func @case34(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x4x8x16xbf16>) {
  // expected-error @below {{scale must be a positive finite number, got -1}}
  %0 = memwall.attention %q, %k, %k scale -1.0 : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----

func.func @case35(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x4x8x16xbf16>, %m: tensor<1x1x8x7xi1>) {
  // expected-error @below {{mask of shape [1, 1, 8, 7] does not broadcast to the scores [1, 4, 8, 8]}}
  %0 = memwall.attention %q, %k, %k mask %m : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x1x8x7xi1> -> tensor<1x4x8x16xbf16>
  return
}
// -----

func.func @case36(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x4x8x16xbf16>, %m: tensor<1x1x8x8xf32>) {
  // expected-error @below {{mask must be i1 or have the result element type 'bf16'}}
  %0 = memwall.attention %q, %k, %k mask %m : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x1x8x8xf32> -> tensor<1x4x8x16xbf16>
  return
}
// -----

func.func @case37(%x: tensor<1x4x8x16xbf16>, %p: tensor<7xi64>) {
  // expected-error @below {{positions must have shape [8] or [1, 8], got [7]}}
  %0 = memwall.rope %x, %p : tensor<1x4x8x16xbf16>, tensor<7xi64>
  return
}
// -----

func.func @case38(%x: tensor<1x4x8x15xbf16>, %p: tensor<8xi64>) {
  // expected-error @below {{head dimension must be even, got 15}}
  %0 = memwall.rope %x, %p : tensor<1x4x8x15xbf16>, tensor<8xi64>
  return
}
// -----

func.func @case39(%x: tensor<4x8x16xbf16>, %p: tensor<8xi64>) {
  // expected-error @below {{input must have rank 4 [B, H, S, D], got rank 3}}
  %0 = memwall.rope %x, %p : tensor<4x8x16xbf16>, tensor<8xi64>
  return
}
// -----

func.func @case40(%x: tensor<1x4x8x16xbf16>, %p: tensor<8xi64>) {
  // expected-error @below {{theta must be a positive finite number, got 0}}
  %0 = memwall.rope %x, %p theta 0.0 : tensor<1x4x8x16xbf16>, tensor<8xi64>
  return
}
// -----

func.func @case41(%x: tensor<1x4x8x16xbf16>, %p: tensor<8xf32>) {
  // expected-error @below {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = memwall.rope %x, %p : tensor<1x4x8x16xbf16>, tensor<8xf32>
  return
}
// -----

func.func @case42(%t: tensor<10x4x2xbf16>, %i: tensor<3xi64>) {
  // expected-error @below {{table must have rank 2 [V, D], got rank 3}}
  %0 = memwall.embedding %t[%i] : tensor<10x4x2xbf16>, tensor<3xi64> -> tensor<3x2xbf16>
  return
}
// -----

func.func @case43(%c: tensor<1x2x8x16xbf16>, %u: tensor<1x4x1x16xbf16>) {
  // expected-error @below {{cache [1, 2, 8, 16] and update [1, 4, 1, 16] must agree on every dimension but 2}}
  %0 = memwall.kv_cache_append %c, %u : tensor<1x2x8x16xbf16>, tensor<1x4x1x16xbf16> -> tensor<1x2x9x16xbf16>
  return
}
// -----

func.func @case44(%c: tensor<1x2x8x16xbf16>, %u: tensor<1x2x1x16xf16>) {
  // expected-error @below {{cache and update must have the same element type}}
  %0 = memwall.kv_cache_append %c, %u : tensor<1x2x8x16xbf16>, tensor<1x2x1x16xf16> -> tensor<1x2x9x16xbf16>
  return
}
// -----

func.func @case45(%c: tensor<2x8x16xbf16>, %u: tensor<2x1x16xbf16>) {
  // expected-error @below {{cache and update must have rank 4 [B, Hkv, S, D]}}
  %0 = memwall.kv_cache_append %c, %u : tensor<2x8x16xbf16>, tensor<2x1x16xbf16> -> tensor<2x9x16xbf16>
  return
}
// -----

func.func @case46(%l: tensor<4x10xf32>, %y: tensor<5xi64>) {
  // expected-error @below {{labels shape [5] must equal the logits shape without its class dimension [4]}}
  %0 = memwall.cross_entropy %l, %y : tensor<4x10xf32>, tensor<5xi64> -> tensor<f32>
  return
}
// -----

func.func @case47(%l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @below {{result type 'tensor<f32>' does not match the inferred type 'tensor<4xf32>'}}
  %0 = memwall.cross_entropy %l, %y none : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
  return
}
// -----

func.func @case48(%a: tensor<4x2xf32>) {
  // expected-error @below {{cannot reshape [4, 2] (8 elements) to [3, 3] (9 elements)}}
  %0 = memwall.reshape %a [3, 3] : tensor<4x2xf32> -> tensor<3x3xf32>
  return
}
// -----

func.func @case49(%a: tensor<4x2xf32>) {
  // expected-error @below {{shape [-8] has a negative dimension}}
  %0 = memwall.reshape %a [-8] : tensor<4x2xf32> -> tensor<8xf32>
  return
}
// -----

func.func @case50(%a: tensor<4x2xf32>) {
  // expected-error @below {{permutation [0, 0] is not a permutation of the 2 input dimensions}}
  %0 = memwall.transpose %a [0, 0] : tensor<4x2xf32> -> tensor<4x4xf32>
  return
}
// -----

func.func @case51(%a: tensor<4x2xf32>) {
  // expected-error @below {{permutation [1] is not a permutation of the 2 input dimensions}}
  %0 = memwall.transpose %a [1] : tensor<4x2xf32> -> tensor<2xf32>
  return
}
// -----

func.func @case52(%a: tensor<4x2xf32>) {
  // expected-error @below {{offsets, sizes and strides must each have 2 entries (the input rank)}}
  %0 = memwall.slice %a offsets [0] sizes [4] : tensor<4x2xf32> -> tensor<4xf32>
  return
}
// -----

func.func @case53(%a: tensor<4x2xf32>) {
  // expected-error @below {{dimension 0: slice reaches index 4 of a dimension of size 4}}
  %0 = memwall.slice %a offsets [1, 0] sizes [4, 2] : tensor<4x2xf32> -> tensor<4x2xf32>
  return
}
// -----

func.func @case54(%a: tensor<4x2xf32>) {
  // expected-error @below {{dimension 0: offset must be >= 0, size and stride >= 1}}
  %0 = memwall.slice %a offsets [0, 0] sizes [2, 2] strides [0, 1] : tensor<4x2xf32> -> tensor<2x2xf32>
  return
}
// -----

func.func @case55(%a: tensor<4x2xf32>, %b: tensor<4x3xf32>) {
  // expected-error @below {{input #1 has shape [4, 3], which differs from [4, 2] outside axis 0}}
  %0 = memwall.concat %a, %b axis 0 : tensor<4x2xf32>, tensor<4x3xf32> -> tensor<8x2xf32>
  return
}
// -----

func.func @case56(%a: tensor<4x2xf32>, %b: tensor<4x2xbf16>) {
  // expected-error @below {{input #1 differs in element type or rank from input #0}}
  %0 = memwall.concat %a, %b axis 0 : tensor<4x2xf32>, tensor<4x2xbf16> -> tensor<8x2xf32>
  return
}
// -----

func.func @case57(%a: tensor<4x2xf32>) {
  // expected-error @below {{axis 2 is out of range for rank 2}}
  %0 = memwall.concat %a axis 2 : tensor<4x2xf32> -> tensor<4x2xf32>
  return
}
// -----

func.func @case58(%a: tensor<4x2xf32>) {
  // expected-error @below {{attribute 'element_type' failed to satisfy constraint}}
  %0 = memwall.cast %a to f64 : tensor<4x2xf32> -> tensor<4x2xf64>
  return
}
// -----

func.func @case59(%a: tensor<4x8xf32>) {
  // expected-error @below {{flops and bytes must be non-negative}}
  %0 = memwall.relu %a {memwall.cost = #memwall.cost<flops = -1, bytes_read = 0, bytes_written = 0, intensity = 0.0, bound = memory, time_s = 0.0>} : tensor<4x8xf32>
  return
}
// -----

func.func @case60(%a: tensor<4x8xf32>) {
  // expected-error @below {{bound must be 'memory' or 'compute', got 'fast'}}
  %0 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 1, bytes_read = 0, bytes_written = 0, intensity = 0.0, bound = fast, time_s = 0.0>} : tensor<4x8xf32>
  return
}
// -----

func.func @case61(%a: tensor<4x8xf32>) {
  // expected-error @below {{'memwall.cost' must be a #memwall.cost attribute}}
  %0 = memwall.relu %a {memwall.cost = 3} : tensor<4x8xf32>
  return
}
// -----

func.func @case62(%a: tensor<4x8xf32>) {
  // expected-error @below {{unknown memwall attribute 'memwall.fused'}}
  %0 = memwall.relu %a {memwall.fused} : tensor<4x8xf32>
  return
}
// -----

// expected-error @below {{'memwall.kind' of argument #0 must be #memwall.arg_kind<weight|input|kv_cache>, got "weight"}}
func.func @bad_kind(%a: tensor<4xf32> {memwall.kind = "weight"}) {
  return
}
// -----

// expected-error @below {{unknown memwall argument attribute 'memwall.role'}}
func.func @unknown_arg_attr(%a: tensor<4xf32> {memwall.role = 1}) {
  return
}
// -----

// expected-error @below {{expected one of [weight, input, kv_cache] for role of a function argument, got: bias}}
// expected-error @below {{failed to parse MemWall_ArgKindAttr parameter 'value'}}
func.func @bad_kind_keyword(%a: tensor<4xf32> {memwall.kind = #memwall.arg_kind<bias>}) {
  return
}
// -----

func.func @div_shapes(%a: tensor<4x8xf32>, %b: tensor<2x8xf32>) {
  // expected-error @below {{shapes [4, 8] and [2, 8] do not broadcast}}
  %0 = memwall.div %a, %b : tensor<4x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  return
}
// -----

func.func @scale_integer(%a: tensor<4xi32>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = memwall.scale %a by 2.0 : tensor<4xi32>
  return
}
// -----

func.func @gelu_fp8(%a: tensor<4xf8E4M3FN>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = memwall.gelu %a tanh : tensor<4xf8E4M3FN>
  return
}
// -----

func.func @tanh_unranked(%a: tensor<*xf32>) {
  // expected-error @below {{invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %0 = memwall.tanh %a : tensor<*xf32>
  return
}
// -----

func.func @gelu_unknown_form(%a: tensor<4xf32>) {
  // expected-error @below {{expected ':'}}
  %0 = memwall.gelu %a sigmoid : tensor<4xf32>
  return
}
