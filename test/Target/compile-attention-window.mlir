// REQUIRES: cuda
// Sliding-window attention (Mistral; `causal window W`: query i sees keys
// i + (Sk - Sq) - W < j <= i + (Sk - Sq)) in the generated kernels. The
// forward starts each block of rows at the key block of its least query's
// window and masks inside the blocks the window's edge crosses; split keys
// (decode past the window) leave the splits before it empty. The backward
// walks, for each key tile, only the query tiles whose windows reach it,
// and for each query tile only the key tiles in its band, on tensor cores
// (bf16, f16) and CUDA cores (f32). Ragged tiles, grouped-query heads,
// fewer queries than keys. Every kernel computes what the reference
// interpreter computes; the PTX assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-compile %s --target=a100-40gb --emit=ptx -o %t/a100.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_80 %t/a100.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b --seed=5 | FileCheck %s --check-prefix=SIM
// RUN: memwall-compile %s --emit=gpu | FileCheck %s --check-prefix=GPU

// CHECK-DAG: kernel {{.*}}_attention {{.*}} ops=prefill
// CHECK-DAG: kernel {{.*}}_attention {{.*}} ops=decode
// CHECK-DAG: kernel {{.*}}_attention_grad {{.*}} ops=band
// CHECK-DAG: kernel {{.*}}_attention_grad {{.*}} ops=cross
// CHECK-DAG: kernel {{.*}}_attention_grad {{.*}} ops=wide
// The forward's first key block: max over the split's and the window's.
// GPU: arith.maxui
// SIM-NOT: FAIL
// SIM: PASS
// SIM-NOT: FAIL
func.func @main(%q: tensor<1x4x100x32xbf16> loc("q"), %k: tensor<1x2x100x32xbf16> loc("k"),
                %v: tensor<1x2x100x32xbf16> loc("v"),
                %dq: tensor<1x2x1x64xf16> loc("dq"), %dk: tensor<1x2x300x64xf16> loc("dk"),
                %dv: tensor<1x2x300x64xf16> loc("dv"),
                %q2: tensor<1x2x100x32xbf16> loc("q2"), %k2: tensor<1x2x100x32xbf16> loc("k2"),
                %v2: tensor<1x2x100x32xbf16> loc("v2"), %o2: tensor<1x2x100x32xbf16> loc("o2"),
                %do2: tensor<1x2x100x32xbf16> loc("do2"), %lse2: tensor<1x2x100xf32> loc("lse2"),
                %q3: tensor<1x2x24x8xf32> loc("q3"), %k3: tensor<1x2x50x8xf32> loc("k3"),
                %v3: tensor<1x2x50x8xf32> loc("v3"), %o3: tensor<1x2x24x8xf32> loc("o3"),
                %do3: tensor<1x2x24x8xf32> loc("do3"), %lse3: tensor<1x2x24xf32> loc("lse3"),
                %q4: tensor<1x1x100x128xf16> loc("q4"), %k4: tensor<1x1x100x128xf16> loc("k4"),
                %v4: tensor<1x1x100x128xf16> loc("v4"), %o4: tensor<1x1x100x128xf16> loc("o4"),
                %do4: tensor<1x1x100x128xf16> loc("do4"), %lse4: tensor<1x1x100xf32> loc("lse4"))
    -> (tensor<1x4x100x32xbf16>, tensor<1x2x1x64xf16>,
        tensor<1x2x100x32xbf16>, tensor<1x2x100x32xbf16>, tensor<1x2x100x32xbf16>,
        tensor<1x2x24x8xf32>, tensor<1x2x50x8xf32>, tensor<1x2x50x8xf32>,
        tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>) {
  %o = memwall.attention %q, %k, %v causal window 37 : tensor<1x4x100x32xbf16>, tensor<1x2x100x32xbf16>, tensor<1x2x100x32xbf16> -> tensor<1x4x100x32xbf16> loc("prefill")
  %od = memwall.attention %dq, %dk, %dv causal window 50 : tensor<1x2x1x64xf16>, tensor<1x2x300x64xf16>, tensor<1x2x300x64xf16> -> tensor<1x2x1x64xf16> loc("decode")
  %gq2, %gk2, %gv2 = memwall.flash_attention_grad %q2, %k2, %v2, %o2, %do2, %lse2 causal window 37 scale 0.17677669529 block_q 64 block_kv 64
      : (tensor<1x2x100x32xbf16>, tensor<1x2x100x32xbf16>, tensor<1x2x100x32xbf16>, tensor<1x2x100x32xbf16>, tensor<1x2x100x32xbf16>, tensor<1x2x100xf32>)
      -> (tensor<1x2x100x32xbf16>, tensor<1x2x100x32xbf16>, tensor<1x2x100x32xbf16>) loc("band")
  %gq3, %gk3, %gv3 = memwall.flash_attention_grad %q3, %k3, %v3, %o3, %do3, %lse3 causal window 20 scale 0.35355339059 block_q 64 block_kv 64
      : (tensor<1x2x24x8xf32>, tensor<1x2x50x8xf32>, tensor<1x2x50x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x24xf32>)
      -> (tensor<1x2x24x8xf32>, tensor<1x2x50x8xf32>, tensor<1x2x50x8xf32>) loc("cross")
  %gq4, %gk4, %gv4 = memwall.flash_attention_grad %q4, %k4, %v4, %o4, %do4, %lse4 causal window 30 scale 0.088 block_q 64 block_kv 64
      : (tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100xf32>)
      -> (tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>) loc("wide")
  return %o, %od, %gq2, %gk2, %gv2, %gq3, %gk3, %gv3, %gq4, %gk4, %gv4
      : tensor<1x4x100x32xbf16>, tensor<1x2x1x64xf16>,
        tensor<1x2x100x32xbf16>, tensor<1x2x100x32xbf16>, tensor<1x2x100x32xbf16>,
        tensor<1x2x24x8xf32>, tensor<1x2x50x8xf32>, tensor<1x2x50x8xf32>,
        tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>, tensor<1x1x100x128xf16>
}
