// RUN: memwall-opt %s | memwall-opt | FileCheck %s
// RUN: memwall-opt %s --mlir-print-op-generic | memwall-opt | FileCheck %s

// Every memwall op parses, prints in its custom form, and survives a round
// trip through the generic form.

// CHECK-LABEL: func.func @f
// CHECK-SAME: {memwall.kind = #memwall.arg_kind<input>}
// CHECK-SAME: {memwall.kind = #memwall.arg_kind<weight>}
func.func @f(%x: tensor<4x128x768xbf16> {memwall.kind = #memwall.arg_kind<input>},
             %w: tensor<768x3072xbf16> {memwall.kind = #memwall.arg_kind<weight>},
             %b: tensor<3072xbf16> {memwall.kind = #memwall.arg_kind<weight>},
             %g: tensor<768xbf16>, %q: tensor<1x32x128x128xbf16>, %k: tensor<1x8x128x128xbf16>, %pos: tensor<128xi64>,
             %tab: tensor<1000x768xbf16>, %ids: tensor<4x128xi64>, %kc: tensor<1x8x100x128xbf16>, %kn: tensor<1x8x1x128xbf16>,
             %f8a: tensor<16x32xf8E4M3FN>, %f8b: tensor<32x8xf8E4M3FN>, %i8a: tensor<16x32xi8>, %mask: tensor<1x1x128x128xi1>) {
  %0 = memwall.matmul %x, %w bias %b : tensor<4x128x768xbf16>, tensor<768x3072xbf16>, tensor<3072xbf16> -> tensor<4x128x3072xbf16>
  // CHECK: memwall.matmul %{{.*}}, %{{.*}} bias %{{.*}} : tensor<4x128x768xbf16>, tensor<768x3072xbf16>, tensor<3072xbf16> -> tensor<4x128x3072xbf16>
  %1 = memwall.gelu %0 tanh : tensor<4x128x3072xbf16>
  // CHECK: memwall.gelu %0 tanh : tensor<4x128x3072xbf16>
  %2 = memwall.gelu %0 : tensor<4x128x3072xbf16>
  // CHECK: memwall.gelu %0 : tensor<4x128x3072xbf16>
  %3 = memwall.add %x, %g : tensor<4x128x768xbf16>, tensor<768xbf16> -> tensor<4x128x768xbf16>
  // CHECK: memwall.add %{{.*}}, %{{.*}} : tensor<4x128x768xbf16>, tensor<768xbf16> -> tensor<4x128x768xbf16>
  %4 = memwall.layer_norm %3, %g, %g eps 1.0e-6 : tensor<4x128x768xbf16>, tensor<768xbf16>, tensor<768xbf16>
  // CHECK: memwall.layer_norm %3, %{{.*}}, %{{.*}} eps 9.9999999999999995E-7 : tensor<4x128x768xbf16>, tensor<768xbf16>, tensor<768xbf16>
  %5 = memwall.layer_norm %3, %g : tensor<4x128x768xbf16>, tensor<768xbf16>
  // CHECK: memwall.layer_norm %3, %{{.*}} : tensor<4x128x768xbf16>, tensor<768xbf16>
  %6 = memwall.rms_norm %3, %g : tensor<4x128x768xbf16>, tensor<768xbf16>
  // CHECK: memwall.rms_norm %3, %{{.*}} : tensor<4x128x768xbf16>, tensor<768xbf16>
  %7 = memwall.softmax %3 axis 1 : tensor<4x128x768xbf16>
  // CHECK: memwall.softmax %3 axis 1 : tensor<4x128x768xbf16>
  %8 = memwall.softmax %3 : tensor<4x128x768xbf16>
  // CHECK: memwall.softmax %3 : tensor<4x128x768xbf16>
  %9 = memwall.reduce mean %3 axes [2] keep_dims : tensor<4x128x768xbf16> -> tensor<4x128x1xbf16>
  // CHECK: memwall.reduce mean %3 axes [2] keep_dims : tensor<4x128x768xbf16> -> tensor<4x128x1xbf16>
  %10 = memwall.attention %q, %k, %k causal : tensor<1x32x128x128xbf16>, tensor<1x8x128x128xbf16>, tensor<1x8x128x128xbf16> -> tensor<1x32x128x128xbf16>
  // CHECK: memwall.attention %{{.*}}, %{{.*}}, %{{.*}} causal : tensor<1x32x128x128xbf16>, tensor<1x8x128x128xbf16>, tensor<1x8x128x128xbf16> -> tensor<1x32x128x128xbf16>
  %11 = memwall.attention %q, %k, %k mask %mask scale 0.5 : tensor<1x32x128x128xbf16>, tensor<1x8x128x128xbf16>, tensor<1x8x128x128xbf16>, tensor<1x1x128x128xi1> -> tensor<1x32x128x128xbf16>
  // CHECK: memwall.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} scale 5.000000e-01 : tensor<1x32x128x128xbf16>, tensor<1x8x128x128xbf16>, tensor<1x8x128x128xbf16>, tensor<1x1x128x128xi1> -> tensor<1x32x128x128xbf16>
  %12 = memwall.rope %q, %pos theta 500000.0 : tensor<1x32x128x128xbf16>, tensor<128xi64>
  // CHECK: memwall.rope %{{.*}}, %{{.*}} theta 5.000000e+05 : tensor<1x32x128x128xbf16>, tensor<128xi64>
  %13 = memwall.embedding %tab[%ids] : tensor<1000x768xbf16>, tensor<4x128xi64> -> tensor<4x128x768xbf16>
  // CHECK: memwall.embedding %{{.*}}[%{{.*}}] : tensor<1000x768xbf16>, tensor<4x128xi64> -> tensor<4x128x768xbf16>
  %14 = memwall.kv_cache_append %kc, %kn : tensor<1x8x100x128xbf16>, tensor<1x8x1x128xbf16> -> tensor<1x8x101x128xbf16>
  // CHECK: memwall.kv_cache_append %{{.*}}, %{{.*}} : tensor<1x8x100x128xbf16>, tensor<1x8x1x128xbf16> -> tensor<1x8x101x128xbf16>
  %15 = memwall.reshape %x [4, 128, 12, 64] : tensor<4x128x768xbf16> -> tensor<4x128x12x64xbf16>
  // CHECK: memwall.reshape %{{.*}} [4, 128, 12, 64] : tensor<4x128x768xbf16> -> tensor<4x128x12x64xbf16>
  %16 = memwall.transpose %15 [0, 2, 1, 3] : tensor<4x128x12x64xbf16> -> tensor<4x12x128x64xbf16>
  // CHECK: memwall.transpose %15 [0, 2, 1, 3] : tensor<4x128x12x64xbf16> -> tensor<4x12x128x64xbf16>
  %17 = memwall.slice %x offsets [0, 0, 0] sizes [4, 1, 768] : tensor<4x128x768xbf16> -> tensor<4x1x768xbf16>
  // CHECK: memwall.slice %{{.*}} offsets [0, 0, 0] sizes [4, 1, 768] : tensor<4x128x768xbf16> -> tensor<4x1x768xbf16>
  %18 = memwall.slice %x offsets [0, 0, 0] sizes [4, 64, 768] strides [1, 2, 1] : tensor<4x128x768xbf16> -> tensor<4x64x768xbf16>
  // CHECK: memwall.slice %{{.*}} offsets [0, 0, 0] sizes [4, 64, 768] strides [1, 2, 1] : tensor<4x128x768xbf16> -> tensor<4x64x768xbf16>
  %19 = memwall.concat %x, %x axis -1 : tensor<4x128x768xbf16>, tensor<4x128x768xbf16> -> tensor<4x128x1536xbf16>
  // CHECK: memwall.concat %{{.*}}, %{{.*}} axis -1 : tensor<4x128x768xbf16>, tensor<4x128x768xbf16> -> tensor<4x128x1536xbf16>
  %20 = memwall.cast %x to f32 : tensor<4x128x768xbf16> -> tensor<4x128x768xf32>
  // CHECK: memwall.cast %{{.*}} to f32 : tensor<4x128x768xbf16> -> tensor<4x128x768xf32>
  %21 = memwall.dropout %x rate 0.1 seed 3 : tensor<4x128x768xbf16>
  // CHECK: memwall.dropout %{{.*}} rate 1.000000e-01 seed 3 : tensor<4x128x768xbf16>
  %22 = memwall.cross_entropy %x, %ids : tensor<4x128x768xbf16>, tensor<4x128xi64> -> tensor<f32>
  // CHECK: memwall.cross_entropy %{{.*}}, %{{.*}} : tensor<4x128x768xbf16>, tensor<4x128xi64> -> tensor<f32>
  %23 = memwall.cross_entropy %x, %ids none ignore_index -100 : tensor<4x128x768xbf16>, tensor<4x128xi64> -> tensor<4x128xf32>
  // CHECK: memwall.cross_entropy %{{.*}}, %{{.*}} none ignore_index -100 : tensor<4x128x768xbf16>, tensor<4x128xi64> -> tensor<4x128xf32>
  %24 = memwall.matmul %f8a, %f8b : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN> -> tensor<16x8xbf16>
  // CHECK: memwall.matmul %{{.*}}, %{{.*}} : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN> -> tensor<16x8xbf16>
  %25 = memwall.matmul %i8a, %i8a {transpose_rhs} : tensor<16x32xi8>, tensor<16x32xi8> -> tensor<16x16xi32>
  // CHECK: memwall.matmul %{{.*}}, %{{.*}} {transpose_rhs} : tensor<16x32xi8>, tensor<16x32xi8> -> tensor<16x16xi32>
  %26 = memwall.swiglu %0, %0 : tensor<4x128x3072xbf16>
  // CHECK: memwall.swiglu %0, %0 : tensor<4x128x3072xbf16>
  %27 = memwall.scale %x by 0.125 : tensor<4x128x768xbf16>
  // CHECK: memwall.scale %{{.*}} by 1.250000e-01 : tensor<4x128x768xbf16>
  %28 = memwall.silu %x : tensor<4x128x768xbf16>
  // CHECK: memwall.silu %{{.*}} : tensor<4x128x768xbf16>
  %29 = memwall.relu %x : tensor<4x128x768xbf16>
  // CHECK: memwall.relu %{{.*}} : tensor<4x128x768xbf16>
  %30 = memwall.tanh %x : tensor<4x128x768xbf16>
  // CHECK: memwall.tanh %{{.*}} : tensor<4x128x768xbf16>
  %31 = memwall.mul %x, %x : tensor<4x128x768xbf16>, tensor<4x128x768xbf16> -> tensor<4x128x768xbf16>
  // CHECK: memwall.mul %{{.*}}, %{{.*}} : tensor<4x128x768xbf16>, tensor<4x128x768xbf16> -> tensor<4x128x768xbf16>
  return
}

// CHECK-LABEL: func.func @more
// CHECK-SAME: {memwall.kind = #memwall.arg_kind<kv_cache>}
func.func @more(%a: tensor<2x1x16x32xf32>, %b: tensor<3x32x8xf32>,
                %cache: tensor<2x2x63x16xf16> {memwall.kind = #memwall.arg_kind<kv_cache>},
                %q: tensor<2x8x1x16xf16>, %k: tensor<2x1x64x16xf16>,
                %fmask: tensor<2x1x1x64xf16>, %x: tensor<2x4x8x16xf16>,
                %pos: tensor<2x8xi32>, %lbl: tensor<2x4xi32>, %logits: tensor<2x4x10xf32>) {
  // CHECK: memwall.matmul %{{.*}}, %{{.*}} : tensor<2x1x16x32xf32>, tensor<3x32x8xf32> -> tensor<2x3x16x8xf32>
  %0 = memwall.matmul %a, %b : tensor<2x1x16x32xf32>, tensor<3x32x8xf32> -> tensor<2x3x16x8xf32>
  // CHECK: memwall.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<3x32x8xf32>, tensor<3x32x8xf32> -> tensor<3x8x8xf32>
  %1 = memwall.matmul %b, %b {transpose_lhs} : tensor<3x32x8xf32>, tensor<3x32x8xf32> -> tensor<3x8x8xf32>
  // Decode step of multi-query attention over a cache, with a float mask.
  // CHECK: memwall.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} causal : tensor<2x8x1x16xf16>, tensor<2x1x64x16xf16>, tensor<2x1x64x16xf16>, tensor<2x1x1x64xf16> -> tensor<2x8x1x16xf16>
  %2 = memwall.attention %q, %k, %k mask %fmask causal : tensor<2x8x1x16xf16>, tensor<2x1x64x16xf16>, tensor<2x1x64x16xf16>, tensor<2x1x1x64xf16> -> tensor<2x8x1x16xf16>
  // CHECK: memwall.rope %{{.*}}, %{{.*}} : tensor<2x4x8x16xf16>, tensor<2x8xi32>
  %3 = memwall.rope %x, %pos : tensor<2x4x8x16xf16>, tensor<2x8xi32>
  // CHECK: memwall.reduce sum %{{.*}} axes [0, -1] : tensor<2x4x8x16xf16> -> tensor<4x8xf16>
  %4 = memwall.reduce sum %x axes [0, -1] : tensor<2x4x8x16xf16> -> tensor<4x8xf16>
  // CHECK: memwall.reduce max %{{.*}} axes [1] : tensor<2x4x8x16xf16> -> tensor<2x8x16xf16>
  %5 = memwall.reduce max %x axes [1] : tensor<2x4x8x16xf16> -> tensor<2x8x16xf16>
  // CHECK: memwall.cross_entropy %{{.*}}, %{{.*}} sum : tensor<2x4x10xf32>, tensor<2x4xi32> -> tensor<f32>
  %6 = memwall.cross_entropy %logits, %lbl sum : tensor<2x4x10xf32>, tensor<2x4xi32> -> tensor<f32>
  // CHECK: memwall.sub %{{.*}}, %{{.*}} : tensor<2x4x10xf32>, tensor<4x1xf32> -> tensor<2x4x10xf32>
  %red = memwall.reduce max %logits axes [0, 2] keep_dims : tensor<2x4x10xf32> -> tensor<1x4x1xf32>
  %col = memwall.reshape %red [4, 1] : tensor<1x4x1xf32> -> tensor<4x1xf32>
  %7 = memwall.sub %logits, %col : tensor<2x4x10xf32>, tensor<4x1xf32> -> tensor<2x4x10xf32>
  // CHECK: memwall.div %{{.*}}, %{{.*}} : tensor<2x4x10xf32>, tensor<2x4x10xf32> -> tensor<2x4x10xf32>
  %8 = memwall.div %7, %7 : tensor<2x4x10xf32>, tensor<2x4x10xf32> -> tensor<2x4x10xf32>
  // CHECK: memwall.cast %{{.*}} to f8E4M3FN : tensor<2x4x10xf32> -> tensor<2x4x10xf8E4M3FN>
  %9 = memwall.cast %8 to f8E4M3FN : tensor<2x4x10xf32> -> tensor<2x4x10xf8E4M3FN>
  // CHECK: memwall.kv_cache_append %{{.*}}, %{{.*}} : tensor<2x2x63x16xf16>, tensor<2x2x1x16xf16> -> tensor<2x2x64x16xf16>
  %new = memwall.slice %cache offsets [0, 0, 0, 0] sizes [2, 2, 1, 16] : tensor<2x2x63x16xf16> -> tensor<2x2x1x16xf16>
  %10 = memwall.kv_cache_append %cache, %new : tensor<2x2x63x16xf16>, tensor<2x2x1x16xf16> -> tensor<2x2x64x16xf16>
  return
}
