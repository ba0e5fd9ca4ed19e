// memwall-fuse puts a dequantize at use into its matmul's kernel: memwall's
// generated GEMM, whose main loop dequantizes the weight tiles. cuBLASLt
// cannot take the prologue, so auto and even --gemm=cublaslt choose
// memwall's GEMM, and the report says why.
// RUN: memwall-opt %s --fuse --target=h100-sxm | FileCheck %s
// RUN: memwall-opt %s --fuse --target=h100-sxm --report=- -o /dev/null | FileCheck %s --check-prefix=REPORT
// RUN: memwall-opt %s --fuse --target=h100-sxm --gemm=cublaslt --report=- -o /dev/null | FileCheck %s --check-prefix=REPORT
// RUN: memwall-opt %s --fuse --target=h100-sxm --gemm=memwall --report=- -o /dev/null | FileCheck %s --check-prefix=FORCED

// Llama-2-7B's decode up projection (16 tokens), int8 per output channel,
// then SiLU: one gemm fusion of the three ops, K split in two.
// CHECK-LABEL: func.func @w8_up_silu
// CHECK: memwall.fusion gemm(%arg1, %arg2, %arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memwall.dequantize
// CHECK-NEXT: memwall.matmul
// CHECK-NEXT: memwall.silu
// REPORT: gemm up.weight.dequantized+up+act: memwall gemm: cuBLASLt cannot run it: cuBLASLt does not dequantize weights in its main loop; K split 2 ways, the last CTA of a tile reduces
// FORCED: gemm up.weight.dequantized+up+act: memwall gemm (--gemm=memwall); K split 2 ways
func.func @w8_up_silu(%x: tensor<16x4096xbf16>, %q: tensor<11008x4096xi8>,
                      %s: tensor<11008x1xbf16>) -> tensor<16x11008xbf16> {
  %w = memwall.dequantize %q, %s : tensor<11008x4096xi8>, tensor<11008x1xbf16> -> tensor<11008x4096xbf16> loc("up.weight.dequantized")
  %y = memwall.matmul %x, %w {transpose_rhs} : tensor<16x4096xbf16>, tensor<11008x4096xbf16> -> tensor<16x11008xbf16> loc("up")
  %z = memwall.silu %y : tensor<16x11008xbf16> loc("act")
  return %z : tensor<16x11008xbf16>
}
