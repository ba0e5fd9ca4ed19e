// RUN: memwall-opt %s -split-input-file --memwall-autodiff=optimizer=none | FileCheck %s
// RUN: memwall-opt %s -split-input-file --memwall-autodiff | FileCheck %s --check-prefix=ADAM

// A linear layer and its loss: dX = dY W^T, dW folds the batch into one GEMM
// (X^T dY over 6 rows), db sums dY over the rows; gradients are returned in
// argument order after the loss.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: -> (tensor<f32>, tensor<2x3x4xf32>, tensor<4x5xf32>, tensor<5xf32>)
// CHECK: %[[H:.*]] = memwall.matmul %arg0, %arg1 bias %arg2
// CHECK: %[[L:.*]] = memwall.cross_entropy %[[H]]
// CHECK: %[[ONE:.*]] = arith.constant {memwall.phase = "backward"} dense<1.0{{0*}}e+00> : tensor<f32>
// CHECK: %[[DH:.*]] = memwall.cross_entropy_grad %[[H]], %arg3, %[[ONE]] {memwall.phase = "backward"}
// CHECK: %[[DX:.*]] = memwall.matmul %[[DH]], %arg1 {memwall.phase = "backward", transpose_rhs}
// CHECK: %[[X2:.*]] = memwall.reshape %arg0 [6, 4]
// CHECK: %[[DY2:.*]] = memwall.reshape %[[DH]] [6, 5]
// CHECK: %[[DW:.*]] = memwall.matmul %[[X2]], %[[DY2]] {memwall.phase = "backward", transpose_lhs} : tensor<6x4xf32>, tensor<6x5xf32> -> tensor<4x5xf32>
// CHECK: %[[DB:.*]] = memwall.reduce sum %[[DH]] axes [0, 1]
// CHECK: return %[[L]], %[[DX]], %[[DW]], %[[DB]]

// Each update runs as soon as its gradient is complete and nothing reads the
// weight any more (its gradient dies there, not at the end of the step): w's
// right after dW, before db is reduced.
// ADAM-LABEL: func.func @linear
// ADAM-SAME: %arg4: tensor<4x5xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>}
// ADAM: %[[DW:.*]] = memwall.matmul {{.*}} {memwall.phase = "backward", transpose_lhs}
// ADAM-NEXT: memwall.adamw %arg1, %[[DW]], %arg4, %arg5 lr 1.000000e-03 {memwall.phase = "optimizer"}
// ADAM-NEXT: %[[DB:.*]] = memwall.reduce sum
// ADAM-NEXT: memwall.adamw %arg2, %[[DB]], %arg6, %arg7 lr 1.000000e-03 {memwall.phase = "optimizer"}
// ADAM-NEXT: return
func.func @linear(%x: tensor<2x3x4xf32> {memwall.kind = #memwall.arg_kind<input>},
                  %w: tensor<4x5xf32> {memwall.kind = #memwall.arg_kind<weight>},
                  %b: tensor<5xf32> {memwall.kind = #memwall.arg_kind<weight>},
                  %y: tensor<2x3xi64> {memwall.kind = #memwall.arg_kind<input>}) -> tensor<f32> {
  %h = memwall.matmul %x, %w bias %b : tensor<2x3x4xf32>, tensor<4x5xf32>, tensor<5xf32> -> tensor<2x3x5xf32>
  %l = memwall.cross_entropy %h, %y : tensor<2x3x5xf32>, tensor<2x3xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// bf16 weights get an fp32 master copy and fp32 moments (16 B/param with the
// bf16 weight and gradient); the step returns the updated states.
// ADAM-LABEL: func.func @mixed
// ADAM-SAME: %arg2: tensor<4x4xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>}
// ADAM-SAME: %arg3: tensor<4x4xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>}
// ADAM-SAME: %arg4: tensor<4x4xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>}
// ADAM-SAME: -> (tensor<f32>, tensor<4x4xbf16>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
// ADAM: memwall.adamw %arg1, %{{.*}}, %arg3, %arg4 master %arg2
func.func @mixed(%x: tensor<2x4xbf16> {memwall.kind = #memwall.arg_kind<input>},
                 %w: tensor<4x4xbf16> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<f32> {
  %h = memwall.matmul %x, %w : tensor<2x4xbf16>, tensor<4x4xbf16> -> tensor<2x4xbf16>
  %c = memwall.cast %h to f32 : tensor<2x4xbf16> -> tensor<2x4xf32>
  %l = memwall.reduce sum %c axes [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Activations, norms, residual (two uses: gradients summed), softmax,
// dropout (same seed), scale, sub/mul/div with broadcasting.
// CHECK-LABEL: func.func @block
// CHECK: memwall.reshape %{{.*}} [2, 1]
// CHECK: memwall.broadcast %{{.*}} [2, 8]
// CHECK: memwall.scale %{{.*}} by 1.250000e-01
// CHECK: memwall.mul
// CHECK: memwall.reduce sum %{{.*}} axes [1] keep_dims
// CHECK: memwall.sub
// CHECK: memwall.dropout %{{.*}} rate 1.000000e-01 seed 7
// CHECK: memwall.activation_grad gelu_erf
// CHECK: memwall.activation_grad silu
// CHECK: memwall.activation_grad relu
// CHECK: memwall.activation_grad tanh
// CHECK: %[[DLN:[a-z_0-9]+]], %{{.*}}, %{{.*}} = memwall.layer_norm_grad %{{.*}}, %arg1, %{{.*}} has_bias
// CHECK: %{{.*}}, %{{.*}} = memwall.rms_norm_grad %arg0, %arg3, %[[DLN]]
// CHECK: memwall.add
// CHECK: return
func.func @block(%x: tensor<2x8xf32> {memwall.kind = #memwall.arg_kind<weight>},
                 %g: tensor<8xf32> {memwall.kind = #memwall.arg_kind<weight>},
                 %b: tensor<8xf32> {memwall.kind = #memwall.arg_kind<weight>},
                 %r: tensor<8xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<f32> {
  %0 = memwall.rms_norm %x, %r : tensor<2x8xf32>, tensor<8xf32>
  %1 = memwall.layer_norm %0, %g, %b : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  %2 = memwall.tanh %1 : tensor<2x8xf32>
  %3 = memwall.relu %2 : tensor<2x8xf32>
  %4 = memwall.silu %3 : tensor<2x8xf32>
  %5 = memwall.gelu %4 erf : tensor<2x8xf32>
  %6 = memwall.dropout %5 rate 0.1 seed 7 : tensor<2x8xf32>
  %7 = memwall.softmax %6 : tensor<2x8xf32>
  %8 = memwall.add %7, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %9 = memwall.reduce mean %8 axes [1] : tensor<2x8xf32> -> tensor<2xf32>
  %10 = memwall.reduce sum %9 axes [0] : tensor<2xf32> -> tensor<f32>
  return %10 : tensor<f32>
}

// -----

// Attention with GQA: the backward is one attention_grad in recompute form
// with the forward's scale; heads are split and merged by reshape/transpose,
// whose VJPs are the inverse reshape/transpose; slices become pads, a concat
// becomes slices; rope's VJP is the inverse rotation.
// CHECK-LABEL: func.func @attention
// CHECK: memwall.slice %{{.*}} offsets [0, 0, 0, 0] sizes [1, 2, 4, 8]
// CHECK: memwall.transpose %{{.*}} [0, 2, 1, 3]
// CHECK: %[[DQ:[a-z_0-9]+]], %{{.*}}, %[[DV:[a-z_0-9]+]] = memwall.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} causal scale 0.353553{{[0-9]*}}
// CHECK: memwall.slice %[[DV]] offsets [0, 0, 0, 8] sizes [1, 2, 4, 8]
// CHECK: memwall.rope %[[DQ]], %arg3 inverse
// CHECK: memwall.pad %{{.*}} low [0, 0, 0, 8] high [0, 0, 0, 8]
// CHECK: memwall.pad %{{.*}} low [0, 0, 0, 0] high [0, 0, 0, 16]
func.func @attention(%qkv: tensor<1x4x4x24xf32> {memwall.kind = #memwall.arg_kind<weight>},
                     %kv2: tensor<1x2x4x8xf32> {memwall.kind = #memwall.arg_kind<weight>},
                     %t: tensor<1x4x4x8xf32> {memwall.kind = #memwall.arg_kind<input>},
                     %pos: tensor<4xi64> {memwall.kind = #memwall.arg_kind<input>}) -> tensor<f32> {
  %q = memwall.slice %qkv offsets [0, 0, 0, 0] sizes [1, 4, 4, 8] : tensor<1x4x4x24xf32> -> tensor<1x4x4x8xf32>
  %k = memwall.slice %qkv offsets [0, 0, 0, 8] sizes [1, 4, 4, 8] : tensor<1x4x4x24xf32> -> tensor<1x4x4x8xf32>
  %qr = memwall.rope %q, %pos : tensor<1x4x4x8xf32>, tensor<4xi64>
  %k2 = memwall.slice %k offsets [0, 0, 0, 0] sizes [1, 2, 4, 8] : tensor<1x4x4x8xf32> -> tensor<1x2x4x8xf32>
  %v = memwall.concat %kv2, %kv2 axis 3 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x16xf32>
  %o = memwall.attention %qr, %k2, %v causal : tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x16xf32> -> tensor<1x4x4x16xf32>
  %ot = memwall.transpose %o [0, 2, 1, 3] : tensor<1x4x4x16xf32> -> tensor<1x4x4x16xf32>
  %m = memwall.reshape %ot [1, 4, 64] : tensor<1x4x4x16xf32> -> tensor<1x4x64xf32>
  %s = memwall.reduce sum %m axes [0, 1, 2] : tensor<1x4x64xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A learned additive bias used as the attention mask gets the score gradient
// as attention_grad's fourth result, summed over the broadcast heads.
// CHECK-LABEL: func.func @learned_bias
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[DB:[a-z_0-9]+]] = memwall.attention_grad %arg0, %arg1, %arg2, %{{.*}}, %{{.*}} mask %arg3 scale 5.000000e-01
// CHECK-SAME: -> (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x1x3x5xf32>)
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[DB]] :
func.func @learned_bias(%q: tensor<1x2x3x4xf32> {memwall.kind = #memwall.arg_kind<weight>},
                        %k: tensor<1x2x5x4xf32> {memwall.kind = #memwall.arg_kind<weight>},
                        %v: tensor<1x2x5x4xf32> {memwall.kind = #memwall.arg_kind<weight>},
                        %bias: tensor<1x1x3x5xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<f32> {
  %o = memwall.attention %q, %k, %v mask %bias : tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x1x3x5xf32> -> tensor<1x2x3x4xf32>
  %s = memwall.reduce sum %o axes [0, 1, 2, 3] : tensor<1x2x3x4xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Embedding tables get a scatter-add gradient; integer inputs get none.
// CHECK-LABEL: func.func @embed
// CHECK: memwall.embedding_grad %{{.*}}[%arg1] {memwall.phase = "backward"} : tensor<2x3x4xf32>, tensor<2x3xi64> -> tensor<10x4xf32>
// CHECK: return %{{.*}}, %{{.*}} : tensor<f32>, tensor<10x4xf32>
func.func @embed(%table: tensor<10x4xf32> {memwall.kind = #memwall.arg_kind<weight>},
                 %ids: tensor<2x3xi64> {memwall.kind = #memwall.arg_kind<input>}) -> tensor<f32> {
  %e = memwall.embedding %table[%ids] : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  %s = memwall.reduce sum %e axes [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// The gradients of slices that cover a packed tensor along one axis once
// (q, k and v of a QKV projection) join as one concat, not a zero-padded
// copy per slice and an add per pair; slices leaving a gap keep the pads.
// CHECK-LABEL: func.func @packed_slices
// CHECK-NOT: memwall.pad
// CHECK: memwall.concat %{{.*}}, %{{.*}}, %{{.*}} axis 1 {{.*}}: tensor<4x2xf32>, tensor<4x3xf32>, tensor<4x1xf32> -> tensor<4x6xf32>
// CHECK-NOT: memwall.pad
// CHECK: return
func.func @packed_slices(%x: tensor<4x6xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<f32> {
  %a = memwall.slice %x offsets [0, 2] sizes [4, 3] : tensor<4x6xf32> -> tensor<4x3xf32>
  %b = memwall.slice %x offsets [0, 0] sizes [4, 2] : tensor<4x6xf32> -> tensor<4x2xf32>
  %c = memwall.slice %x offsets [0, 5] sizes [4, 1] : tensor<4x6xf32> -> tensor<4x1xf32>
  %sa = memwall.reduce sum %a axes [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %sb = memwall.reduce sum %b axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  %sc = memwall.reduce sum %c axes [0, 1] : tensor<4x1xf32> -> tensor<f32>
  %0 = memwall.add %sa, %sb : tensor<f32>, tensor<f32> -> tensor<f32>
  %1 = memwall.add %0, %sc : tensor<f32>, tensor<f32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @slices_with_a_gap
// CHECK: memwall.pad
// CHECK: memwall.pad
// CHECK-NOT: memwall.concat
func.func @slices_with_a_gap(%x: tensor<4x6xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<f32> {
  %a = memwall.slice %x offsets [0, 0] sizes [4, 2] : tensor<4x6xf32> -> tensor<4x2xf32>
  %b = memwall.slice %x offsets [0, 3] sizes [4, 3] : tensor<4x6xf32> -> tensor<4x3xf32>
  %sa = memwall.reduce sum %a axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  %sb = memwall.reduce sum %b axes [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %0 = memwall.add %sa, %sb : tensor<f32>, tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}
