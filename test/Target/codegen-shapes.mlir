// REQUIRES: cuda
// Every kernel shape codegen handles assembles for sm_90a and sm_80: odd row
// lengths (masked chunks), tiny rows (sub-warp shuffles), several vectors per
// thread, per-row and scalar broadcasts, reductions with keep_dims, casts,
// f16 and mixed-precision LayerNorm parameters.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s --target=h100-sxm --emit=ptx -o %t/h100.ptx
// RUN: memwall-compile %s --target=a100-40gb --emit=ptx -o %t/a100.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/h100.ptx -o /dev/null %}
// RUN: %if ptxas %{ %ptxas -arch=sm_80 %t/a100.ptx -o /dev/null %}
// RUN: memwall-compile %s --emit=gpu | FileCheck %s

// 1000 bf16 per row: 8-wide vectors, 125 per row, 128 threads, the last 3
// masked.
// CHECK: gpu.func @kernel0_reduction{{.*}}known_block_size = array<i32: 128, 1, 1>
// CHECK: arith.select
// CHECK: scf.if
// Rows of 12 f32: 4-wide vectors, 3 per row: a 4-thread block, 2-wide
// shuffles... then a per-row scale and a scalar shift.
// CHECK: gpu.func @kernel1_reduction{{.*}}known_block_size = array<i32: 4, 1, 1>
// CHECK: gpu.shuffle  xor {{.*}} : f32
// 16384 f16 per row: 2048 vectors, 512 threads, 4 each.
// CHECK: gpu.func @kernel2_reduction{{.*}}known_block_size = array<i32: 512, 1, 1>
// CHECK: gpu.func @kernel3_elementwise
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK: gpu.func @kernel4_reduction
// CHECK: memref.store {{.*}} : memref<64xf32>
func.func @main(%a: tensor<64x1000xbf16>, %g: tensor<1000xf32>, %b: tensor<1000xf32>,
                %s: tensor<64x12xf32>, %r: tensor<64x1xf32>, %c: tensor<1xf32>,
                %h: tensor<8x16384xf16>, %hw: tensor<16384xf16>,
                %big: tensor<4096x1024xf32>)
    -> (tensor<64x1000xbf16>, tensor<64x12xf32>, tensor<8x16384xf16>, tensor<4096x1024xbf16>, tensor<64x1xf32>) {
  %0 = memwall.layer_norm %a, %g, %b : tensor<64x1000xbf16>, tensor<1000xf32>, tensor<1000xf32>
  %1 = memwall.softmax %s : tensor<64x12xf32>
  %2 = memwall.mul %1, %r : tensor<64x12xf32>, tensor<64x1xf32> -> tensor<64x12xf32>
  %3 = memwall.add %2, %c : tensor<64x12xf32>, tensor<1xf32> -> tensor<64x12xf32>
  %4 = memwall.rms_norm %h, %hw : tensor<8x16384xf16>, tensor<16384xf16>
  %5 = memwall.silu %big : tensor<4096x1024xf32>
  %6 = memwall.cast %5 to bf16 : tensor<4096x1024xf32> -> tensor<4096x1024xbf16>
  %7 = memwall.reduce mean %s axes [1] keep_dims : tensor<64x12xf32> -> tensor<64x1xf32>
  return %0, %3, %4, %6, %7 : tensor<64x1000xbf16>, tensor<64x12xf32>, tensor<8x16384xf16>, tensor<4096x1024xbf16>, tensor<64x1xf32>
}
