// RUN: memwall-opt %s --split-input-file --fuse --target=h100-sxm | FileCheck %s
// RUN: memwall-opt %s --split-input-file --fuse --target=h100-sxm --gemm=cublaslt | FileCheck %s --check-prefix=CUBLAS

// An elementwise chain becomes one kernel; the bias is read through a
// broadcast.
// CHECK-LABEL: func.func @elementwise_chain
// CHECK: %[[F:.*]] = memwall.fusion elementwise(%arg0, %arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memwall.add
// CHECK-NEXT: memwall.gelu
// CHECK-NEXT: memwall.scale
// CHECK-NEXT: memwall.yield
// CHECK: return %[[F]]
func.func @elementwise_chain(%x: tensor<64x1024xbf16>, %b: tensor<1024xbf16>) -> tensor<64x1024xbf16> {
  %0 = memwall.add %x, %b : tensor<64x1024xbf16>, tensor<1024xbf16> -> tensor<64x1024xbf16>
  %1 = memwall.gelu %0 : tensor<64x1024xbf16>
  %2 = memwall.scale %1 by 2.0 : tensor<64x1024xbf16>
  return %2 : tensor<64x1024xbf16>
}

// -----

// Residual add + LayerNorm: the sum is needed later (the residual stream),
// so the kernel writes it as a second result instead of recomputing it.
// CHECK-LABEL: func.func @residual_layer_norm
// CHECK: %[[F:.*]]:2 = memwall.fusion reduction(%arg0, %arg1, %arg2, %arg3)
// CHECK: memwall.add
// CHECK-NEXT: memwall.layer_norm
// CHECK-NEXT: memwall.yield
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @residual_layer_norm(%x: tensor<8x128x768xbf16>, %r: tensor<8x128x768xbf16>, %g: tensor<768xbf16>, %b: tensor<768xbf16>) -> (tensor<8x128x768xbf16>, tensor<8x128x768xbf16>) {
  %0 = memwall.add %x, %r : tensor<8x128x768xbf16>, tensor<8x128x768xbf16> -> tensor<8x128x768xbf16>
  %1 = memwall.layer_norm %0, %g, %b : tensor<8x128x768xbf16>, tensor<768xbf16>, tensor<768xbf16>
  return %0, %1 : tensor<8x128x768xbf16>, tensor<8x128x768xbf16>
}

// -----

// Bias add and tanh-GELU after a matmul are cuBLASLt's GELU_BIAS epilogue.
// CHECK-LABEL: func.func @matmul_bias_gelu_tanh
// CHECK: memwall.fusion matmul_epilogue
// CHECK: memwall.matmul
// CHECK-NEXT: memwall.add
// CHECK-NEXT: memwall.gelu
// CHECK-NEXT: memwall.yield
func.func @matmul_bias_gelu_tanh(%x: tensor<512x768xbf16>, %w: tensor<768x3072xbf16>, %b: tensor<3072xbf16>) -> tensor<512x3072xbf16> {
  %0 = memwall.matmul %x, %w : tensor<512x768xbf16>, tensor<768x3072xbf16> -> tensor<512x3072xbf16>
  %1 = memwall.add %0, %b : tensor<512x3072xbf16>, tensor<3072xbf16> -> tensor<512x3072xbf16>
  %2 = memwall.gelu %1 tanh : tensor<512x3072xbf16>
  return %2 : tensor<512x3072xbf16>
}

// -----

// cuBLASLt's GELU is the tanh form: an erf GELU stays out of the GEMM and
// runs as its own kernel.
// CHECK-LABEL: func.func @matmul_gelu_erf
// CHECK: %[[M:.*]] = memwall.matmul
// CHECK-NEXT: %[[G:.*]] = memwall.gelu %[[M]]
// CHECK-NOT: memwall.fusion
func.func @matmul_gelu_erf(%x: tensor<512x768xf32>, %w: tensor<768x768xf32>) -> tensor<512x768xf32> {
  %0 = memwall.matmul %x, %w : tensor<512x768xf32>, tensor<768x768xf32> -> tensor<512x768xf32>
  %1 = memwall.gelu %0 : tensor<512x768xf32>
  return %1 : tensor<512x768xf32>
}

// -----

// A matmul with two consumers: cuBLASLt writes only one result, so under
// --gemm=cublaslt nothing joins the GEMM and the two consumers share one
// kernel (sibling fusion) that reads the product once. memwall's generated
// GEMM applies both to the accumulator and writes two results, saving the
// product's round trip: under auto that is one kernel.
// CHECK-LABEL: func.func @matmul_two_consumers
// CHECK: %[[F:.*]]:2 = memwall.fusion gemm(%arg0, %arg1)
// CHECK: memwall.matmul
// CHECK-NEXT: memwall.relu
// CHECK-NEXT: memwall.tanh
// CHECK: return %[[F]]#0, %[[F]]#1
// CUBLAS-LABEL: func.func @matmul_two_consumers
// CUBLAS: %[[M:.*]] = memwall.matmul
// CUBLAS-NEXT: %[[F:.*]]:2 = memwall.fusion elementwise(%[[M]])
// CUBLAS-NOT: memwall.matmul
// CUBLAS: return %[[F]]#0, %[[F]]#1
func.func @matmul_two_consumers(%x: tensor<512x768xbf16>, %w: tensor<768x768xbf16>) -> (tensor<512x768xbf16>, tensor<512x768xbf16>) {
  %0 = memwall.matmul %x, %w : tensor<512x768xbf16>, tensor<768x768xbf16> -> tensor<512x768xbf16>
  %1 = memwall.relu %0 : tensor<512x768xbf16>
  %2 = memwall.tanh %0 : tensor<512x768xbf16>
  return %1, %2 : tensor<512x768xbf16>, tensor<512x768xbf16>
}

// -----

// Rows of 49152 f32: softmax alone holds 96 floats per thread in registers
// (216 estimated registers); keeping the prologue's sum alive across the
// reduction for the epilogue's multiply would need about 312 and spill, so
// the three never share a kernel. The softmax takes the multiply (it reads
// the row the softmax already holds, saving the round trip of the softmax's
// result) and the add stays a kernel of its own.
// CHECK-LABEL: func.func @spilling_fusion_rejected
// CHECK: %[[A:.*]] = memwall.add
// CHECK: memwall.fusion reduction(%[[A]])
// CHECK: memwall.softmax
// CHECK-NEXT: memwall.mul
// CHECK-NOT: memwall.add
func.func @spilling_fusion_rejected(%x: tensor<16x49152xf32>, %y: tensor<16x49152xf32>) -> tensor<16x49152xf32> {
  %0 = memwall.add %x, %y : tensor<16x49152xf32>, tensor<16x49152xf32> -> tensor<16x49152xf32>
  %1 = memwall.softmax %0 : tensor<16x49152xf32>
  %2 = memwall.mul %1, %0 : tensor<16x49152xf32>, tensor<16x49152xf32> -> tensor<16x49152xf32>
  return %2 : tensor<16x49152xf32>
}

// -----

// Fusing %0 with %2 would need the transpose both before the kernel (it
// reads %0) and after it (the kernel reads its result): a cycle.
// CHECK-LABEL: func.func @no_cycle_through_unfusible_op
// CHECK: %[[A:.*]] = memwall.relu
// CHECK-NEXT: %[[T:.*]] = memwall.transpose %[[A]]
// CHECK-NEXT: memwall.add %[[A]], %[[T]]
// CHECK-NOT: memwall.fusion
func.func @no_cycle_through_unfusible_op(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = memwall.relu %x : tensor<64x64xf32>
  %1 = memwall.transpose %0 [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
  %2 = memwall.add %0, %1 : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  return %2 : tensor<64x64xf32>
}

// -----

// Nothing to fuse (--fuse tiles the attention into one flash_attention
// kernel first): the function is still marked, so the report has a fusion
// section.
// CHECK-LABEL: func.func @nothing_to_fuse
// CHECK-SAME: attributes {memwall.fused}
// CHECK: memwall.flash_attention
// CHECK-NOT: memwall.fusion
func.func @nothing_to_fuse(%q: tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16> {
  %0 = memwall.attention %q, %q, %q : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x2x8x16xbf16>
  return %0 : tensor<1x2x8x16xbf16>
}
