// memwall-tensor-map-params-to-pointers: tensor-map kernel parameters become
// !llvm.ptr behind an unrealized cast; other kernels and parameters are left
// alone.
// RUN: memwall-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(memwall-tensor-map-params-to-pointers))' | FileCheck %s

!map = !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
!mbar = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
// CHECK-LABEL: gpu.func @tma(
// CHECK-SAME: %[[P:.*]]: !llvm.ptr, %[[OUT:.*]]: memref<16xf32>) kernel
// CHECK-NEXT: %[[MAP:.*]] = builtin.unrealized_conversion_cast %[[P]] : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>
// CHECK: nvgpu.tma.async.load %[[MAP]]
// CHECK-LABEL: gpu.func @plain(
// CHECK-SAME: %{{.*}}: memref<16xf32>) kernel
// CHECK-NOT: unrealized_conversion_cast
gpu.module @kernels {
  gpu.func @tma(%map: !map, %out: memref<16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %bar = nvgpu.mbarrier.create -> !mbar
    %dsm = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %tile = memref.view %dsm[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128x64xbf16, #gpu.address_space<workgroup>>
    nvgpu.tma.async.load %map[%c0, %c0], %bar[%c0] to %tile : !map, !mbar -> memref<128x64xbf16, #gpu.address_space<workgroup>>
    gpu.return
  }
  gpu.func @plain(%out: memref<16xf32>) kernel {
    gpu.return
  }
}
