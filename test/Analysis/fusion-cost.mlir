// RUN: memwall-opt %s --split-input-file --pass-pipeline='builtin.module(memwall-test-print-fusion-cost)' -o /dev/null | FileCheck %s

// FusionCostAnalysis: the kernel of each fusion (its body ops are candidates
// of their own too) with the geometry codegen launches; a matmul epilogue is
// a cuBLASLt call.
// CHECK-LABEL: memwall.add at add: elementwise kernel of 1 ops over [64x1024], 2 inputs, 1 outputs; 256 threads x 32 blocks, vector 8, 1 vectors/thread
// CHECK-NEXT: memwall.gelu at gelu: elementwise kernel of 1 ops over [64x1024], 1 inputs, 1 outputs
// CHECK-NEXT: memwall.fusion at fused: elementwise kernel of 2 ops over [64x1024], 2 inputs, 1 outputs; 256 threads x 32 blocks
// CHECK-NEXT: memwall.matmul at proj: matmul_epilogue kernel of 1 ops over [64x1024], 2 inputs, 1 outputs; cuBLASLt; 134217728 FLOP
func.func @f(%x: tensor<64x1024xbf16>, %b: tensor<1024xbf16>, %w: tensor<1024x1024xbf16>) -> (tensor<64x1024xbf16>, tensor<64x1024xbf16>) {
  %0 = memwall.fusion elementwise(%x, %b) : (tensor<64x1024xbf16>, tensor<1024xbf16>) -> tensor<64x1024xbf16> {
  ^bb0(%a: tensor<64x1024xbf16>, %c: tensor<1024xbf16>):
    %1 = memwall.add %a, %c : tensor<64x1024xbf16>, tensor<1024xbf16> -> tensor<64x1024xbf16> loc("add")
    %2 = memwall.gelu %1 : tensor<64x1024xbf16> loc("gelu")
    memwall.yield %2 : tensor<64x1024xbf16>
  } loc("fused")
  %3 = memwall.matmul %x, %w : tensor<64x1024xbf16>, tensor<1024x1024xbf16> -> tensor<64x1024xbf16> loc("proj")
  return %0, %3 : tensor<64x1024xbf16>, tensor<64x1024xbf16>
}

// -----

// A candidate that is no legal kernel says why; a row reduction is one.
// CHECK: memwall.matmul at int8: no kernel: neither cuBLASLt (only f32, bf16 and f16 matmuls run through cuBLASLt) nor the generated GEMM (the generated GEMM: takes bf16, f16, f32, f8E4M3FN or f8E5M2 operands, got i8) runs it
// CHECK-NEXT: memwall.softmax at rows: reduction kernel of 1 ops over [4x8], 1 inputs, 1 outputs
func.func @g(%x: tensor<64x1024xi8>, %w: tensor<1024x1024xi8>, %y: tensor<4x8xf32>) -> (tensor<64x1024xi32>, tensor<4x8xf32>) {
  %0 = memwall.matmul %x, %w : tensor<64x1024xi8>, tensor<1024x1024xi8> -> tensor<64x1024xi32> loc("int8")
  %1 = memwall.softmax %y : tensor<4x8xf32> loc("rows")
  return %0, %1 : tensor<64x1024xi32>, tensor<4x8xf32>
}
