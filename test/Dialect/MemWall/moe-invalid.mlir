// RUN: memwall-opt %s -split-input-file -verify-diagnostics

// One case per check of the mixture-of-experts ops.

func.func @more_experts_per_token_than_experts(%l: tensor<4x8xbf16>) {
  // expected-error @below {{experts_per_token (9) must be between 1 and the 8 experts}}
  %w, %e = memwall.moe_gating %l top 9 : tensor<4x8xbf16> -> tensor<4x9xbf16>, tensor<4x9xi32>
  return
}
// -----

func.func @zero_experts_per_token(%l: tensor<4x8xbf16>) {
  // expected-error @below {{'experts_per_token' failed to satisfy constraint}}
  %w, %e = memwall.moe_gating %l top 0 : tensor<4x8xbf16> -> tensor<4x0xbf16>, tensor<4x0xi32>
  return
}
// -----

func.func @gating_result_not_inferred(%l: tensor<4x8xbf16>) {
  // expected-error @below {{does not match the inferred type}}
  %w, %e = memwall.moe_gating %l top 2 : tensor<4x8xbf16> -> tensor<4x2xf32>, tensor<4x2xi32>
  return
}
// -----

func.func @int64_expert_indices(%x: tensor<4x64xbf16>, %w: tensor<8x64x128xbf16>, %e: tensor<4x2xi64>) {
  // expected-error @below {{operand #2 must be statically shaped tensor of 32-bit signless integer values}}
  %y = memwall.expert_matmul %x, %w[%e] : tensor<4x64xbf16>, tensor<8x64x128xbf16>, tensor<4x2xi64> -> tensor<4x2x128xbf16>
  return
}
// -----

func.func @input_rows_match_neither_tokens_nor_slots(%x: tensor<3x64xbf16>, %w: tensor<8x64x128xbf16>, %e: tensor<4x2xi32>) {
  // expected-error @below {{input [3, 64] must be one row per token [4] + [K] or one per slot [4, 2] + [K]}}
  %y = memwall.expert_matmul %x, %w[%e] : tensor<3x64xbf16>, tensor<8x64x128xbf16>, tensor<4x2xi32> -> tensor<4x2x128xbf16>
  return
}
// -----

func.func @expert_contraction_mismatch(%x: tensor<4x64xbf16>, %w: tensor<8x32x128xbf16>, %e: tensor<4x2xi32>) {
  // expected-error @below {{contraction dimensions differ: input has K = 64, each expert's weight has K = 32}}
  %y = memwall.expert_matmul %x, %w[%e] : tensor<4x64xbf16>, tensor<8x32x128xbf16>, tensor<4x2xi32> -> tensor<4x2x128xbf16>
  return
}
// -----

func.func @expert_weight_not_rank_3(%x: tensor<4x64xbf16>, %w: tensor<64x128xbf16>, %e: tensor<4x2xi32>) {
  // expected-error @below {{weight must be [E, K, N] (rank 3), got [64, 128]}}
  %y = memwall.expert_matmul %x, %w[%e] : tensor<4x64xbf16>, tensor<64x128xbf16>, tensor<4x2xi32> -> tensor<4x2x128xbf16>
  return
}
// -----

func.func @expert_element_types_differ(%x: tensor<4x64xf32>, %w: tensor<8x64x128xbf16>, %e: tensor<4x2xi32>) {
  // expected-error @below {{input and weight must have one element type, got 'f32' and 'bf16'}}
  %y = memwall.expert_matmul %x, %w[%e] : tensor<4x64xf32>, tensor<8x64x128xbf16>, tensor<4x2xi32> -> tensor<4x2x128xf32>
  return
}
// -----

func.func @weight_grad_rows_differ(%x: tensor<4x64xbf16>, %dy: tensor<4x3x128xbf16>, %e: tensor<4x2xi32>) {
  // expected-error @below {{grad [4, 3, 128] must be the indices' [4, 2] + [N]}}
  %dw = memwall.expert_matmul_weight_grad %x, %dy[%e] experts 8 : tensor<4x64xbf16>, tensor<4x3x128xbf16>, tensor<4x2xi32> -> tensor<8x64x128xbf16>
  return
}
// -----

func.func @gating_grad_shape(%dw: tensor<4x2xbf16>, %l: tensor<4x8xbf16>, %e: tensor<4x3xi32>) {
  // expected-error @below {{grad [4, 2] and indices [4, 3] must have one shape [..., k]}}
  %dl = memwall.moe_gating_grad %dw, %l, %e : tensor<4x2xbf16>, tensor<4x8xbf16>, tensor<4x3xi32> -> tensor<4x8xbf16>
  return
}
// -----

func.func @gating_grad_rows_differ(%dw: tensor<5x2xbf16>, %l: tensor<4x8xbf16>, %e: tensor<5x2xi32>) {
  // expected-error @below {{grad [5, 2] must be the logits' [4, 8] with 2 experts per token}}
  %dl = memwall.moe_gating_grad %dw, %l, %e : tensor<5x2xbf16>, tensor<4x8xbf16>, tensor<5x2xi32> -> tensor<4x8xbf16>
  return
}
