// RUN: memwall-opt %s --memwall-precision=policy=bf16-mixed | FileCheck %s --check-prefix=BF16
// RUN: memwall-opt %s --memwall-precision=policy=fp8-mixed --mlir-print-debuginfo | FileCheck %s --check-prefix=FP8
// RUN: not memwall-opt %s --memwall-precision=policy=int8-weights 2>&1 | FileCheck %s --check-prefix=INT8
// RUN: not memwall-opt %s --memwall-precision=policy=fp4 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not memwall-opt %s --memwall-precision=kv-cache-dtype=i4 2>&1 | FileCheck %s --check-prefix=BADKV

// BF16: module attributes {memwall.precision = "bf16-mixed"}
// BF16: func.func @mlp(%arg0: tensor<4x8xbf16> {{.*}}, %arg1: tensor<8x8xbf16> {{.*}}, %arg2: tensor<4xi64>
// BF16-SAME: -> tensor<f32>
// BF16: memwall.matmul %arg0, %arg1 : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
// BF16: memwall.gelu %{{.*}} : tensor<4x8xbf16>
// BF16: memwall.cross_entropy %{{.*}}, %arg2 : tensor<4x8xbf16>, tensor<4xi64> -> tensor<f32>

// Each GEMM input is cast once, right after it is defined; fp8 tensor
// cores read both operands K-major, so the weight stored [K, N] gets a
// transposed copy that the matmul reads as [N, K].
// FP8-LABEL: func.func @mlp
// FP8-DAG: %[[X8:.*]] = memwall.cast %arg0 to f8E4M3FN : tensor<4x8xbf16> -> tensor<4x8xf8E4M3FN> loc(#[[XNAME:.*]])
// FP8-DAG: %[[W8:.*]] = memwall.cast %arg1 to f8E4M3FN : tensor<8x8xbf16> -> tensor<8x8xf8E4M3FN> loc(#[[WNAME:.*]])
// FP8-DAG: %[[W8T:.*]] = memwall.transpose %[[W8]] [1, 0] : tensor<8x8xf8E4M3FN> -> tensor<8x8xf8E4M3FN> loc(#[[WTNAME:.*]])
// FP8: memwall.matmul %[[X8]], %[[W8T]] {transpose_rhs} : tensor<4x8xf8E4M3FN>, tensor<8x8xf8E4M3FN> -> tensor<4x8xbf16>
// FP8-LABEL: func.func @kmajor
// An rhs already [N, K] is read as cast; an lhs stored [K, M] is
// transposed; one copy per value and layout.
// FP8-DAG: %[[A8:.*]] = memwall.cast %arg0 to f8E4M3FN : tensor<8x4xbf16>
// FP8-DAG: %[[A8T:.*]] = memwall.transpose %[[A8]] [1, 0] : tensor<8x4xf8E4M3FN> -> tensor<4x8xf8E4M3FN>
// FP8-DAG: %[[B8:.*]] = memwall.cast %arg1 to f8E4M3FN : tensor<16x8xbf16>
// FP8-NOT: memwall.transpose
// FP8: memwall.matmul %[[A8T]], %[[B8]] {transpose_rhs} : tensor<4x8xf8E4M3FN>, tensor<16x8xf8E4M3FN> -> tensor<4x16xbf16>
// FP8: memwall.matmul %[[A8T]], %[[B8]] {transpose_rhs} : tensor<4x8xf8E4M3FN>, tensor<16x8xf8E4M3FN> -> tensor<4x16xbf16>
// The copies are named after their values.
// FP8-DAG: #[[XNAME]] = loc("x.fp8")
// FP8-DAG: #[[WNAME]] = loc("w.fp8")
// FP8-DAG: #[[WTNAME]] = loc("w.fp8t")

// Weight-only quantization is for inference: on a training step (which
// failed later with an adamw operand-type error) it is refused up front.
// INT8: precision.mlir:[[@LINE+5]]:1: error: memwall-precision: 'int8-weights' quantizes weights for inference, but @mlp is a training step (it returns a loss): use bf16-mixed, fp16-mixed or fp8-mixed

// BAD: error: memwall-precision: unknown policy 'fp4' (expected fp32, bf16-mixed, fp16-mixed, fp8-mixed, int8-weights, fp8-weights or int4-weights)
// BADKV: error: memwall-precision: unknown KV-cache dtype 'i4'

func.func @mlp(%x: tensor<4x8xf32> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
               %w: tensor<8x8xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("w"),
               %y: tensor<4xi64> {memwall.kind = #memwall.arg_kind<input>}) -> tensor<f32> {
  %h = memwall.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %a = memwall.gelu %h : tensor<4x8xf32>
  %l = memwall.cross_entropy %a, %y : tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>
  return %l : tensor<f32>
}

func.func @kmajor(%xt: tensor<8x4xf32> {memwall.kind = #memwall.arg_kind<input>},
                  %w: tensor<16x8xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %a = memwall.matmul %xt, %w {transpose_lhs, transpose_rhs} : tensor<8x4xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %b = memwall.matmul %xt, %w {transpose_lhs, transpose_rhs} : tensor<8x4xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %a, %b : tensor<4x16xf32>, tensor<4x16xf32>
}
