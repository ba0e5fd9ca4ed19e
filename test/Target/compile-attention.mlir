// REQUIRES: cuda
// memwall-compile tiles attention and lowers it to the tensor-core kernel:
// K/V tiles streamed by cp.async into padded dynamic shared memory, ldmatrix
// fragments, mma.sync m16n8k16 (bf16 here), one warp per 16 query rows. The
// PTX assembles for sm_90a and sm_80.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s --emit=gpu | FileCheck %s
// RUN: memwall-compile %s -o %t/h100
// RUN: %PYTHON %S/summarize_bundle.py %t/h100/manifest.json | FileCheck %s --check-prefix=BUNDLE
// RUN: memwall-compile %s --target=a100-40gb -o %t/a100
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/h100/kernels.ptx -o /dev/null %}
// RUN: %if ptxas %{ %ptxas -arch=sm_80 %t/a100/kernels.ptx -o /dev/null %}
// The bundle's reference graph (naive attention) runs on the CPU.
// RUN: memwall-run %t/h100 --reference-only | FileCheck %s --check-prefix=REF

// CHECK: gpu.func @kernel0_attention(%{{.*}}: memref<3145728xbf16> {llvm.noalias}, %{{.*}}: memref<786432xbf16> {llvm.noalias}, %{{.*}}: memref<786432xbf16> {llvm.noalias}, %{{.*}}: memref<3145728xbf16> {llvm.noalias}, %{{.*}}: memref<24576xf32> {llvm.noalias}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: gpu.dynamic_shared_memory
// CHECK: nvgpu.device_async_copy {{.*}}, 8, {{.*}} {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_wait
// CHECK: gpu.barrier
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: scf.for
// Scores: Q Kᵀ on tensor cores; the causal mask only where a block needs it.
// CHECK: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK: scf.if
// CHECK: arith.select
// Row max and sum over the four lanes of a row.
// CHECK: gpu.shuffle  xor
// CHECK: math.exp2
// V is read transposed.
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: nvvm.mma.sync
// CHECK: scf.yield
// CHECK: math.log

// Grouped-query heads share K/V tiles: a block's 128 rows come from the 4
// query heads x 1024 queries of one KV head, 32 blocks for each of the 2 x 3
// KV heads: 192 blocks fill an H100's 132 SMs, so the keys are not split.
// Tiles 128x64 with 16-byte row padding:
// 2 B x (128 + 64 + 64) x (128 + 8) = 69632 bytes of shared memory.
// BUNDLE: kernel kernel0_attention grid=[32, 6, 1] block=[256, 1, 1] shared=69632 args=q,k,v,attn#0,attn#1 ops=attn
// BUNDLE-NOT: kernel
// BUNDLE: output result0 buffer=attn#0 value=attn

// REF: output result0: bf16 [2, 12, 1024, 128]
func.func @main(%q: tensor<2x12x1024x128xbf16> loc("q"),
                %k: tensor<2x3x1024x128xbf16> loc("k"),
                %v: tensor<2x3x1024x128xbf16> loc("v"))
    -> tensor<2x12x1024x128xbf16> {
  %0 = memwall.attention %q, %k, %v causal : tensor<2x12x1024x128xbf16>, tensor<2x3x1024x128xbf16>, tensor<2x3x1024x128xbf16> -> tensor<2x12x1024x128xbf16> loc("attn")
  return %0 : tensor<2x12x1024x128xbf16>
}
