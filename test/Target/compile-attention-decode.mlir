// REQUIRES: cuda
// A decode step (one query token, a 4000-token f16 KV cache, 32 query heads
// over 8 KV heads) runs flash-decoding: the 4 query heads of a KV head share
// one 16-row block (one warp), so 8 blocks fill a fraction of the SMs and
// the 63 key blocks are split in 63 ranges (memwall-tile-attention's choice:
// up to 4 waves for decode-shaped blocks, which stream K and V), whose fp32
// partial outputs and log-sum-exps the last split of each block merges, in
// the same kernel (a counter per block of rows, left zero).
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-compile %s --emit=gpu | FileCheck %s --check-prefix=GPU
// RUN: memwall-run %t/b --reference-only | FileCheck %s --check-prefix=REF

// 63 x 32 x 128 fp32 partial outputs, 63 x 32 partial log-sum-exps.
// CHECK: buffer kernel0_attention_partial_out f32 [63, 1, 32, 1, 128] 1032192 intermediate
// CHECK: buffer kernel0_attention_partial_lse f32 [63, 1, 32, 1] 8064 intermediate
// 16 query rows (one warp) instead of 128; tiles 16x64 (block_kv from the pass):
// 2 B x (16 + 64 + 64) x (128 + 8) = 39168 bytes.
// CHECK: buffer kernel0_attention_counters i32 [8] 32 counters
// CHECK: kernel kernel0_attention grid=[1, 8, 63] block=[32, 1, 1] shared=39168 args=q,k,v,attn#0,attn#1,kernel0_attention_partial_out,kernel0_attention_partial_lse,kernel0_attention_counters
// CHECK-NOT: kernel

// f16 multiplicands go to mma.sync as vector<2xf16>; the merge weighs the
// splits by exp of their log-sum-exps after the last one arrived.
// GPU: nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32)
// GPU: memref.atomic_rmw addi
// GPU: nvvm.barrier #nvvm.reduction<or>
// GPU: math.exp

// REF: output result0: f16 [1, 32, 1, 128]
func.func @main(%q: tensor<1x32x1x128xf16> loc("q"),
                %k: tensor<1x8x4000x128xf16> loc("k"),
                %v: tensor<1x8x4000x128xf16> loc("v"))
    -> tensor<1x32x1x128xf16> {
  %0 = memwall.attention %q, %k, %v causal : tensor<1x32x1x128xf16>, tensor<1x8x4000x128xf16>, tensor<1x8x4000x128xf16> -> tensor<1x32x1x128xf16> loc("attn")
  return %0 : tensor<1x32x1x128xf16>
}
