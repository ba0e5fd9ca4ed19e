// The pass manager caches CostAnalysis: a second consumer in the pipeline
// gets it from the cache while no pass in between changed the IR; a pass
// that changes the IR (memwall-fuse) invalidates it.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-test-print-cost-analysis,memwall-test-print-fusion-cost,memwall-test-print-cost-analysis)' -o /dev/null | FileCheck %s --check-prefix=REUSED
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-test-print-cost-analysis,func.func(memwall-fuse),memwall-test-print-cost-analysis)' -o /dev/null | FileCheck %s --check-prefix=INVALIDATED

// REUSED: cost analysis (computed) of 'm' on h100-sxm: 3 kernels
// REUSED: cost analysis (cached) of 'm' on h100-sxm: 3 kernels

// INVALIDATED: cost analysis (computed) of 'm' on h100-sxm: 3 kernels
// INVALIDATED: cost analysis (computed) of 'm' on h100-sxm: 1 kernels
// INVALIDATED-NEXT: #0 memwall.fusion at {{.*}}: {{.*}} elementwise memory-bound
// INVALIDATED-NEXT: fusion: 3 -> 1 kernels, 524288 B saved
module @m {
  func.func @chain(%x: tensor<64x1024xbf16>, %b: tensor<1024xbf16>) -> tensor<64x1024xbf16> {
    %0 = memwall.add %x, %b : tensor<64x1024xbf16>, tensor<1024xbf16> -> tensor<64x1024xbf16>
    %1 = memwall.gelu %0 : tensor<64x1024xbf16>
    %2 = memwall.scale %1 by 2.0 : tensor<64x1024xbf16>
    return %2 : tensor<64x1024xbf16>
  }
}
