// RUN: memwall-opt %s -split-input-file -verify-diagnostics --memwall-autodiff

// expected-error @below {{memwall-autodiff: @not_a_loss is not a training function: it must return exactly one tensor<f32> loss}}
func.func @not_a_loss(%x: tensor<4xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<4xf32> {
  %0 = memwall.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @max(%x: tensor<2x4xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<f32> {
  // expected-error @below {{'memwall.reduce' op has no vector-Jacobian product: reduce max is not differentiated (its gradient needs the argmax)}}
  %0 = memwall.reduce max %x axes [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cache(%c: tensor<1x1x4x8xf32> {memwall.kind = #memwall.arg_kind<kv_cache>},
                 %k: tensor<1x1x1x8xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<f32> {
  // expected-error @below {{'memwall.kv_cache_append' op has no vector-Jacobian product: training graphs do not append to a KV cache}}
  %0 = memwall.kv_cache_append %c, %k : tensor<1x1x4x8xf32>, tensor<1x1x1x8xf32> -> tensor<1x1x5x8xf32>
  %1 = memwall.reduce sum %0 axes [0, 1, 2, 3] : tensor<1x1x5x8xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

func.func @strided(%x: tensor<8xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<f32> {
  // expected-error @below {{'memwall.slice' op has no vector-Jacobian product: strided slices are not differentiated}}
  %0 = memwall.slice %x offsets [0] sizes [4] strides [2] : tensor<8xf32> -> tensor<4xf32>
  %1 = memwall.reduce sum %0 axes [0] : tensor<4xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// expected-error @below {{memwall-autodiff: @twice is already differentiated}}
func.func @twice(%x: tensor<4xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<f32> {
  %0 = memwall.reduce sum %x axes [0] {memwall.phase = "backward"} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// The fused head's log-sum-exp is an output for its backward, not a value
// the loss is differentiated through.
func.func @loss_of_lse(%h: tensor<4x8xf32> {memwall.kind = #memwall.arg_kind<weight>},
                       %w: tensor<16x8xf32> {memwall.kind = #memwall.arg_kind<weight>},
                       %y: tensor<4xi64> {memwall.kind = #memwall.arg_kind<input>}) -> tensor<f32> {
  // expected-error @below {{'memwall.linear_cross_entropy' op has no vector-Jacobian product: its log-sum-exp result is not differentiable}}
  %l, %lse = memwall.linear_cross_entropy %h, %w, %y transpose_weight : tensor<4x8xf32>, tensor<16x8xf32>, tensor<4xi64> -> tensor<f32>, tensor<4xf32>
  %s = memwall.reduce sum %lse axes [0] : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}
