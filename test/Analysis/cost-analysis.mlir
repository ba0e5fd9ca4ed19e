// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-test-print-cost-analysis)' -o /dev/null | FileCheck %s

// CostAnalysis: each kernel in program order with its traffic on the
// target, its category and whether it is memory-bound; the views cost
// nothing; parameters are the weight-tagged arguments.
// CHECK: cost analysis (computed) of 'm' on h100-sxm: 5 kernels, 1049600 params (2099200 B)
// CHECK-NEXT: #0 memwall.matmul at proj: 134217728 FLOP, 2228224 B read, 131072 B written, gemm memory-bound, {{.*}} s (bf16)
// CHECK-NEXT: #1 memwall.add at bias: 65536 FLOP, 133120 B read, 131072 B written, elementwise memory-bound
// CHECK-NEXT: #2 memwall.gelu at act: 327680 FLOP, 131072 B read, 131072 B written, elementwise memory-bound
// CHECK-NEXT: #3 memwall.reshape at view: 0 FLOP, 0 B read, 0 B written, layout memory-bound, 0.000e+00 s
// CHECK-NEXT: #4 memwall.reshape at back: 0 FLOP
// An unfused module has no fusion summary.
// CHECK-NOT: fusion:
module @m {
  func.func @step(%x: tensor<64x1024xbf16>, %w: tensor<1024x1024xbf16> {memwall.kind = #memwall.arg_kind<weight>}, %b: tensor<1024xbf16> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<64x1024xbf16> {
    %0 = memwall.matmul %x, %w : tensor<64x1024xbf16>, tensor<1024x1024xbf16> -> tensor<64x1024xbf16> loc("proj")
    %1 = memwall.add %0, %b : tensor<64x1024xbf16>, tensor<1024xbf16> -> tensor<64x1024xbf16> loc("bias")
    %2 = memwall.gelu %1 : tensor<64x1024xbf16> loc("act")
    %3 = memwall.reshape %2 [64, 32, 32] : tensor<64x1024xbf16> -> tensor<64x32x32xbf16> loc("view")
    %4 = memwall.reshape %3 [64, 1024] : tensor<64x32x32xbf16> -> tensor<64x1024xbf16> loc("back")
    return %4 : tensor<64x1024xbf16>
  }
}
