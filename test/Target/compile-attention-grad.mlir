// REQUIRES: cuda
// Attention's backward (lib/Target/AttentionGradCodegen.cpp): one launch of
// key blocks (dK, dV of a key tile summed over every query tile of the KV
// head's query heads) and query blocks (dQ of a query tile over the key
// tiles it sees), no atomics. bf16 and f16 run on tensor cores (mma.sync,
// AttentionGradMmaCodegen.cpp; 64-row tiles, 32 rows and 2 warps at head
// dim 128), f32 on CUDA cores. Grouped-query heads, causal masking with
// ragged tiles (40 rows in a tile of 64), fewer queries than keys (the
// causal diagonal shifted by Sk - Sq), 100 rows at head dim 128 (ragged in
// tiles of 32), masks (a bf16 padding mask [B, 1, 1, Sk] on tensor cores,
// an f32 mask [1, H, 1, Sk] on CUDA cores, and an i1 keep-mask, all false
// as memwall-simulate's random i1 inputs are, that hides every key: zero
// gradients, not NaN); every kernel computes what the reference interpreter
// computes (memwall-simulate), and the PTX assembles. Seed 3 is one where
// P and dS rounded once to bf16 (FlashAttention-2's rounding) put dK 1.7
// ulps off: the kernel must carry their residuals.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t/b/kernels.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-compile %s --target=a100-40gb --emit=ptx -o %t/a100.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_80 %t/a100.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b --seed=3 | FileCheck %s --check-prefix=SIM

// 1 key tile + 2 query heads x 1 query tile; batch 1 x 2 KV heads. Five
// tiles of 64 rows of 16 + 8 columns in bf16 and two f32 rows of 64.
// CHECK-DAG: kernel kernel0_attention_grad grid=[3, 2, 1] block=[128, 1, 1] shared=15872 args=q,k,v,o,do,lse,gqa#0,gqa#1,gqa#2 ops=gqa
// f32 on CUDA cores: 50 keys, 2 key tiles of 32; 24 queries, 1 query tile.
// CHECK-DAG: kernel kernel1_attention_grad grid=[3, 2, 1] block=[128, 1, 1] args=q2,k2,v2,o2,do2,lse2,cross#0,cross#1,cross#2 ops=cross
// CHECK-DAG: kernel kernel2_attention_grad grid=[2, 2, 1] block=[128, 1, 1] shared=15872 args=q3,k3,v3,o3,do3,lse3,chunk#0,chunk#1,chunk#2 ops=chunk
// Head dim 128: 4 key tiles + 4 query tiles of 32 rows, 2 warps;
// 32 x (2 x 136 + 3 x 136) x 2 + 2 x 32 x 4 bytes.
// CHECK-DAG: kernel kernel3_attention_grad grid=[8, 1, 1] block=[64, 1, 1] shared=43776 args=q4,k4,v4,o4,do4,lse4,wide#0,wide#1,wide#2 ops=wide
// The mask follows the log-sum-exp.
// CHECK-DAG: kernel kernel4_attention_grad grid=[2, 4, 1] block=[128, 1, 1] shared=26112 args=q5,k5,v5,o5,do5,lse5,pad,padded#0,padded#1,padded#2 ops=padded
// CHECK-DAG: kernel kernel5_attention_grad grid=[3, 2, 1] block=[128, 1, 1] args=q6,k6,v6,o6,do6,lse6,bias,biased#0,biased#1,biased#2 ops=biased
// CHECK-DAG: kernel kernel6_attention_grad grid=[2, 1, 1] block=[128, 1, 1] shared=15872 args=q7,lse7,keep,kept#0,kept#1,kept#2 ops=kept
// PTX-LABEL: .entry kernel0_attention_grad
// PTX: cp.async
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-LABEL: .entry kernel1_attention_grad
// PTX-NOT: mma.sync
// PTX-LABEL: .entry kernel2_attention_grad
// PTX-LABEL: .entry kernel3_attention_grad
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// SIM-NOT: FAIL
// SIM: PASS
// SIM-NOT: FAIL
func.func @main(%q: tensor<1x4x40x16xbf16> loc("q"), %k: tensor<1x2x40x16xbf16> loc("k"),
                %v: tensor<1x2x40x16xbf16> loc("v"), %o: tensor<1x4x40x16xbf16> loc("o"),
                %do: tensor<1x4x40x16xbf16> loc("do"), %lse: tensor<1x4x40xf32> loc("lse"),
                %q2: tensor<1x2x24x32xf32> loc("q2"), %k2: tensor<1x2x50x32xf32> loc("k2"),
                %v2: tensor<1x2x50x32xf32> loc("v2"), %o2: tensor<1x2x24x32xf32> loc("o2"),
                %do2: tensor<1x2x24x32xf32> loc("do2"), %lse2: tensor<1x2x24xf32> loc("lse2"),
                %q3: tensor<1x2x8x16xbf16> loc("q3"), %k3: tensor<1x2x20x16xbf16> loc("k3"),
                %v3: tensor<1x2x20x16xbf16> loc("v3"), %o3: tensor<1x2x8x16xbf16> loc("o3"),
                %do3: tensor<1x2x8x16xbf16> loc("do3"), %lse3: tensor<1x2x8xf32> loc("lse3"),
                %q4: tensor<1x1x100x128xf16> loc("q4"), %k4: tensor<1x1x100x128xf16> loc("k4"),
                %v4: tensor<1x1x100x128xf16> loc("v4"), %o4: tensor<1x1x100x128xf16> loc("o4"),
                %do4: tensor<1x1x100x128xf16> loc("do4"), %lse4: tensor<1x1x100xf32> loc("lse4"),
                %q5: tensor<2x2x24x32xbf16> loc("q5"), %k5: tensor<2x2x24x32xbf16> loc("k5"),
                %v5: tensor<2x2x24x32xbf16> loc("v5"), %o5: tensor<2x2x24x32xbf16> loc("o5"),
                %do5: tensor<2x2x24x32xbf16> loc("do5"), %lse5: tensor<2x2x24xf32> loc("lse5"),
                %pad: tensor<2x1x1x24xbf16> loc("pad"),
                %q6: tensor<1x2x16x8xf32> loc("q6"), %k6: tensor<1x2x40x8xf32> loc("k6"),
                %v6: tensor<1x2x40x8xf32> loc("v6"), %o6: tensor<1x2x16x8xf32> loc("o6"),
                %do6: tensor<1x2x16x8xf32> loc("do6"), %lse6: tensor<1x2x16xf32> loc("lse6"),
                %bias: tensor<1x2x1x40xf32> loc("bias"),
                %q7: tensor<1x1x16x16xbf16> loc("q7"), %lse7: tensor<1x1x16xf32> loc("lse7"),
                %keep: tensor<1x1x16x16xi1> loc("keep"))
    -> (tensor<1x4x40x16xbf16>, tensor<1x2x40x16xbf16>, tensor<1x2x40x16xbf16>,
        tensor<1x2x24x32xf32>, tensor<1x2x50x32xf32>, tensor<1x2x50x32xf32>,
        tensor<1x2x8x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>,
        tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>,
        tensor<2x2x24x32xbf16>, tensor<2x2x24x32xbf16>, tensor<2x2x24x32xbf16>,
        tensor<1x2x16x8xf32>, tensor<1x2x40x8xf32>, tensor<1x2x40x8xf32>,
        tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>) {
  %dq, %dk, %dv = memwall.flash_attention_grad %q, %k, %v, %o, %do, %lse causal scale 0.25 block_q 64 block_kv 64
      : (tensor<1x4x40x16xbf16>, tensor<1x2x40x16xbf16>, tensor<1x2x40x16xbf16>, tensor<1x4x40x16xbf16>, tensor<1x4x40x16xbf16>, tensor<1x4x40xf32>)
      -> (tensor<1x4x40x16xbf16>, tensor<1x2x40x16xbf16>, tensor<1x2x40x16xbf16>) loc("gqa")
  %dq2, %dk2, %dv2 = memwall.flash_attention_grad %q2, %k2, %v2, %o2, %do2, %lse2 scale 0.17677669529 block_q 64 block_kv 64
      : (tensor<1x2x24x32xf32>, tensor<1x2x50x32xf32>, tensor<1x2x50x32xf32>, tensor<1x2x24x32xf32>, tensor<1x2x24x32xf32>, tensor<1x2x24xf32>)
      -> (tensor<1x2x24x32xf32>, tensor<1x2x50x32xf32>, tensor<1x2x50x32xf32>) loc("cross")
  %dq3, %dk3, %dv3 = memwall.flash_attention_grad %q3, %k3, %v3, %o3, %do3, %lse3 causal scale 0.25 block_q 64 block_kv 64
      : (tensor<1x2x8x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8xf32>)
      -> (tensor<1x2x8x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>) loc("chunk")
  %dq4, %dk4, %dv4 = memwall.flash_attention_grad %q4, %k4, %v4, %o4, %do4, %lse4 scale 0.088 block_q 64 block_kv 64
      : (tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100xf32>)
      -> (tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>) loc("wide")
  %dq5, %dk5, %dv5 = memwall.flash_attention_grad %q5, %k5, %v5, %o5, %do5, %lse5 mask %pad scale 0.17677669529 block_q 64 block_kv 64
      : (tensor<2x2x24x32xbf16>, tensor<2x2x24x32xbf16>, tensor<2x2x24x32xbf16>, tensor<2x2x24x32xbf16>, tensor<2x2x24x32xbf16>, tensor<2x2x24xf32>, tensor<2x1x1x24xbf16>)
      -> (tensor<2x2x24x32xbf16>, tensor<2x2x24x32xbf16>, tensor<2x2x24x32xbf16>) loc("padded")
  %dq6, %dk6, %dv6 = memwall.flash_attention_grad %q6, %k6, %v6, %o6, %do6, %lse6 mask %bias causal scale 0.35355339059 block_q 64 block_kv 64
      : (tensor<1x2x16x8xf32>, tensor<1x2x40x8xf32>, tensor<1x2x40x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16xf32>, tensor<1x2x1x40xf32>)
      -> (tensor<1x2x16x8xf32>, tensor<1x2x40x8xf32>, tensor<1x2x40x8xf32>) loc("biased")
  %dq7, %dk7, %dv7 = memwall.flash_attention_grad %q7, %q7, %q7, %q7, %q7, %lse7 mask %keep scale 0.25 block_q 64 block_kv 64
      : (tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>, tensor<1x1x16xf32>, tensor<1x1x16x16xi1>)
      -> (tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>) loc("kept")
  return %dq, %dk, %dv, %dq2, %dk2, %dv2, %dq3, %dk3, %dv3, %dq4, %dk4, %dv4,
         %dq5, %dk5, %dv5, %dq6, %dk6, %dv6, %dq7, %dk7, %dv7
      : tensor<1x4x40x16xbf16>, tensor<1x2x40x16xbf16>, tensor<1x2x40x16xbf16>,
        tensor<1x2x24x32xf32>, tensor<1x2x50x32xf32>, tensor<1x2x50x32xf32>,
        tensor<1x2x8x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>,
        tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>,
        tensor<2x2x24x32xbf16>, tensor<2x2x24x32xbf16>, tensor<2x2x24x32xbf16>,
        tensor<1x2x16x8xf32>, tensor<1x2x40x8xf32>, tensor<1x2x40x8xf32>,
        tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>, tensor<1x1x16x16xbf16>
}
