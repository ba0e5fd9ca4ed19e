// RUN: memwall-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(memwall-fuse-linear-cross-entropy))' | FileCheck %s
// RUN: memwall-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(memwall-fuse-linear-cross-entropy),memwall-autodiff{optimizer=none only-loss-functions=true})' | FileCheck %s --check-prefix=GRAD

// A tied head (the embedding table, [V, D], read transposed) and its mean
// loss become one op; the matmul is gone.
// CHECK-LABEL: func.func @tied
// CHECK-NOT: memwall.matmul
// CHECK-NOT: memwall.cross_entropy
// CHECK: %[[L:.*]], %[[LSE:.*]] = memwall.linear_cross_entropy %arg0, %arg1, %arg2 transpose_weight : tensor<2x3x8xbf16>, tensor<16x8xbf16>, tensor<2x3xi64> -> tensor<f32>, tensor<2x3xf32>
// CHECK: return %[[L]]
// The backward reads the forward's log-sum-exp and returns both gradients.
// GRAD-LABEL: func.func @tied
// GRAD: %[[L:.*]], %[[LSE:.*]] = memwall.linear_cross_entropy %arg0, %arg1, %arg2 transpose_weight
// GRAD: %[[ONE:.*]] = arith.constant
// GRAD: %[[DH:.*]], %[[DW:.*]] = memwall.linear_cross_entropy_grad %arg0, %arg1, %arg2, %[[LSE]], %[[ONE]] transpose_weight {memwall.phase = "backward"}
// GRAD: return %[[L]], %[[DH]], %[[DW]]
func.func @tied(%h: tensor<2x3x8xbf16> {memwall.kind = #memwall.arg_kind<input>},
                %wte: tensor<16x8xbf16> {memwall.kind = #memwall.arg_kind<weight>},
                %y: tensor<2x3xi64> {memwall.kind = #memwall.arg_kind<input>}) -> tensor<f32> {
  %logits = memwall.matmul %h, %wte {transpose_rhs} : tensor<2x3x8xbf16>, tensor<16x8xbf16> -> tensor<2x3x16xbf16>
  %loss = memwall.cross_entropy %logits, %y : tensor<2x3x16xbf16>, tensor<2x3xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A [D, V] head; reduction and ignore_index carry over; a widening cast of
// the logits (autocast's f32 loss) is exact and fused through.
// CHECK-LABEL: func.func @untied_cast
// CHECK-NOT: memwall.cast
// CHECK: memwall.linear_cross_entropy %arg0, %arg1, %arg2 sum ignore_index -100 : tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<4xi32> -> tensor<f32>, tensor<4xf32>
func.func @untied_cast(%h: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %y: tensor<4xi32>) -> tensor<f32> {
  %logits = memwall.matmul %h, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %wide = memwall.cast %logits to f32 : tensor<4x16xbf16> -> tensor<4x16xf32>
  %loss = memwall.cross_entropy %wide, %y sum ignore_index -100 : tensor<4x16xf32>, tensor<4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Left alone: logits read by anything else (returned), a bias, a batched
// rhs, a narrowing cast, a bf16 -> f16 cast (as wide, but not exact).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: linear_cross_entropy
// CHECK: return
func.func @left_alone(%h: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>,
                      %wb: tensor<4x8x16xf32>, %y: tensor<4xi64>,
                      %hb: tensor<4x8xbf16>, %wbf: tensor<8x16xbf16>)
    -> (tensor<f32>, tensor<4x16xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %logits = memwall.matmul %h, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %l0 = memwall.cross_entropy %logits, %y : tensor<4x16xf32>, tensor<4xi64> -> tensor<f32>
  %biased = memwall.matmul %h, %w bias %b : tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %l1 = memwall.cross_entropy %biased, %y : tensor<4x16xf32>, tensor<4xi64> -> tensor<f32>
  %h3 = memwall.reshape %h [4, 1, 8] : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %batched = memwall.matmul %h3, %wb : tensor<4x1x8xf32>, tensor<4x8x16xf32> -> tensor<4x1x16xf32>
  %y2 = memwall.reshape %y [4, 1] : tensor<4xi64> -> tensor<4x1xi64>
  %l2 = memwall.cross_entropy %batched, %y2 : tensor<4x1x16xf32>, tensor<4x1xi64> -> tensor<f32>
  %plain = memwall.matmul %h, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %narrow = memwall.cast %plain to bf16 : tensor<4x16xf32> -> tensor<4x16xbf16>
  %l3 = memwall.cross_entropy %narrow, %y : tensor<4x16xbf16>, tensor<4xi64> -> tensor<f32>
  %half = memwall.matmul %hb, %wbf : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %f16 = memwall.cast %half to f16 : tensor<4x16xbf16> -> tensor<4x16xf16>
  %l4 = memwall.cross_entropy %f16, %y : tensor<4x16xf16>, tensor<4xi64> -> tensor<f32>
  return %l0, %logits, %l1, %l2, %l3, %l4 : tensor<f32>, tensor<4x16xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}
