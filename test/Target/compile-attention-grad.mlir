// REQUIRES: cuda
// Attention's backward (lib/Target/AttentionGradCodegen.cpp): one launch of
// key blocks (dK, dV of a key tile summed over every query tile of the KV
// head's query heads) and query blocks (dQ of a query tile over the key
// tiles it sees), no atomics. Grouped-query heads, causal masking with
// ragged tiles (40 rows in tiles of 32), fewer queries than keys (the
// causal diagonal shifted by Sk - Sq), f32 and bf16; every kernel computes
// what the reference interpreter computes (memwall-simulate), and the PTX
// assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-compile %s --target=a100-40gb --emit=ptx -o %t/a100.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_80 %t/a100.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// 2 key tiles + 2 query heads x 2 query tiles; batch 1 x 2 KV heads.
// CHECK-DAG: kernel kernel0_attention_grad grid=[6, 2, 1] block=[128, 1, 1] args=q,k,v,o,do,lse,gqa#0,gqa#1,gqa#2 ops=gqa
// 50 keys: 2 key tiles; 24 queries: 1 query tile per head.
// CHECK-DAG: kernel kernel1_attention_grad grid=[3, 2, 1] block=[128, 1, 1] args=q2,k2,v2,o2,do2,lse2,cross#0,cross#1,cross#2 ops=cross
// CHECK-DAG: kernel kernel2_attention_grad grid=[2, 2, 1] block=[128, 1, 1] args=q3,k3,v3,o3,do3,lse3,chunk#0,chunk#1,chunk#2 ops=chunk
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
                %do3: tensor<1x2x8x16xbf16> loc("do3"), %lse3: tensor<1x2x8xf32> loc("lse3"))
    -> (tensor<1x4x40x16xbf16>, tensor<1x2x40x16xbf16>, tensor<1x2x40x16xbf16>,
        tensor<1x2x24x32xf32>, tensor<1x2x50x32xf32>, tensor<1x2x50x32xf32>,
        tensor<1x2x8x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>) {
  %dq, %dk, %dv = memwall.flash_attention_grad %q, %k, %v, %o, %do, %lse causal scale 0.25 block_q 64 block_kv 64
      : (tensor<1x4x40x16xbf16>, tensor<1x2x40x16xbf16>, tensor<1x2x40x16xbf16>, tensor<1x4x40x16xbf16>, tensor<1x4x40x16xbf16>, tensor<1x4x40xf32>)
      -> (tensor<1x4x40x16xbf16>, tensor<1x2x40x16xbf16>, tensor<1x2x40x16xbf16>) loc("gqa")
  %dq2, %dk2, %dv2 = memwall.flash_attention_grad %q2, %k2, %v2, %o2, %do2, %lse2 scale 0.17677669529 block_q 64 block_kv 64
      : (tensor<1x2x24x32xf32>, tensor<1x2x50x32xf32>, tensor<1x2x50x32xf32>, tensor<1x2x24x32xf32>, tensor<1x2x24x32xf32>, tensor<1x2x24xf32>)
      -> (tensor<1x2x24x32xf32>, tensor<1x2x50x32xf32>, tensor<1x2x50x32xf32>) loc("cross")
  %dq3, %dk3, %dv3 = memwall.flash_attention_grad %q3, %k3, %v3, %o3, %do3, %lse3 causal scale 0.25 block_q 64 block_kv 64
      : (tensor<1x2x8x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8xf32>)
      -> (tensor<1x2x8x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>) loc("chunk")
  return %dq, %dk, %dv, %dq2, %dk2, %dv2, %dq3, %dk3, %dv3
      : tensor<1x4x40x16xbf16>, tensor<1x2x40x16xbf16>, tensor<1x2x40x16xbf16>,
        tensor<1x2x24x32xf32>, tensor<1x2x50x32xf32>, tensor<1x2x50x32xf32>,
        tensor<1x2x8x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>
}
