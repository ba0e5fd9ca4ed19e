// RUN: memwall-opt %s | memwall-opt | FileCheck %s
// RUN: memwall-opt %s --mlir-print-op-generic | memwall-opt | FileCheck %s

// Every training op (backward and optimizer) parses, prints in its custom
// form, and survives a round trip through the generic form.

// CHECK-LABEL: func.func @backward
func.func @backward(%x: tensor<3x8xf32>, %w: tensor<8xf32>, %q: tensor<1x2x3x4xf32>,
                    %k: tensor<1x2x5x4xf32>, %m: tensor<1x1x3x5xf32>,
                    %ids: tensor<3xi64>, %l: tensor<3x8xf32>, %g: tensor<f32>) {
  // CHECK: memwall.activation_grad gelu_tanh %{{.*}}, %{{.*}} : tensor<3x8xf32>
  %0 = memwall.activation_grad gelu_tanh %x, %x : tensor<3x8xf32>
  // CHECK: memwall.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} has_bias : (tensor<3x8xf32>, tensor<8xf32>, tensor<3x8xf32>) -> (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %1:3 = memwall.layer_norm_grad %x, %w, %x has_bias : (tensor<3x8xf32>, tensor<8xf32>, tensor<3x8xf32>) -> (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: memwall.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<3x8xf32>, tensor<8xf32>
  %2:2 = memwall.rms_norm_grad %x, %w, %x eps 1.0e-05 : tensor<3x8xf32>, tensor<8xf32>
  // CHECK: memwall.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} scale 5.000000e-01 : {{.*}} -> (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x1x3x5xf32>)
  %3:4 = memwall.attention_grad %q, %k, %k, %q, %q mask %m scale 5.000000e-01 : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x1x3x5xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x1x3x5xf32>)
  // CHECK: memwall.embedding_grad %{{.*}}[%{{.*}}] : tensor<3x8xf32>, tensor<3xi64> -> tensor<10x8xf32>
  %4 = memwall.embedding_grad %x[%ids] : tensor<3x8xf32>, tensor<3xi64> -> tensor<10x8xf32>
  // CHECK: memwall.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} sum ignore_index 0
  %5 = memwall.cross_entropy_grad %l, %ids, %g sum ignore_index 0 : tensor<3x8xf32>, tensor<3xi64>, tensor<f32>
  // CHECK: memwall.broadcast %{{.*}} [2, 3, 8] : tensor<3x8xf32> -> tensor<2x3x8xf32>
  %6 = memwall.broadcast %x [2, 3, 8] : tensor<3x8xf32> -> tensor<2x3x8xf32>
  // CHECK: memwall.pad %{{.*}} low [0, 1] high [1, 2] : tensor<3x8xf32> -> tensor<4x11xf32>
  %7 = memwall.pad %x low [0, 1] high [1, 2] : tensor<3x8xf32> -> tensor<4x11xf32>
  return
}

// CHECK-LABEL: func.func @optimizer
func.func @optimizer(%p: tensor<4x8xbf16>, %g: tensor<4x8xbf16>, %m: tensor<4x8xf32>, %master: tensor<4x8xf32>) {
  // CHECK: memwall.adamw %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} master %{{.*}} lr 3.000000e-04 {{.*}}step 7
  %0:4 = memwall.adamw %p, %g, %m, %m master %master lr 3.0e-04 step 7 : (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// CHECK-LABEL: func.func @fused_head
func.func @fused_head(%h: tensor<2x3x8xbf16>, %w: tensor<16x8xbf16>, %wt: tensor<8x16xbf16>,
                      %y: tensor<2x3xi64>, %g: tensor<2x3xf32>) {
  // CHECK: memwall.linear_cross_entropy %{{.*}}, %{{.*}}, %{{.*}} transpose_weight : tensor<2x3x8xbf16>, tensor<16x8xbf16>, tensor<2x3xi64> -> tensor<f32>, tensor<2x3xf32>
  %l, %lse = memwall.linear_cross_entropy %h, %w, %y transpose_weight : tensor<2x3x8xbf16>, tensor<16x8xbf16>, tensor<2x3xi64> -> tensor<f32>, tensor<2x3xf32>
  // CHECK: memwall.linear_cross_entropy %{{.*}}, %{{.*}}, %{{.*}} none ignore_index 3 : tensor<2x3x8xbf16>, tensor<8x16xbf16>
  %ln, %lse2 = memwall.linear_cross_entropy %h, %wt, %y none ignore_index 3 : tensor<2x3x8xbf16>, tensor<8x16xbf16>, tensor<2x3xi64> -> tensor<2x3xf32>, tensor<2x3xf32>
  // CHECK: memwall.linear_cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} none ignore_index 3 : tensor<2x3x8xbf16>, tensor<8x16xbf16>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x3xf32>
  %dh, %dw = memwall.linear_cross_entropy_grad %h, %wt, %y, %lse2, %g none ignore_index 3 : tensor<2x3x8xbf16>, tensor<8x16xbf16>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x3xf32>
  return
}
