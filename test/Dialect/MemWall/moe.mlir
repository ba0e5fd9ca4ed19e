// RUN: memwall-opt %s | memwall-opt | FileCheck %s --check-prefix=ROUND
// RUN: memwall-opt %s --mlir-print-op-generic | memwall-opt | FileCheck %s --check-prefix=ROUND
// RUN: memwall-opt %s --memwall-annotate-costs | FileCheck %s --check-prefix=COST

// The mixture-of-experts ops round-trip, and their counts are the
// hand-computed ones of docs/cost-model.md for 4 tokens routed to 2 of 8
// experts with [64, 128] weights (bf16; i32 indices).

// ROUND-LABEL: func.func @moe
// COST-LABEL: func.func @moe
func.func @moe(%x: tensor<4x64xbf16>, %router: tensor<64x8xbf16>,
               %w_up: tensor<8x64x128xbf16>, %w_down: tensor<8x128x64xbf16>,
               %w_t: tensor<8x128x64xbf16>) {
  %logits = memwall.matmul %x, %router : tensor<4x64xbf16>, tensor<64x8xbf16> -> tensor<4x8xbf16>
  // Softmax 5 * 8 + 1, top 2 of 8: 2 * 8, renormalize 2 * 2 = 61 a row.
  // ROUND: memwall.moe_gating %{{.*}} top 2 normalize : tensor<4x8xbf16> -> tensor<4x2xbf16>, tensor<4x2xi32>
  // COST: memwall.moe_gating {{.*}}#memwall.cost<flops = 244, bytes_read = 64, bytes_written = 48,
  %w, %e = memwall.moe_gating %logits top 2 normalize : tensor<4x8xbf16> -> tensor<4x2xbf16>, tensor<4x2xi32>
  // Without normalize: 57 a row.
  // ROUND: memwall.moe_gating %{{.*}} top 2 : tensor<4x8xbf16>
  // COST: memwall.moe_gating {{.*}}#memwall.cost<flops = 228,
  %w2, %e2 = memwall.moe_gating %logits top 2 : tensor<4x8xbf16> -> tensor<4x2xbf16>, tensor<4x2xi32>
  // 2 * 4 tokens * 2 slots * 64 * 128 FLOPs; the input (512 B), indices
  // (32 B) and the experts hit in expectation, 8 (1 - (6/8)^4) = 5.46875 of
  // 16384 B each = 89600 B: 90144 B read.
  // ROUND: memwall.expert_matmul %{{.*}}, %{{.*}}[%{{.*}}] : tensor<4x64xbf16>, tensor<8x64x128xbf16>, tensor<4x2xi32> -> tensor<4x2x128xbf16>
  // COST: memwall.expert_matmul {{.*}}#memwall.cost<flops = 131072, bytes_read = 90144, bytes_written = 2048,
  %up = memwall.expert_matmul %x, %w_up[%e] : tensor<4x64xbf16>, tensor<8x64x128xbf16>, tensor<4x2xi32> -> tensor<4x2x128xbf16>
  // One input row per slot.
  // ROUND: memwall.expert_matmul %{{.*}}, %{{.*}}[%{{.*}}] : tensor<4x2x128xbf16>, tensor<8x128x64xbf16>, tensor<4x2xi32> -> tensor<4x2x64xbf16>
  %down = memwall.expert_matmul %up, %w_down[%e] : tensor<4x2x128xbf16>, tensor<8x128x64xbf16>, tensor<4x2xi32> -> tensor<4x2x64xbf16>
  // ROUND: memwall.expert_matmul %{{.*}}, %{{.*}}[%{{.*}}] transpose_weight : tensor<4x64xbf16>, tensor<8x128x64xbf16>, tensor<4x2xi32> -> tensor<4x2x128xbf16>
  %t = memwall.expert_matmul %x, %w_t[%e] transpose_weight : tensor<4x64xbf16>, tensor<8x128x64xbf16>, tensor<4x2xi32> -> tensor<4x2x128xbf16>
  // The weight gradient writes every expert's [64, 128].
  // ROUND: memwall.expert_matmul_weight_grad %{{.*}}, %{{.*}}[%{{.*}}] experts 8 : tensor<4x64xbf16>, tensor<4x2x128xbf16>, tensor<4x2xi32> -> tensor<8x64x128xbf16>
  // COST: memwall.expert_matmul_weight_grad {{.*}}#memwall.cost<flops = 131072, bytes_read = 2592, bytes_written = 131072,
  %dw = memwall.expert_matmul_weight_grad %x, %up[%e] experts 8 : tensor<4x64xbf16>, tensor<4x2x128xbf16>, tensor<4x2xi32> -> tensor<8x64x128xbf16>
  // ROUND: memwall.expert_matmul_weight_grad %{{.*}}, %{{.*}}[%{{.*}}] experts 8 transpose_weight : tensor<4x64xbf16>, tensor<4x2x128xbf16>, tensor<4x2xi32> -> tensor<8x128x64xbf16>
  %dwt = memwall.expert_matmul_weight_grad %x, %up[%e] experts 8 transpose_weight : tensor<4x64xbf16>, tensor<4x2x128xbf16>, tensor<4x2xi32> -> tensor<8x128x64xbf16>
  // Softmax again (5 * 8 + 1), 2 * 2 and 2 * 8: 61 a row.
  // ROUND: memwall.moe_gating_grad %{{.*}}, %{{.*}}, %{{.*}} normalize : tensor<4x2xbf16>, tensor<4x8xbf16>, tensor<4x2xi32> -> tensor<4x8xbf16>
  // COST: memwall.moe_gating_grad {{.*}}#memwall.cost<flops = 244, bytes_read = 112, bytes_written = 64,
  %dl = memwall.moe_gating_grad %w, %logits, %e normalize : tensor<4x2xbf16>, tensor<4x8xbf16>, tensor<4x2xi32> -> tensor<4x8xbf16>
  // ROUND: memwall.sigmoid %{{.*}} : tensor<4x8xbf16>
  // COST: memwall.sigmoid {{.*}}#memwall.cost<flops = 128, bytes_read = 64, bytes_written = 64,
  %s = memwall.sigmoid %logits : tensor<4x8xbf16>
  return
}
