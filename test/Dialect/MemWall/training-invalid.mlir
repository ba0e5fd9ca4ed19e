// RUN: memwall-opt %s -split-input-file -verify-diagnostics

// Verifier errors of the training ops (backward and optimizer), one each.

func.func @mask_grad_without_mask(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %o: tensor<1x2x3x4xf32>) {
  // expected-error @below {{has a mask gradient but no floating-point mask}}
  %dq, %dk, %dv, %dm = memwall.attention_grad %q, %k, %k, %o, %o scale 5.000000e-01 : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x1x3x5xf32>)
  return
}

// -----

func.func @mask_grad_of_wrong_shape(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %o: tensor<1x2x3x4xf32>, %m: tensor<1x1x3x5xf32>) {
  // expected-error @below {{mask gradient must have type 'tensor<1x1x3x5xf32>'}}
  %dq, %dk, %dv, %dm = memwall.attention_grad %q, %k, %k, %o, %o mask %m scale 5.000000e-01 : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x1x3x5xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x3x5xf32>)
  return
}

// -----

func.func @attention_grad_zero_scale(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %o: tensor<1x2x3x4xf32>) {
  // expected-error @below {{scale must be a positive finite number, got 0}}
  %dq, %dk, %dv = memwall.attention_grad %q, %k, %k, %o, %o scale 0.0 : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>)
  return
}

// -----

func.func @layer_norm_grad_bias_result_without_has_bias(%x: tensor<3x8xf32>, %w: tensor<8xf32>) {
  // expected-error @below {{has a bias gradient result exactly when has_bias is}}
  %dx, %dw, %db = memwall.layer_norm_grad %x, %w, %x : (tensor<3x8xf32>, tensor<8xf32>, tensor<3x8xf32>) -> (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @embedding_grad_wrong_row_width(%dy: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>) {
  // expected-error @below {{grad must have shape}}
  %t = memwall.embedding_grad %dy[%ids] : tensor<2x3x4xf32>, tensor<2x3xi64> -> tensor<10x5xf32>
  return
}

// -----

func.func @cross_entropy_grad_labels_shape(%x: tensor<2x3x5xf32>, %l: tensor<2x4xi64>, %g: tensor<f32>) {
  // expected-error @below {{labels must have the logits' shape without the class}}
  %d = memwall.cross_entropy_grad %x, %l, %g : tensor<2x3x5xf32>, tensor<2x4xi64>, tensor<f32>
  return
}

// -----

func.func @adamw_moment_shape(%p: tensor<4x8xf32>, %m: tensor<4x4xf32>) {
  // expected-error @below {{must have the param's shape}}
  %p2, %m2, %v2 = memwall.adamw %p, %p, %m, %p lr 1.0e-03 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @adamw_negative_lr(%p: tensor<4x8xf32>) {
  // expected-error @below {{lr must be a finite number >= 0, got -1}}
  %p2, %m2, %v2 = memwall.adamw %p, %p, %p, %p lr -1.0 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @flash_too_many_splits(%q: tensor<1x2x4x8xbf16>, %k: tensor<1x2x10x8xbf16>) {
  // expected-error @below {{splits must be between 1 and the 4 key blocks, got 5}}
  %o, %l = memwall.flash_attention %q, %k, %k scale 5.000000e-01 block_q 2 block_kv 3 splits 5 : (tensor<1x2x4x8xbf16>, tensor<1x2x10x8xbf16>, tensor<1x2x10x8xbf16>) -> (tensor<1x2x4x8xbf16>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @flash_lse_shape(%q: tensor<1x2x4x8xbf16>, %k: tensor<1x2x10x8xbf16>) {
  // expected-error @below {{lse must have type 'tensor<1x2x4xf32>', got 'tensor<1x2x10xf32>'}}
  %o, %l = memwall.flash_attention %q, %k, %k scale 5.000000e-01 block_q 2 block_kv 3 splits 1 : (tensor<1x2x4x8xbf16>, tensor<1x2x10x8xbf16>, tensor<1x2x10x8xbf16>) -> (tensor<1x2x4x8xbf16>, tensor<1x2x10xf32>)
  return
}

// -----

func.func @flash_grad_zero_block(%q: tensor<1x2x4x8xbf16>, %l: tensor<1x2x4xf32>) {
  // expected-error @below {{block sizes must be positive, got block_q 0 and block_kv 64}}
  %dq, %dk, %dv = memwall.flash_attention_grad %q, %q, %q, %q, %q, %l scale 5.000000e-01 block_q 0 block_kv 64 : (tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4xf32>) -> (tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>)
  return
}

// -----

func.func @flash_mask_shape(%q: tensor<1x2x4x8xbf16>, %m: tensor<1x1x4x9xbf16>) {
  // expected-error @below {{mask of shape [1, 1, 4, 9] does not broadcast to the scores [1, 2, 4, 4]}}
  %o, %l = memwall.flash_attention %q, %q, %q mask %m scale 5.000000e-01 block_q 2 block_kv 2 splits 1 : (tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x1x4x9xbf16>) -> (tensor<1x2x4x8xbf16>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @linear_cross_entropy_grad_lse_shape(%h: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %y: tensor<4xi64>, %lse: tensor<3xf32>, %g: tensor<f32>) {
  // expected-error @below {{lse must have type 'tensor<4xf32>'}}
  %dh, %dw = memwall.linear_cross_entropy_grad %h, %w, %y, %lse, %g transpose_weight : tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<4xi64>, tensor<3xf32>, tensor<f32>
  return
}

// -----

func.func @linear_cross_entropy_grad_none_needs_per_position_grad(%h: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %y: tensor<4xi64>, %lse: tensor<4xf32>, %g: tensor<f32>) {
  // expected-error @below {{grad must have type 'tensor<4xf32>'}}
  %dh, %dw = memwall.linear_cross_entropy_grad %h, %w, %y, %lse, %g none transpose_weight : tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<4xi64>, tensor<4xf32>, tensor<f32>
  return
}

// -----

func.func @linear_cross_entropy_grad_weight_does_not_contract(%h: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %y: tensor<4xi64>, %lse: tensor<4xf32>, %g: tensor<f32>) {
  // expected-error @below {{weight [16, 8] does not contract with hidden size 8 ([D, V])}}
  %dh, %dw = memwall.linear_cross_entropy_grad %h, %w, %y, %lse, %g : tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<4xi64>, tensor<4xf32>, tensor<f32>
  return
}
