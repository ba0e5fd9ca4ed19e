// memwall-lower-kernel-ops: memwall.warpgroup_accumulate becomes one llvm.fadd
// per f32 register of NVGPUToNVVM's accumulator struct (M / 64 structs of
// N / 2 registers), behind unrealized casts; other kernels are left alone.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(gpu.module(memwall-lower-kernel-ops))' | FileCheck %s
// The casts fold once convert-nvgpu-to-nvvm has converted the accumulators.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(gpu.module(memwall-lower-kernel-ops,convert-nvgpu-to-nvvm,reconcile-unrealized-casts))' | FileCheck %s --check-prefix=NVVM

!acc = !nvgpu.warpgroup.accumulator<fragmented = vector<128x16xf32>>
// CHECK-LABEL: gpu.func @promote(
// CHECK: %[[A:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !nvgpu.warpgroup.accumulator<fragmented = vector<128x16xf32>> to !llvm.struct<(struct<(f32, f32, f32, f32, f32, f32, f32, f32)>, struct<(f32, f32, f32, f32, f32, f32, f32, f32)>)>
// CHECK: %[[P:.*]] = builtin.unrealized_conversion_cast
// CHECK: %[[X:.*]] = llvm.extractvalue %[[A]][0, 0]
// CHECK: %[[Y:.*]] = llvm.extractvalue %[[P]][0, 0]
// CHECK: %[[S:.*]] = llvm.fadd %[[X]], %[[Y]] : f32
// CHECK: llvm.insertvalue %[[S]], %[[A]][0, 0]
// CHECK-COUNT-15: llvm.fadd
// CHECK-NOT: llvm.fadd
// CHECK: %[[SUM:.*]] = builtin.unrealized_conversion_cast %{{.*}} to !nvgpu.warpgroup.accumulator<fragmented = vector<128x16xf32>>
// CHECK-NOT: memwall.warpgroup_accumulate
// CHECK: nvgpu.warpgroup.mma.store %[[SUM]]
// CHECK-LABEL: gpu.func @plain(
// CHECK-NOT: unrealized_conversion_cast

// NVVM-LABEL: gpu.func @promote(
// NVVM-COUNT-16: llvm.fadd
// NVVM-NOT: unrealized_conversion_cast
// NVVM-NOT: warpgroup
gpu.module @kernels {
  gpu.func @promote(%out: memref<128x16xf32, #gpu.address_space<workgroup>>) kernel {
    %acc = nvgpu.warpgroup.mma.init.accumulator -> !acc
    %partial = nvgpu.warpgroup.mma.init.accumulator -> !acc
    %sum = memwall.warpgroup_accumulate %acc, %partial : !acc
    nvgpu.warpgroup.mma.store %sum, %out : !acc to memref<128x16xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
  gpu.func @plain(%out: memref<16xf32>) kernel {
    gpu.return
  }
}
