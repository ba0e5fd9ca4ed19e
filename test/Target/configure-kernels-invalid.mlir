// Ops codegen cannot run: one error per distinct message at its first op,
// the repeats counted once on the function.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-configure-kernels))' -split-input-file -verify-diagnostics

// expected-error @+1 {{codegen cannot run 1 more op of @repeats for the reasons above}}
func.func @repeats(%q: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{codegen runs attention only in its tiled form (memwall.flash_attention); this one stayed untiled}}
  %0 = memwall.attention %q, %q, %q causal : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  %1 = memwall.attention %0, %0, %0 causal : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %1 : tensor<1x2x8x16xf32>
}

// -----

// A constant runs as a fill kernel only when it is one repeated value of a
// type the kernel stores.
func.func @distinct_constant() -> tensor<4xf32> {
  // expected-error @+1 {{codegen fills only tensor constants of one repeated value}}
  %0 = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @fp8_constant() -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{codegen fills bf16, f16, f32 or whole-byte integer tensors, not f8E4M3FN}}
  %0 = arith.constant dense<1.0> : tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}

// -----

// AdamW updates its state in place: state computed in the step has no
// buffer of its own to update.
func.func @adamw_state_not_an_argument(%p: tensor<64xf32>, %g: tensor<64xf32>, %m: tensor<64xf32>) -> tensor<64xf32> {
  %v = memwall.mul %m, %m : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  // expected-error @+1 {{codegen updates AdamW's param, moments and master weights in place, so each must be a function argument}}
  %p2, %m2, %v2 = memwall.adamw %p, %g, %m, %v lr 1.0e-03 : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
  return %p2 : tensor<64xf32>
}

// -----

// A norm gradient holds its row in registers: 20480 f32 would spill.
func.func @norm_grad_row_too_long(%x: tensor<2x20480xf32>, %w: tensor<20480xf32>) -> tensor<2x20480xf32> {
  // expected-error @+1 {{codegen cannot run 'memwall.layer_norm_grad': rows of 20480 elements need about 272 registers per thread and would spill}}
  %dx, %dw, %db = memwall.layer_norm_grad %x, %w, %x has_bias : (tensor<2x20480xf32>, tensor<20480xf32>, tensor<2x20480xf32>) -> (tensor<2x20480xf32>, tensor<20480xf32>, tensor<20480xf32>)
  return %dx : tensor<2x20480xf32>
}

// -----

// Attention's backward off tensor cores (f32) holds its tiles in 40 KiB of
// shared memory; a head dim that is not a multiple of 8 has no tiles either.
func.func @attention_grad_shared_memory(%q: tensor<1x2x16x256xf32>, %lse: tensor<1x2x16xf32>, %mask: tensor<1x1x16x16xi1>) -> tensor<1x2x16x256xf32> {
  // expected-error @+1 {{codegen cannot run attention's backward with head dims of 256 and 256 (its tiles must fit in 40 KiB of shared memory)}}
  %dq, %dk, %dv = memwall.flash_attention_grad %q, %q, %q, %q, %q, %lse mask %mask scale 0.125 block_q 64 block_kv 64 : (tensor<1x2x16x256xf32>, tensor<1x2x16x256xf32>, tensor<1x2x16x256xf32>, tensor<1x2x16x256xf32>, tensor<1x2x16x256xf32>, tensor<1x2x16xf32>, tensor<1x1x16x16xi1>) -> (tensor<1x2x16x256xf32>, tensor<1x2x16x256xf32>, tensor<1x2x16x256xf32>)
  return %dq : tensor<1x2x16x256xf32>
}

// -----

func.func @attention_grad_head_dim(%q: tensor<1x2x16x12xf32>, %lse: tensor<1x2x16xf32>) -> tensor<1x2x16x12xf32> {
  // expected-error @+1 {{codegen cannot run attention's backward with head dims that are not multiples of 8 (got 12 and 12)}}
  %dq, %dk, %dv = memwall.flash_attention_grad %q, %q, %q, %q, %q, %lse causal scale 0.125 block_q 64 block_kv 64 : (tensor<1x2x16x12xf32>, tensor<1x2x16x12xf32>, tensor<1x2x16x12xf32>, tensor<1x2x16x12xf32>, tensor<1x2x16x12xf32>, tensor<1x2x16xf32>) -> (tensor<1x2x16x12xf32>, tensor<1x2x16x12xf32>, tensor<1x2x16x12xf32>)
  return %dq : tensor<1x2x16x12xf32>
}

// -----

// adamw runs after the last other reader of the state it overwrites; the
// updated weight read before the old one's last reader has no such order.
func.func @result_before_last_read(%w: tensor<256xf32>, %g: tensor<256xf32>, %m: tensor<256xf32>, %v: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>) {
  // expected-error @+1 {{codegen updates AdamW's state in place, but its result is used before the last read of the state it overwrites}}
  %w2, %m2, %v2 = memwall.adamw %w, %g, %m, %v lr 1.0e-01
      : (tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>)
      -> (tensor<256xf32>, tensor<256xf32>, tensor<256xf32>)
  %new = memwall.add %w2, %g : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32>
  %old = memwall.mul %w, %new : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32>
  return %old, %m2 : tensor<256xf32>, tensor<256xf32>
}

// -----

// The fused head's chunks are runs of its weight's rows only as [V, D].
func.func @linear_cross_entropy_dv(%h: tensor<8x64xbf16>, %w: tensor<64x300xbf16>, %labels: tensor<8xi64>) -> tensor<f32> {
  // expected-error @+1 {{codegen cannot run 'memwall.linear_cross_entropy': the chunks of its weight are runs of rows only as [V, D] (transpose_weight, nn.Linear's and a tied embedding's layout); this one is [D, V]}}
  %loss, %lse = memwall.linear_cross_entropy %h, %w, %labels : tensor<8x64xbf16>, tensor<64x300xbf16>, tensor<8xi64> -> tensor<f32>, tensor<8xf32>
  return %loss : tensor<f32>
}

