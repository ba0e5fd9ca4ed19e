// A KV cache appended in place: memwall-configure-kernels marks an append
// whose cache is a function argument nothing else reads, and
// memwall-convert-to-gpu gives that argument the appended cache's strides
// (its rows at the appended length's pitch), views the whole buffer as the
// appended cache and launches a kernel over the new rows only.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-configure-kernels))' -split-input-file | FileCheck %s --check-prefix=CONFIG
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-configure-kernels),memwall-convert-to-gpu)' -split-input-file | FileCheck %s

// CONFIG-LABEL: func.func @decode
// CONFIG: memwall.kv_cache_append {{.*}}memwall.in_place
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %[[CACHE:[^:]*]]: memref<1x8x4096x128xbf16, strided<[4198400, 524800, 128, 1]>>
// CHECK-SAME: %[[NEW:[^:]*]]: memref<1x8x4x128xbf16>
// CHECK: %[[APPENDED:.*]] = memwall.view %[[CACHE]] {memwall.buffer = "k_appended"} : memref<1x8x4096x128xbf16, strided<[4198400, 524800, 128, 1]>> to memref<1x8x4100x128xbf16>
// 8 heads x 4 rows x 128 bf16 in vectors of 8: 512 threads.
// CHECK: memwall.launch @kernels::@kernel0_kv_cache_append(%[[NEW]], %[[APPENDED]]) grid [2, 1, 1] block [256, 1, 1]
// CHECK: return %[[APPENDED]]
// CHECK: gpu.func @kernel0_kv_cache_append(%{{.*}}: memref<4096xbf16> {llvm.noalias}, %{{.*}}: memref<4198400xbf16> {llvm.noalias}) kernel
func.func @decode(%cache: tensor<1x8x4096x128xbf16> loc("k_cache"), %new: tensor<1x8x4x128xbf16> loc("k_new")) -> tensor<1x8x4100x128xbf16> {
  %0 = memwall.kv_cache_append %cache, %new : tensor<1x8x4096x128xbf16>, tensor<1x8x4x128xbf16> -> tensor<1x8x4100x128xbf16> loc("k_appended")
  return %0 : tensor<1x8x4100x128xbf16>
}

// -----

// A cache read by another op too stays dense and is copied: that reader
// indexes it as stored.
// CONFIG-LABEL: func.func @also_read
// CONFIG-NOT: memwall.in_place
// CHECK-LABEL: func.func @also_read(
// CHECK-SAME: %[[CACHE:[^:]*]]: memref<1x2x16x64xbf16>
// CHECK: %[[APPENDED:.*]] = memref.alloc() {memwall.buffer = "appended"} : memref<1x2x17x64xbf16>
// CHECK: memwall.launch @kernels::@kernel0_kv_cache_append(%[[CACHE]], %{{.*}}, %[[APPENDED]])
func.func @also_read(%cache: tensor<1x2x16x64xbf16> loc("cache"), %new: tensor<1x2x1x64xbf16> loc("new")) -> (tensor<1x2x17x64xbf16>, tensor<1x2x16x64xbf16>) {
  %0 = memwall.kv_cache_append %cache, %new : tensor<1x2x16x64xbf16>, tensor<1x2x1x64xbf16> -> tensor<1x2x17x64xbf16> loc("appended")
  %1 = memwall.scale %cache by 2.0 : tensor<1x2x16x64xbf16> loc("scaled")
  return %0, %1 : tensor<1x2x17x64xbf16>, tensor<1x2x16x64xbf16>
}
