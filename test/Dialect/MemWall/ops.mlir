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
             %f8a: tensor<16x32xf8E4M3FN>, %f8b: tensor<32x8xf8E4M3FN>, %i8a: tensor<16x32xi8>, %mask: tensor<1x1x128x128xi1>,
             %scales16: tensor<16x1xbf16>, %scales8: tensor<4x8xf32>, %i4a: tensor<16x32xi4>) {
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
  %s16 = memwall.dequantize %i8a, %scales16 : tensor<16x32xi8>, tensor<16x1xbf16> -> tensor<16x32xbf16>
  // CHECK: memwall.dequantize %{{.*}}, %{{.*}} : tensor<16x32xi8>, tensor<16x1xbf16> -> tensor<16x32xbf16>
  %s8 = memwall.dequantize %f8b, %scales8 : tensor<32x8xf8E4M3FN>, tensor<4x8xf32> -> tensor<32x8xf16>
  // CHECK: memwall.dequantize %{{.*}}, %{{.*}} : tensor<32x8xf8E4M3FN>, tensor<4x8xf32> -> tensor<32x8xf16>
  %z16 = memwall.dequantize %i8a, %scales16 zero_points %scales16 : tensor<16x32xi8>, tensor<16x1xbf16>, tensor<16x1xbf16> -> tensor<16x32xbf16>
  // CHECK: memwall.dequantize %{{.*}}, %[[S:.*]] zero_points %[[S]] : tensor<16x32xi8>, tensor<16x1xbf16>, tensor<16x1xbf16> -> tensor<16x32xbf16>
  %nf4 = memwall.dequantize %i4a, %scales16 {codebook = array<f32: -1.0, -0.9, -0.8, -0.7, -0.6, -0.5, -0.4, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 1.0>} : tensor<16x32xi4>, tensor<16x1xbf16> -> tensor<16x32xbf16>
  // CHECK: memwall.dequantize %{{.*}}, %{{.*}} {codebook = array<f32: -1.000000e+00, -0.899999976, {{.*}}, 1.000000e+00>} : tensor<16x32xi4>, tensor<16x1xbf16> -> tensor<16x32xbf16>
  %sw = memwall.attention %q, %k, %k causal window 64 : tensor<1x32x128x128xbf16>, tensor<1x8x128x128xbf16>, tensor<1x8x128x128xbf16> -> tensor<1x32x128x128xbf16>
  // CHECK: memwall.attention %{{.*}}, %{{.*}}, %{{.*}} causal window 64 : tensor<1x32x128x128xbf16>, tensor<1x8x128x128xbf16>, tensor<1x8x128x128xbf16> -> tensor<1x32x128x128xbf16>
  %sr = memwall.rope %q, %pos theta 500000.0 llama3_scaling [8.0, 1.0, 4.0, 8192.0] : tensor<1x32x128x128xbf16>, tensor<128xi64>
  // CHECK: memwall.rope %{{.*}}, %{{.*}} theta 5.000000e+05 llama3_scaling [8.000000e+00, 1.000000e+00, 4.000000e+00, 8.192000e+03] : tensor<1x32x128x128xbf16>, tensor<128xi64>
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

// Variants the first two functions leave out, with operands checked by name so
// a printer that reorders or drops an operand fails. Attributes at their
// default value (gelu erf, cross_entropy mean, dropout seed 0, softmax axis -1,
// layer_norm eps 1e-5, rms_norm eps 1e-6, rope theta 1e4) are elided.
// CHECK-LABEL: func.func @variants
// CHECK-SAME: %arg0: tensor<4x1xf32> {memwall.kind = #memwall.arg_kind<input>}
// CHECK-SAME: %arg1: tensor<1x8xf32> {memwall.kind = #memwall.arg_kind<weight>}
// CHECK-SAME: %arg2: tensor<1x4x16x8xf32> {memwall.kind = #memwall.arg_kind<kv_cache>}
// CHECK-SAME: -> tensor<4x8xf32>
func.func @variants(%c: tensor<4x1xf32> {memwall.kind = #memwall.arg_kind<input>},
                    %r: tensor<1x8xf32> {memwall.kind = #memwall.arg_kind<weight>},
                    %cache: tensor<1x4x16x8xf32> {memwall.kind = #memwall.arg_kind<kv_cache>},
                    %m: tensor<4x8xf32>, %w6: tensor<6x4xf32>, %w: tensor<8xf32>,
                    %e5a: tensor<2x4x8xf8E5M2>, %e5b: tensor<8x3xf8E5M2>,
                    %i8a: tensor<2x4x8xi8>, %i8b: tensor<2x8x5xi8>,
                    %h: tensor<4x8xf16>, %hb: tensor<6xf16>, %hw: tensor<8x6xf16>,
                    %xb: tensor<2x4x8xbf16>, %g32: tensor<8xf32>,
                    %q: tensor<1x4x2x8xf32>, %v: tensor<1x4x16x6xf32>,
                    %q8: tensor<1x2x4x16xf8E4M3FN>, %k8: tensor<1x2x4x16xf8E4M3FN>,
                    %bmask: tensor<1x1x4x4xbf16>,
                    %pos: tensor<2xi32>, %ids: tensor<3xi32>, %t8: tensor<10x4xf8E4M3FN>,
                    %kc8: tensor<1x1x3x4xf8E4M3FN>, %kn8: tensor<1x1x2x4xf8E4M3FN>,
                    %lbl: tensor<4xi32>, %one: tensor<1xf32>, %bits: tensor<4x8xi1>,
                    %ints: tensor<4x8xi64>) -> tensor<4x8xf32> {
  // Two-sided broadcasting: [4, 1] op [1, 8] -> [4, 8].
  // CHECK: memwall.mul %arg0, %arg1 : tensor<4x1xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  %0 = memwall.mul %c, %r : tensor<4x1xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: memwall.div %arg1, %arg0 : tensor<1x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %1 = memwall.div %r, %c : tensor<1x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  // A missing leading dimension counts as 1: [8] op [4, 8].
  // CHECK-NEXT: memwall.sub %arg5, %arg3 : tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = memwall.sub %w, %m : tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: memwall.add %arg3, %arg3 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = memwall.add %m, %m : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>

  // Both transpose flags: lhs [K=4, M=8], rhs [N=6, K=4] -> [8, 6].
  // CHECK-NEXT: memwall.matmul %arg3, %arg4 {transpose_lhs, transpose_rhs} : tensor<4x8xf32>, tensor<6x4xf32> -> tensor<8x6xf32>
  %4 = memwall.matmul %m, %w6 {transpose_lhs, transpose_rhs} : tensor<4x8xf32>, tensor<6x4xf32> -> tensor<8x6xf32>
  // fp8 e5m2 products come back as bf16; a batched lhs times a rank-2 rhs.
  // CHECK-NEXT: memwall.matmul %arg6, %arg7 : tensor<2x4x8xf8E5M2>, tensor<8x3xf8E5M2> -> tensor<2x4x3xbf16>
  %5 = memwall.matmul %e5a, %e5b : tensor<2x4x8xf8E5M2>, tensor<8x3xf8E5M2> -> tensor<2x4x3xbf16>
  // Batched int8 on both sides accumulates in i32.
  // CHECK-NEXT: memwall.matmul %arg8, %arg9 : tensor<2x4x8xi8>, tensor<2x8x5xi8> -> tensor<2x4x5xi32>
  %6 = memwall.matmul %i8a, %i8b : tensor<2x4x8xi8>, tensor<2x8x5xi8> -> tensor<2x4x5xi32>
  // f16 with a bias.
  // CHECK-NEXT: memwall.matmul %arg10, %arg12 bias %arg11 : tensor<4x8xf16>, tensor<8x6xf16>, tensor<6xf16> -> tensor<4x6xf16>
  %7 = memwall.matmul %h, %hw bias %hb : tensor<4x8xf16>, tensor<8x6xf16>, tensor<6xf16> -> tensor<4x6xf16>

  // CHECK-NEXT: memwall.gelu %arg3 : tensor<4x8xf32>
  %8 = memwall.gelu %m erf : tensor<4x8xf32>
  // CHECK-NEXT: memwall.dropout %arg3 rate 0.000000e+00 : tensor<4x8xf32>
  %9 = memwall.dropout %m rate 0.0 seed 0 : tensor<4x8xf32>
  // CHECK-NEXT: memwall.dropout %arg3 rate 5.000000e-01 seed -1 : tensor<4x8xf32>
  %10 = memwall.dropout %m rate 0.5 seed -1 : tensor<4x8xf32>
  // CHECK-NEXT: memwall.swiglu %arg10, %arg10 : tensor<4x8xf16>
  %11 = memwall.swiglu %h, %h : tensor<4x8xf16>

  // bf16 input with fp32 parameters; no bias but an epsilon.
  // CHECK-NEXT: memwall.layer_norm %arg13, %arg14 eps 1.000000e-03 : tensor<2x4x8xbf16>, tensor<8xf32>
  %12 = memwall.layer_norm %xb, %g32 eps 1.0e-3 : tensor<2x4x8xbf16>, tensor<8xf32>
  // CHECK-NEXT: memwall.layer_norm %arg13, %arg14, %arg14 : tensor<2x4x8xbf16>, tensor<8xf32>, tensor<8xf32>
  %13 = memwall.layer_norm %xb, %g32, %g32 eps 1.0e-5 : tensor<2x4x8xbf16>, tensor<8xf32>, tensor<8xf32>
  // CHECK-NEXT: memwall.rms_norm %arg3, %arg5 eps 1.000000e-05 : tensor<4x8xf32>, tensor<8xf32>
  %14 = memwall.rms_norm %m, %w eps 1.0e-5 : tensor<4x8xf32>, tensor<8xf32>
  // CHECK-NEXT: memwall.rms_norm %arg3, %arg5 : tensor<4x8xf32>, tensor<8xf32>
  %15 = memwall.rms_norm %m, %w eps 1.0e-6 : tensor<4x8xf32>, tensor<8xf32>
  // CHECK-NEXT: memwall.softmax %arg13 axis -2 : tensor<2x4x8xbf16>
  %16 = memwall.softmax %xb axis -2 : tensor<2x4x8xbf16>
  // CHECK-NEXT: memwall.softmax %arg13 : tensor<2x4x8xbf16>
  %17 = memwall.softmax %xb axis -1 : tensor<2x4x8xbf16>
  // CHECK-NEXT: memwall.reduce sum %arg13 axes [0, 2] keep_dims : tensor<2x4x8xbf16> -> tensor<1x4x1xbf16>
  %18 = memwall.reduce sum %xb axes [0, 2] keep_dims : tensor<2x4x8xbf16> -> tensor<1x4x1xbf16>
  // Reducing every axis leaves a rank-0 tensor.
  // CHECK-NEXT: memwall.reduce max %arg3 axes [1, 0] : tensor<4x8xf32> -> tensor<f32>
  %19 = memwall.reduce max %m axes [1, 0] : tensor<4x8xf32> -> tensor<f32>

  // Prefill over a cache (Sq = 2 < Sk = 16), causal, no mask; Dv = 6 != D = 8.
  // CHECK-NEXT: memwall.attention %arg15, %arg2, %arg16 causal : tensor<1x4x2x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x6xf32> -> tensor<1x4x2x6xf32>
  %20 = memwall.attention %q, %cache, %v causal : tensor<1x4x2x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x6xf32> -> tensor<1x4x2x6xf32>
  // Non-causal, no mask, no scale.
  // CHECK-NEXT: memwall.attention %arg15, %arg2, %arg2 : tensor<1x4x2x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32> -> tensor<1x4x2x8xf32>
  %21 = memwall.attention %q, %cache, %cache : tensor<1x4x2x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32> -> tensor<1x4x2x8xf32>
  // fp8 attention gives bf16, and its float mask is bf16; mask, causal and
  // scale together print in that order.
  // CHECK-NEXT: memwall.attention %arg17, %arg18, %arg18 mask %arg19 causal scale 2.500000e-01 : tensor<1x2x4x16xf8E4M3FN>, tensor<1x2x4x16xf8E4M3FN>, tensor<1x2x4x16xf8E4M3FN>, tensor<1x1x4x4xbf16> -> tensor<1x2x4x16xbf16>
  %22 = memwall.attention %q8, %k8, %k8 mask %bmask causal scale 0.25 : tensor<1x2x4x16xf8E4M3FN>, tensor<1x2x4x16xf8E4M3FN>, tensor<1x2x4x16xf8E4M3FN>, tensor<1x1x4x4xbf16> -> tensor<1x2x4x16xbf16>

  // CHECK-NEXT: memwall.rope %arg15, %arg20 : tensor<1x4x2x8xf32>, tensor<2xi32>
  %23 = memwall.rope %q, %pos theta 10000.0 : tensor<1x4x2x8xf32>, tensor<2xi32>
  // fp8 table, i32 indices of rank 1.
  // CHECK-NEXT: memwall.embedding %arg22[%arg21] : tensor<10x4xf8E4M3FN>, tensor<3xi32> -> tensor<3x4xf8E4M3FN>
  %24 = memwall.embedding %t8[%ids] : tensor<10x4xf8E4M3FN>, tensor<3xi32> -> tensor<3x4xf8E4M3FN>
  // CHECK-NEXT: memwall.kv_cache_append %arg23, %arg24 : tensor<1x1x3x4xf8E4M3FN>, tensor<1x1x2x4xf8E4M3FN> -> tensor<1x1x5x4xf8E4M3FN>
  %25 = memwall.kv_cache_append %kc8, %kn8 : tensor<1x1x3x4xf8E4M3FN>, tensor<1x1x2x4xf8E4M3FN> -> tensor<1x1x5x4xf8E4M3FN>
  // CHECK-NEXT: memwall.cross_entropy %arg3, %arg25 : tensor<4x8xf32>, tensor<4xi32> -> tensor<f32>
  %26 = memwall.cross_entropy %m, %lbl mean : tensor<4x8xf32>, tensor<4xi32> -> tensor<f32>
  // CHECK-NEXT: memwall.cross_entropy %arg3, %arg25 sum ignore_index 0 : tensor<4x8xf32>, tensor<4xi32> -> tensor<f32>
  %27 = memwall.cross_entropy %m, %lbl sum ignore_index 0 : tensor<4x8xf32>, tensor<4xi32> -> tensor<f32>
  // CHECK-NEXT: memwall.cross_entropy %arg3, %arg25 ignore_index -100 : tensor<4x8xf32>, tensor<4xi32> -> tensor<f32>
  %28 = memwall.cross_entropy %m, %lbl ignore_index -100 : tensor<4x8xf32>, tensor<4xi32> -> tensor<f32>

  // To and from rank 0.
  // CHECK-NEXT: memwall.reshape %arg26 [] : tensor<1xf32> -> tensor<f32>
  %29 = memwall.reshape %one [] : tensor<1xf32> -> tensor<f32>
  // CHECK-NEXT: memwall.reshape %29 [1, 1] : tensor<f32> -> tensor<1x1xf32>
  %30 = memwall.reshape %29 [1, 1] : tensor<f32> -> tensor<1x1xf32>
  // Data movement carries i1 and i64.
  // CHECK-NEXT: memwall.transpose %arg27 [1, 0] : tensor<4x8xi1> -> tensor<8x4xi1>
  %31 = memwall.transpose %bits [1, 0] : tensor<4x8xi1> -> tensor<8x4xi1>
  // CHECK-NEXT: memwall.slice %arg28 offsets [1, 1] sizes [2, 3] strides [2, 3] : tensor<4x8xi64> -> tensor<2x3xi64>
  %32 = memwall.slice %ints offsets [1, 1] sizes [2, 3] strides [2, 3] : tensor<4x8xi64> -> tensor<2x3xi64>
  // Three inputs of different lengths along axis 0; one input alone.
  // CHECK-NEXT: memwall.concat %arg3, %0, %arg1 axis 0 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<1x8xf32> -> tensor<9x8xf32>
  %33 = memwall.concat %m, %0, %r axis 0 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<1x8xf32> -> tensor<9x8xf32>
  // CHECK-NEXT: memwall.concat %arg3 axis 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  %34 = memwall.concat %m axis 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: memwall.cast %arg27 to f32 : tensor<4x8xi1> -> tensor<4x8xf32>
  %35 = memwall.cast %bits to f32 : tensor<4x8xi1> -> tensor<4x8xf32>
  // CHECK-NEXT: memwall.cast %arg3 to i8 : tensor<4x8xf32> -> tensor<4x8xi8>
  %36 = memwall.cast %m to i8 : tensor<4x8xf32> -> tensor<4x8xi8>
  // CHECK-NEXT: memwall.cast %arg28 to f8E5M2 : tensor<4x8xi64> -> tensor<4x8xf8E5M2>
  %37 = memwall.cast %ints to f8E5M2 : tensor<4x8xi64> -> tensor<4x8xf8E5M2>
  // CHECK-NEXT: return %3 : tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}
