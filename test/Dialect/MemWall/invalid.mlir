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

func.func @rope_scaling_of_three_numbers(%x: tensor<1x2x4x8xbf16>, %pos: tensor<4xi64>) {
  // expected-error @below {{llama3_scaling must be [factor, low_freq_factor, high_freq_factor, original_context], got 3 numbers}}
  %0 = memwall.rope %x, %pos llama3_scaling [8.0, 1.0, 4.0] : tensor<1x2x4x8xbf16>, tensor<4xi64>
  return
}
// -----

func.func @rope_scaling_high_below_low(%x: tensor<1x2x4x8xbf16>, %pos: tensor<4xi64>) {
  // expected-error @below {{llama3_scaling needs factor, low_freq_factor and original_context > 0 and high_freq_factor > low_freq_factor, got [8.000000e+00, 4.000000e+00, 1.000000e+00, 8.192000e+03]}}
  %0 = memwall.rope %x, %pos llama3_scaling [8.0, 4.0, 1.0, 8192.0] : tensor<1x2x4x8xbf16>, tensor<4xi64>
  return
}
// -----

// expected-error @below {{'memwall.frozen' of argument #0 must be a unit attribute on a weight}}
func.func @frozen_input(%x: tensor<4xf32> {memwall.frozen, memwall.kind = #memwall.arg_kind<input>}) {
  return
}
// -----

func.func @sliding_window_without_causal(%q: tensor<1x4x8x16xbf16>) {
  // expected-error @below {{a sliding window needs causal attention}}
  %0 = memwall.attention %q, %q, %q window 4 : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----

func.func @sliding_window_of_no_keys(%q: tensor<1x4x8x16xbf16>) {
  // expected-error @below {{window must be a positive number of keys, got 0}}
  %0 = memwall.attention %q, %q, %q causal window 0 : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----

func.func @sliding_window_negative(%q: tensor<1x4x8x16xbf16>, %lse: tensor<1x4x8xf32>) {
  // expected-error @below {{window must be a positive number of keys, got -3}}
  %0:2 = memwall.flash_attention %q, %q, %q causal window -3 scale 0.25 block_q 16 block_kv 16 splits 1 : (tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>) -> (tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>)
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
  // expected-error @below {{'memwall.fused' must be a unit attribute on a function or module}}
  %0 = memwall.relu %a {memwall.fused} : tensor<4x8xf32>
  return
}
// -----

// expected-error @below {{'memwall.kind' of argument #0 must be #memwall.arg_kind<weight|input|kv_cache|optimizer_state>, got "weight"}}
func.func @bad_kind(%a: tensor<4xf32> {memwall.kind = "weight"}) {
  return
}
// -----

// expected-error @below {{unknown memwall argument attribute 'memwall.role'}}
func.func @unknown_arg_attr(%a: tensor<4xf32> {memwall.role = 1}) {
  return
}
// -----

// expected-error @below {{expected one of [weight, input, kv_cache, optimizer_state] for role of a function argument, got: bias}}
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

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

// -----
// transpose_rhs reads K from the last dimension of rhs: [16, 9] has K = 9.
func.func @matmul_transposed_k(%a: tensor<4x8xbf16>, %b: tensor<16x9xbf16>) {
  // expected-error @below {{contraction dimensions differ: lhs has K = 8, rhs has K = 9}}
  %0 = memwall.matmul %a, %b {transpose_rhs} : tensor<4x8xbf16>, tensor<16x9xbf16> -> tensor<4x16xbf16>
  return
}
// -----
func.func @matmul_bias_rank2(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %c: tensor<1x16xbf16>) {
  // expected-error @below {{bias must have shape [16], got [1, 16]}}
  %0 = memwall.matmul %a, %b bias %c : tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<1x16xbf16> -> tensor<4x16xbf16>
  return
}
// -----
// int8 products accumulate in i32: an f32 result disagrees with inference.
func.func @matmul_int8_result(%a: tensor<4x8xi8>, %b: tensor<8x16xi8>) {
  // expected-error @below {{result type 'tensor<4x16xf32>' does not match the inferred type 'tensor<4x16xi32>'}}
  %0 = memwall.matmul %a, %b : tensor<4x8xi8>, tensor<8x16xi8> -> tensor<4x16xf32>
  return
}
// -----
func.func @matmul_int8_narrow_result(%a: tensor<4x8xi8>, %b: tensor<8x16xi8>) {
  // expected-error @below {{result #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 32-bit signless integer values}}
  %0 = memwall.matmul %a, %b : tensor<4x8xi8>, tensor<8x16xi8> -> tensor<4x16xi8>
  return
}
// -----
func.func @matmul_f64(%a: tensor<4x8xf64>, %b: tensor<8x16xf64>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of}}
  %0 = memwall.matmul %a, %b : tensor<4x8xf64>, tensor<8x16xf64> -> tensor<4x16xf64>
  return
}
// -----
func.func @matmul_dynamic_rhs(%a: tensor<4x8xbf16>, %b: tensor<8x?xbf16>) {
  // expected-error @below {{operand #1 must be statically shaped tensor}}
  %0 = memwall.matmul %a, %b : tensor<4x8xbf16>, tensor<8x?xbf16> -> tensor<4x?xbf16>
  return
}
// -----
// Batch dimensions broadcast to [2, 3]: a result that drops one is wrong.
func.func @matmul_batch_result(%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x16xf32>) {
  // expected-error @below {{result type 'tensor<2x4x16xf32>' does not match the inferred type 'tensor<2x3x4x16xf32>'}}
  %0 = memwall.matmul %a, %b : tensor<2x1x4x8xf32>, tensor<3x8x16xf32> -> tensor<2x4x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// -----
func.func @add_result(%a: tensor<4x1xf32>, %b: tensor<1x8xf32>) {
  // expected-error @below {{result type 'tensor<4x1xf32>' does not match the inferred type 'tensor<4x8xf32>'}}
  %0 = memwall.add %a, %b : tensor<4x1xf32>, tensor<1x8xf32> -> tensor<4x1xf32>
  return
}
// -----
func.func @div_dynamic(%a: tensor<4x?xf32>) {
  // expected-error @below {{operand #0 must be statically shaped tensor}}
  %0 = memwall.div %a, %a : tensor<4x?xf32>, tensor<4x?xf32> -> tensor<4x?xf32>
  return
}
// -----
func.func @scale_result(%a: tensor<4xf32>) {
  // expected-error @below {{requires the same type for all operands and results}}
  %0 = "memwall.scale"(%a) <{factor = 2.0 : f64}> : (tensor<4xf32>) -> tensor<4xbf16>
  return
}
// -----
func.func @relu_result(%a: tensor<4x8xbf16>) {
  // expected-error @below {{requires the same type for all operands and results}}
  %0 = "memwall.relu"(%a) : (tensor<4x8xbf16>) -> tensor<8x4xbf16>
  return
}
// -----
func.func @tanh_i1(%a: tensor<4xi1>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = memwall.tanh %a : tensor<4xi1>
  return
}
// -----
func.func @swiglu_dynamic(%a: tensor<?x8xf16>) {
  // expected-error @below {{operand #0 must be statically shaped tensor}}
  %0 = memwall.swiglu %a, %a : tensor<?x8xf16>
  return
}
// -----
// 0x7FF8000000000000 is NaN, which is not in [0, 1).
func.func @dropout_nan(%a: tensor<4x8xbf16>) {
  // expected-error @below {{rate must be in [0, 1), got nan}}
  %0 = memwall.dropout %a rate 0x7FF8000000000000 : tensor<4x8xbf16>
  return
}

//===----------------------------------------------------------------------===//
// Norms, softmax, reduce
//===----------------------------------------------------------------------===//

// -----
func.func @layer_norm_rank0(%a: tensor<bf16>, %w: tensor<8xbf16>) {
  // expected-error @below {{input must have rank >= 1}}
  %0 = memwall.layer_norm %a, %w : tensor<bf16>, tensor<8xbf16>
  return
}
// -----
func.func @layer_norm_eps_nan(%a: tensor<4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @below {{epsilon must be a positive finite number, got nan}}
  %0 = memwall.layer_norm %a, %w eps 0x7FF8000000000000 : tensor<4x8xbf16>, tensor<8xbf16>
  return
}
// -----
func.func @rms_norm_eps_inf(%a: tensor<4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @below {{epsilon must be a positive finite number, got INF}}
  %0 = memwall.rms_norm %a, %w eps 0x7FF0000000000000 : tensor<4x8xbf16>, tensor<8xbf16>
  return
}
// -----
func.func @layer_norm_int_weight(%a: tensor<4x8xbf16>, %w: tensor<8xi32>) {
  // expected-error @below {{operand #1 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = memwall.layer_norm %a, %w : tensor<4x8xbf16>, tensor<8xi32>
  return
}
// -----
// The result of a norm has the input's type, not the (wider) weight's.
func.func @layer_norm_result(%a: tensor<4x8xbf16>, %w: tensor<8xf32>) {
  // expected-error @below {{'memwall.layer_norm' op inferred type(s) 'tensor<4x8xbf16>' are incompatible with return type(s) of operation 'tensor<4x8xf32>'}}
  // expected-error @below {{'memwall.layer_norm' op failed to infer returned types}}
  %0 = "memwall.layer_norm"(%a, %w) <{epsilon = 1.0e-5 : f64}> : (tensor<4x8xbf16>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}
// -----
func.func @rms_norm_dynamic_weight(%a: tensor<4x8xbf16>, %w: tensor<?xbf16>) {
  // expected-error @below {{operand #1 must be statically shaped tensor}}
  %0 = memwall.rms_norm %a, %w : tensor<4x8xbf16>, tensor<?xbf16>
  return
}
// -----
func.func @softmax_negative_axis(%a: tensor<4x8xbf16>) {
  // expected-error @below {{axis -3 is out of range for rank 2}}
  %0 = memwall.softmax %a axis -3 : tensor<4x8xbf16>
  return
}
// -----
func.func @reduce_keep_dims_result(%a: tensor<4x8xf32>) {
  // expected-error @below {{result type 'tensor<4xf32>' does not match the inferred type 'tensor<4x1xf32>'}}
  %0 = memwall.reduce sum %a axes [1] keep_dims : tensor<4x8xf32> -> tensor<4xf32>
  return
}
// -----
func.func @reduce_axis_past_end(%a: tensor<4x8xf32>) {
  // expected-error @below {{axis 2 is out of range for rank 2}}
  %0 = memwall.reduce max %a axes [0, 2] : tensor<4x8xf32> -> tensor<f32>
  return
}

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

// -----
func.func @attention_zero_kv_heads(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x0x8x16xbf16>) {
  // expected-error @below {{query heads (4) must be a multiple of key/value heads (0)}}
  %0 = memwall.attention %q, %k, %k : tensor<1x4x8x16xbf16>, tensor<1x0x8x16xbf16>, tensor<1x0x8x16xbf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----
// More KV heads than query heads is not grouped-query attention.
func.func @attention_more_kv_heads(%q: tensor<1x2x8x16xbf16>, %k: tensor<1x4x8x16xbf16>) {
  // expected-error @below {{query heads (2) must be a multiple of key/value heads (4)}}
  %0 = memwall.attention %q, %k, %k : tensor<1x2x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16> -> tensor<1x2x8x16xbf16>
  return
}
// -----
func.func @attention_scale_zero(%q: tensor<1x4x8x16xbf16>) {
  // expected-error @below {{scale must be a positive finite number, got 0}}
  %0 = memwall.attention %q, %q, %q scale 0.0 : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----
func.func @attention_scale_inf(%q: tensor<1x4x8x16xbf16>) {
  // expected-error @below {{scale must be a positive finite number, got INF}}
  %0 = memwall.attention %q, %q, %q scale 0x7FF0000000000000 : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----
// The mask must have rank 4 even where a lower rank would broadcast.
func.func @attention_mask_rank3(%q: tensor<1x4x8x16xbf16>, %m: tensor<4x8x8xi1>) {
  // expected-error @below {{mask of shape [4, 8, 8] does not broadcast to the scores [1, 4, 8, 8]}}
  %0 = memwall.attention %q, %q, %q mask %m : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<4x8x8xi1> -> tensor<1x4x8x16xbf16>
  return
}
// -----
// A mask larger than the scores does not broadcast to them.
func.func @attention_mask_too_big(%q: tensor<1x4x8x16xbf16>, %m: tensor<2x4x8x8xi1>) {
  // expected-error @below {{mask of shape [2, 4, 8, 8] does not broadcast to the scores [1, 4, 8, 8]}}
  %0 = memwall.attention %q, %q, %q mask %m : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<2x4x8x8xi1> -> tensor<1x4x8x16xbf16>
  return
}
// -----
func.func @attention_mask_i8(%q: tensor<1x4x8x16xbf16>, %m: tensor<1x1x8x8xi8>) {
  // expected-error @below {{operand #3 must be statically shaped tensor of 1-bit signless integer or 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = memwall.attention %q, %q, %q mask %m : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x1x8x8xi8> -> tensor<1x4x8x16xbf16>
  return
}
// -----
// fp8 attention returns bf16, so an fp16 mask has the wrong type.
func.func @attention_fp8_mask(%q: tensor<1x4x8x16xf8E4M3FN>, %m: tensor<1x1x8x8xf16>) {
  // expected-error @below {{mask must be i1 or have the result element type 'bf16'}}
  %0 = memwall.attention %q, %q, %q mask %m : tensor<1x4x8x16xf8E4M3FN>, tensor<1x4x8x16xf8E4M3FN>, tensor<1x4x8x16xf8E4M3FN>, tensor<1x1x8x8xf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----
func.func @attention_result(%q: tensor<1x4x8x16xbf16>, %v: tensor<1x4x8x32xbf16>) {
  // expected-error @below {{result type 'tensor<1x4x8x16xbf16>' does not match the inferred type 'tensor<1x4x8x32xbf16>'}}
  %0 = memwall.attention %q, %q, %v : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x32xbf16> -> tensor<1x4x8x16xbf16>
  return
}
// -----
func.func @attention_int8(%q: tensor<1x4x8x16xi8>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values}}
  %0 = memwall.attention %q, %q, %q : tensor<1x4x8x16xi8>, tensor<1x4x8x16xi8>, tensor<1x4x8x16xi8> -> tensor<1x4x8x16xf32>
  return
}
// -----
func.func @attention_dynamic(%q: tensor<1x4x?x16xf16>) {
  // expected-error @below {{operand #0 must be statically shaped tensor}}
  %0 = memwall.attention %q, %q, %q : tensor<1x4x?x16xf16>, tensor<1x4x?x16xf16>, tensor<1x4x?x16xf16> -> tensor<1x4x?x16xf16>
  return
}

//===----------------------------------------------------------------------===//
// rope, embedding, kv_cache_append, cross_entropy
//===----------------------------------------------------------------------===//

// -----
func.func @rope_batch_positions(%x: tensor<2x4x8x16xbf16>, %p: tensor<3x8xi64>) {
  // expected-error @below {{positions must have shape [8] or [2, 8], got [3, 8]}}
  %0 = memwall.rope %x, %p : tensor<2x4x8x16xbf16>, tensor<3x8xi64>
  return
}
// -----
func.func @rope_positions_rank3(%x: tensor<1x4x8x16xbf16>, %p: tensor<1x1x8xi64>) {
  // expected-error @below {{positions must have shape [8] or [1, 8], got [1, 1, 8]}}
  %0 = memwall.rope %x, %p : tensor<1x4x8x16xbf16>, tensor<1x1x8xi64>
  return
}
// -----
func.func @rope_theta_negative(%x: tensor<1x4x8x16xbf16>, %p: tensor<8xi32>) {
  // expected-error @below {{theta must be a positive finite number, got -1.000000e+04}}
  %0 = memwall.rope %x, %p theta -10000.0 : tensor<1x4x8x16xbf16>, tensor<8xi32>
  return
}
// -----
func.func @embedding_float_indices(%t: tensor<10x4xbf16>, %i: tensor<3xf32>) {
  // expected-error @below {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = memwall.embedding %t[%i] : tensor<10x4xbf16>, tensor<3xf32> -> tensor<3x4xbf16>
  return
}
// -----
func.func @embedding_int_table(%t: tensor<10x4xi32>, %i: tensor<3xi64>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of}}
  %0 = memwall.embedding %t[%i] : tensor<10x4xi32>, tensor<3xi64> -> tensor<3x4xi32>
  return
}
// -----
// Rows have the table's width D = 4, not its vocabulary V = 10.
func.func @embedding_result(%t: tensor<10x4xbf16>, %i: tensor<3xi64>) {
  // expected-error @below {{result type 'tensor<3x10xbf16>' does not match the inferred type 'tensor<3x4xbf16>'}}
  %0 = memwall.embedding %t[%i] : tensor<10x4xbf16>, tensor<3xi64> -> tensor<3x10xbf16>
  return
}
// -----
func.func @kv_cache_append_result(%c: tensor<1x2x8x16xbf16>, %u: tensor<1x2x3x16xbf16>) {
  // expected-error @below {{result type 'tensor<1x2x9x16xbf16>' does not match the inferred type 'tensor<1x2x11x16xbf16>'}}
  %0 = memwall.kv_cache_append %c, %u : tensor<1x2x8x16xbf16>, tensor<1x2x3x16xbf16> -> tensor<1x2x9x16xbf16>
  return
}
// -----
func.func @kv_cache_append_int8(%c: tensor<1x2x8x16xi8>, %u: tensor<1x2x1x16xi8>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of}}
  %0 = memwall.kv_cache_append %c, %u : tensor<1x2x8x16xi8>, tensor<1x2x1x16xi8> -> tensor<1x2x9x16xi8>
  return
}
// -----
func.func @kv_cache_append_head_dim(%c: tensor<1x2x8x16xbf16>, %u: tensor<1x2x1x8xbf16>) {
  // expected-error @below {{cache [1, 2, 8, 16] and update [1, 2, 1, 8] must agree on every dimension but 2}}
  %0 = memwall.kv_cache_append %c, %u : tensor<1x2x8x16xbf16>, tensor<1x2x1x8xbf16> -> tensor<1x2x9x16xbf16>
  return
}
// -----
// Rank-0 logits have no class dimension.
func.func @cross_entropy_rank0(%l: tensor<f32>, %y: tensor<i64>) {
  // expected-error @below {{labels shape [] must equal the logits shape without its class dimension []}}
  %0 = memwall.cross_entropy %l, %y : tensor<f32>, tensor<i64> -> tensor<f32>
  return
}
// -----
func.func @cross_entropy_mean_result(%l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @below {{result type 'tensor<4xf32>' does not match the inferred type 'tensor<f32>'}}
  %0 = memwall.cross_entropy %l, %y : tensor<4x10xf32>, tensor<4xi64> -> tensor<4xf32>
  return
}
// -----
func.func @cross_entropy_bf16_loss(%l: tensor<4x10xbf16>, %y: tensor<4xi64>) {
  // expected-error @below {{result #0 must be statically shaped tensor of 32-bit float values}}
  %0 = memwall.cross_entropy %l, %y : tensor<4x10xbf16>, tensor<4xi64> -> tensor<bf16>
  return
}
// -----
func.func @cross_entropy_i16_labels(%l: tensor<4x10xf32>, %y: tensor<4xi16>) {
  // expected-error @below {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = memwall.cross_entropy %l, %y : tensor<4x10xf32>, tensor<4xi16> -> tensor<f32>
  return
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// -----
// Same element count, but the declared result is not the requested shape.
func.func @reshape_result(%a: tensor<4x2xf32>) {
  // expected-error @below {{result type 'tensor<2x4xf32>' does not match the inferred type 'tensor<8xf32>'}}
  %0 = memwall.reshape %a [8] : tensor<4x2xf32> -> tensor<2x4xf32>
  return
}
// -----
func.func @reshape_element_type(%a: tensor<4x2xf32>) {
  // expected-error @below {{result type 'tensor<8xbf16>' does not match the inferred type 'tensor<8xf32>'}}
  %0 = memwall.reshape %a [8] : tensor<4x2xf32> -> tensor<8xbf16>
  return
}
// -----
func.func @transpose_out_of_range(%a: tensor<4x2xf32>) {
  // expected-error @below {{permutation [0, 2] is not a permutation of the 2 input dimensions}}
  %0 = memwall.transpose %a [0, 2] : tensor<4x2xf32> -> tensor<4x2xf32>
  return
}
// -----
func.func @transpose_result(%a: tensor<4x2xf32>) {
  // expected-error @below {{result type 'tensor<4x2xf32>' does not match the inferred type 'tensor<2x4xf32>'}}
  %0 = memwall.transpose %a [1, 0] : tensor<4x2xf32> -> tensor<4x2xf32>
  return
}
// -----
func.func @transpose_f64(%a: tensor<4x2xf64>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of}}
  %0 = memwall.transpose %a [1, 0] : tensor<4x2xf64> -> tensor<2x4xf64>
  return
}
// -----
func.func @slice_negative_offset(%a: tensor<4x2xf32>) {
  // expected-error @below {{dimension 1: offset must be >= 0, size and stride >= 1}}
  %0 = memwall.slice %a offsets [0, -1] sizes [4, 1] : tensor<4x2xf32> -> tensor<4x1xf32>
  return
}
// -----
func.func @slice_empty(%a: tensor<4x2xf32>) {
  // expected-error @below {{dimension 0: offset must be >= 0, size and stride >= 1}}
  %0 = memwall.slice %a offsets [0, 0] sizes [0, 2] : tensor<4x2xf32> -> tensor<0x2xf32>
  return
}
// -----
// Offsets 1, 3, 5: the stride carries the last index past the end.
func.func @slice_strided_past_end(%a: tensor<4x2xf32>) {
  // expected-error @below {{dimension 0: slice reaches index 5 of a dimension of size 4}}
  %0 = memwall.slice %a offsets [1, 0] sizes [3, 2] strides [2, 1] : tensor<4x2xf32> -> tensor<3x2xf32>
  return
}
// -----
func.func @slice_strides_count(%a: tensor<4x2xf32>) {
  // expected-error @below {{offsets, sizes and strides must each have 2 entries (the input rank)}}
  %0 = memwall.slice %a offsets [0, 0] sizes [2, 2] strides [1] : tensor<4x2xf32> -> tensor<2x2xf32>
  return
}
// -----
func.func @slice_result(%a: tensor<4x2xf32>) {
  // expected-error @below {{result type 'tensor<4x2xf32>' does not match the inferred type 'tensor<2x2xf32>'}}
  %0 = memwall.slice %a offsets [0, 0] sizes [2, 2] : tensor<4x2xf32> -> tensor<4x2xf32>
  return
}
// -----
func.func @concat_no_inputs() {
  // expected-error @below {{needs at least one input}}
  %0 = "memwall.concat"() <{axis = 0 : i64}> : () -> tensor<4xf32>
  return
}
// -----
func.func @concat_rank(%a: tensor<4x2xf32>, %b: tensor<4x2x1xf32>) {
  // expected-error @below {{input #1 differs in element type or rank from input #0}}
  %0 = memwall.concat %a, %b axis 0 : tensor<4x2xf32>, tensor<4x2x1xf32> -> tensor<8x2xf32>
  return
}
// -----
// The third input is the one that disagrees.
func.func @concat_third_input(%a: tensor<4x2xf32>, %b: tensor<4x3xf32>) {
  // expected-error @below {{input #2 has shape [4, 3], which differs from [4, 2] outside axis 0}}
  %0 = memwall.concat %a, %a, %b axis 0 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x3xf32> -> tensor<12x2xf32>
  return
}
// -----
func.func @concat_result(%a: tensor<4x2xf32>) {
  // expected-error @below {{result type 'tensor<4x4xf32>' does not match the inferred type 'tensor<8x2xf32>'}}
  %0 = memwall.concat %a, %a axis -2 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  return
}
// -----
func.func @concat_dynamic(%a: tensor<4x?xf32>) {
  // expected-error @below {{operand #0 must be variadic of statically shaped tensor}}
  %0 = memwall.concat %a axis 0 : tensor<4x?xf32> -> tensor<4x?xf32>
  return
}
// -----
func.func @cast_result(%a: tensor<4x2xf32>) {
  // expected-error @below {{result type 'tensor<4x2xf16>' does not match the inferred type 'tensor<4x2xbf16>'}}
  %0 = memwall.cast %a to bf16 : tensor<4x2xf32> -> tensor<4x2xf16>
  return
}
// -----
func.func @cast_to_i1(%a: tensor<4x2xf32>) {
  // expected-error @below {{attribute 'element_type' failed to satisfy constraint}}
  %0 = memwall.cast %a to i1 : tensor<4x2xf32> -> tensor<4x2xi1>
  return
}
// -----
func.func @cast_from_f64(%a: tensor<4x2xf64>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of}}
  %0 = memwall.cast %a to f32 : tensor<4x2xf64> -> tensor<4x2xf32>
  return
}

//===----------------------------------------------------------------------===//
// Dialect attributes
//===----------------------------------------------------------------------===//

// -----
// memwall.kind belongs on function arguments, not on ops.
func.func @kind_on_op(%a: tensor<4x8xf32>) {
  // expected-error @below {{unknown memwall attribute 'memwall.kind'}}
  %0 = memwall.relu %a {memwall.kind = #memwall.arg_kind<weight>} : tensor<4x8xf32>
  return
}
// -----
// memwall.cost belongs on ops, not on function arguments.
// expected-error @below {{unknown memwall argument attribute 'memwall.cost'}}
func.func @cost_on_arg(%a: tensor<4xf32> {memwall.cost = #memwall.cost<flops = 1, bytes_read = 0, bytes_written = 0, intensity = 1.0, bound = memory, time_s = 1.0>}) {
  return
}
// -----
// The diagnostic names the argument that is wrong.
// expected-error @below {{'memwall.kind' of argument #1 must be #memwall.arg_kind<weight|input|kv_cache|optimizer_state>, got 1 : i32}}
func.func @kind_integer(%a: tensor<4xf32> {memwall.kind = #memwall.arg_kind<input>}, %b: tensor<4xf32> {memwall.kind = 1 : i32}) {
  return
}
// -----
// An attribute of the right dialect but the wrong kind.
// expected-error @below {{'memwall.kind' of argument #0 must be #memwall.arg_kind<weight|input|kv_cache|optimizer_state>, got #memwall.cost<}}
func.func @kind_is_cost(%a: tensor<4xf32> {memwall.kind = #memwall.cost<flops = 1, bytes_read = 0, bytes_written = 0, intensity = 1.0, bound = memory, time_s = 1.0>}) {
  return
}
// -----
func.func @cost_is_kind(%a: tensor<4x8xf32>) {
  // expected-error @below {{'memwall.cost' must be a #memwall.cost attribute}}
  %0 = memwall.relu %a {memwall.cost = #memwall.arg_kind<weight>} : tensor<4x8xf32>
  return
}
// -----
func.func @cost_negative_bytes_read(%a: tensor<4x8xf32>) {
  // expected-error @below {{flops and bytes must be non-negative}}
  %0 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 1, bytes_read = -3, bytes_written = 0, intensity = 1.0, bound = memory, time_s = 1.0>} : tensor<4x8xf32>
  return
}
// -----
func.func @cost_negative_bytes_written(%a: tensor<4x8xf32>) {
  // expected-error @below {{flops and bytes must be non-negative}}
  %0 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 1, bytes_read = 0, bytes_written = -1, intensity = 1.0, bound = memory, time_s = 1.0>} : tensor<4x8xf32>
  return
}
// -----
func.func @cost_negative_intensity(%a: tensor<4x8xf32>) {
  // expected-error @below {{intensity must be finite and non-negative}}
  %0 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 1, bytes_read = 0, bytes_written = 0, intensity = -1, bound = memory, time_s = 1.0>} : tensor<4x8xf32>
  return
}
// -----
func.func @cost_negative_time(%a: tensor<4x8xf32>) {
  // expected-error @below {{time_s must be finite and non-negative}}
  %0 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 1, bytes_read = 0, bytes_written = 0, intensity = 1.0, bound = memory, time_s = -2>} : tensor<4x8xf32>
  return
}
// -----
func.func @cost_fractional_flops(%a: tensor<4x8xf32>) {
  // expected-error @below {{expected integer value}}
  %0 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 1.5, bytes_read = 0, bytes_written = 0, intensity = 1.0, bound = memory, time_s = 1.0>} : tensor<4x8xf32>
  return
}
// -----
func.func @cost_missing_field(%a: tensor<4x8xf32>) {
  // expected-error @below {{expected 'bytes_read'}}
  %0 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 1, bytes_written = 0, intensity = 1.0, bound = memory, time_s = 1.0>} : tensor<4x8xf32>
  return
}
// -----
func.func @cost_bound_string(%a: tensor<4x8xf32>) {
  // expected-error @below {{bound must be 'memory' or 'compute', got 'latency'}}
  %0 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 1, bytes_read = 0, bytes_written = 0, intensity = 1.0, bound = "latency", time_s = 1.0>} : tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Regressions: overflow, operand naming and cost-literal parsing.
//===----------------------------------------------------------------------===//

// -----
// The last index offset + (size - 1) * stride = 1 + (2^63 - 1) overflows
// int64; it must still be reported as out of bounds.
func.func @regression_slice_index_overflow(%a: tensor<4xf32>) {
  // expected-error @below {{dimension 0: slice reaches index}}
  %0 = memwall.slice %a offsets [1] sizes [2] strides [9223372036854775807] : tensor<4xf32> -> tensor<2xf32>
  return
}
// -----
// 274177 * 67280421310721 = 2^64 + 1 would wrap to 1 element.
func.func @regression_reshape_count_overflow(%a: tensor<1xf32>) {
  // expected-error @below {{cannot reshape [1] (1 elements) to [274177, 67280421310721] (more than 2^63 elements)}}
  %0 = memwall.reshape %a [274177, 67280421310721] : tensor<1xf32> -> tensor<274177x67280421310721xf32>
  return
}
// -----
// The diagnostic names the operand ("input"), not its C++ accessor.
func.func @regression_layer_norm_dynamic_input_name(%a: tensor<?x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @below {{input must be a statically shaped tensor}}
  %0 = memwall.layer_norm %a, %w : tensor<?x8xbf16>, tensor<8xbf16>
  return
}
// -----
func.func @regression_rope_dynamic_input_name(%x: tensor<1x4x?x16xbf16>, %p: tensor<8xi64>) {
  // expected-error @below {{input must be a statically shaped tensor}}
  %0 = memwall.rope %x, %p : tensor<1x4x?x16xbf16>, tensor<8xi64>
  return
}
// -----
// A negative fractional intensity reaches the verifier.
func.func @regression_cost_negative_fractional_intensity(%a: tensor<4x8xf32>) {
  // expected-error @below {{intensity must be finite and non-negative}}
  %0 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 1, bytes_read = 0, bytes_written = 0, intensity = -0.5, bound = memory, time_s = 1.0>} : tensor<4x8xf32>
  return
}
// -----
// 0x7FF0000000000000 is MLIR's spelling of +inf: not a valid time.
func.func @regression_cost_infinite_time(%a: tensor<4x8xf32>) {
  // expected-error @below {{time_s must be finite and non-negative}}
  %0 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 1, bytes_read = 0, bytes_written = 0, intensity = 1.0, bound = memory, time_s = 0x7FF0000000000000>} : tensor<4x8xf32>
  return
}

// -----

func.func @dequantize_rank(%q: tensor<16x32xi8>, %s: tensor<16xbf16>) {
  // expected-error @below {{scales must have the input's rank (2), not 1}}
  %0 = memwall.dequantize %q, %s : tensor<16x32xi8>, tensor<16xbf16> -> tensor<16x32xbf16>
  return
}

// -----

func.func @dequantize_blocks(%q: tensor<16x32xi8>, %s: tensor<16x3xbf16>) {
  // expected-error @below {{scales dim 1 (3) must divide the input's (32)}}
  %0 = memwall.dequantize %q, %s : tensor<16x32xi8>, tensor<16x3xbf16> -> tensor<16x32xbf16>
  return
}

// -----

func.func @dequantize_zero_points(%q: tensor<16x32xi8>, %s: tensor<16x1xbf16>, %z: tensor<16x2xbf16>) {
  // expected-error @below {{zero points must have the scales' type 'tensor<16x1xbf16>', not 'tensor<16x2xbf16>'}}
  %0 = memwall.dequantize %q, %s zero_points %z : tensor<16x32xi8>, tensor<16x1xbf16>, tensor<16x2xbf16> -> tensor<16x32xbf16>
  return
}

// -----

func.func @dequantize_shape(%q: tensor<16x32xi8>, %s: tensor<16x1xbf16>) {
  // expected-error @below {{result shape must be the input's}}
  %0 = memwall.dequantize %q, %s : tensor<16x32xi8>, tensor<16x1xbf16> -> tensor<32x16xbf16>
  return
}

// -----

func.func @dequantize_codebook_storage(%q: tensor<16x32xf8E4M3FN>, %s: tensor<16x1xbf16>) {
  // expected-error @below {{a codebook maps i4 or i8 codes, not 'f8E4M3FN'}}
  %0 = memwall.dequantize %q, %s {codebook = array<f32: 0.0, 1.0>} : tensor<16x32xf8E4M3FN>, tensor<16x1xbf16> -> tensor<16x32xbf16>
  return
}

// -----

func.func @dequantize_codebook_size(%q: tensor<16x32xi4>, %s: tensor<16x1xbf16>) {
  // expected-error @below {{a codebook for 'i4' codes has 16 values, not 3}}
  %0 = memwall.dequantize %q, %s {codebook = array<f32: -1.0, 0.0, 1.0>} : tensor<16x32xi4>, tensor<16x1xbf16> -> tensor<16x32xbf16>
  return
}

// -----

func.func @dequantize_codebook_finite(%q: tensor<16x32xi4>, %s: tensor<16x1xbf16>) {
  // expected-error @below {{codebook values must be finite}}
  %0 = memwall.dequantize %q, %s {codebook = array<f32: 0x7F800000, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0>} : tensor<16x32xi4>, tensor<16x1xbf16> -> tensor<16x32xbf16>
  return
}

// -----

func.func @dequantize_codebook_zero_points(%q: tensor<16x32xi4>, %s: tensor<16x1xbf16>) {
  // expected-error @below {{a codebook dequantize takes no zero points}}
  %0 = memwall.dequantize %q, %s zero_points %s {codebook = array<f32: -1.0, -0.9, -0.8, -0.7, -0.6, -0.5, -0.4, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 1.0>} : tensor<16x32xi4>, tensor<16x1xbf16>, tensor<16x1xbf16> -> tensor<16x32xbf16>
  return
}

// -----

func.func @dequantize_float_storage(%q: tensor<16x32xbf16>, %s: tensor<16x1xbf16>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of 4-bit signless integer or 8-bit signless integer or f8E4M3FN type or f8E5M2 type values}}
  %0 = memwall.dequantize %q, %s : tensor<16x32xbf16>, tensor<16x1xbf16> -> tensor<16x32xbf16>
  return
}

// -----

func.func @linear_cross_entropy_mixed_types(%h: tensor<4x8xbf16>, %w: tensor<16x8xf32>, %y: tensor<4xi64>) {
  // expected-error @below {{hidden and weight must share an element type, got 'bf16' and 'f32'}}
  %0, %1 = memwall.linear_cross_entropy %h, %w, %y transpose_weight : tensor<4x8xbf16>, tensor<16x8xf32>, tensor<4xi64> -> tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @linear_cross_entropy_labels_shape(%h: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %y: tensor<5xi64>) {
  // expected-error @below {{labels shape [5] must equal the hidden shape without its last dimension [4]}}
  %0, %1 = memwall.linear_cross_entropy %h, %w, %y transpose_weight : tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<5xi64> -> tensor<f32>, tensor<5xf32>
  return
}

// -----

func.func @linear_cross_entropy_weight_rank(%h: tensor<4x8xbf16>, %w: tensor<2x16x8xbf16>, %y: tensor<4xi64>) {
  // expected-error @below {{weight must have rank 2 ([V, D] with transpose_weight, else [D, V]), got rank 3}}
  %0, %1 = memwall.linear_cross_entropy %h, %w, %y transpose_weight : tensor<4x8xbf16>, tensor<2x16x8xbf16>, tensor<4xi64> -> tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @linear_cross_entropy_none_result(%h: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %y: tensor<4xi64>) {
  // expected-error @below {{result type 'tensor<f32>', 'tensor<4xf32>' does not match the inferred type 'tensor<4xf32>', 'tensor<4xf32>'}}
  %0, %1 = memwall.linear_cross_entropy %h, %w, %y none transpose_weight : tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<4xi64> -> tensor<f32>, tensor<4xf32>
  return
}
