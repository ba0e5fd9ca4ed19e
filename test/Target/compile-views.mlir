// REQUIRES: cuda
// Attention and rope kernels reading their operands through views and
// attention writing its output through a heads merge, on ragged shapes:
// 40 tokens (blocks of 64 rows), grouped-query heads (4 query heads over 2
// KV heads of 64), per-batch positions. Every kernel computes what the
// reference interpreter computes; the PTX assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// One packed projection [B, S, (4 + 2 + 2) x 64]: attention reads q, k and
// v through its slices, heads splits and transposes, and writes [B, S, 256].
// CHECK-NOT: _slice
// CHECK-NOT: _transpose
// CHECK: kernel kernel0_attention {{.*}} args=qkv,qkv,qkv,merge,attn#1 ops=q,q.split,q.heads,k,k.split,k.heads,v,v.split,v.heads,attn,heads,merge
// Llama's layout: q and k rotated by one kernel reading the projections
// through their heads splits; attention reads v the same way.
// CHECK: kernel kernel1_rope {{.*}} args=xq,xk,pos,q2.rope,k2.rope ops=q2.split,q2.heads,k2.split,k2.heads,q2.rope,k2.rope
// CHECK-NEXT: kernel kernel2_attention {{.*}} args=q2.rope,k2.rope,xv,attn2.merge,attn2#1 ops=v2.split,v2.heads,attn2,attn2.heads,attn2.merge
// CHECK-NOT: _transpose

// SIM-NOT: FAIL
// SIM: kernel0_attention {{ *}}merge {{.*}} PASS
// SIM-NOT: FAIL
// SIM: kernel1_rope {{ *}}q2.rope {{.*}} PASS
// SIM-NEXT: kernel1_rope {{ *}}k2.rope {{.*}} PASS
// SIM-NOT: FAIL
// SIM: kernel2_attention {{ *}}attn2.merge {{.*}} PASS
// SIM-NOT: FAIL
// SIM: result0  bf16 {{.*}} PASS
// SIM: result1  bf16 {{.*}} PASS
func.func @main(%qkv: tensor<2x40x512xbf16> loc("qkv"),
                %xq: tensor<2x40x256xbf16> loc("xq"),
                %xk: tensor<2x40x128xbf16> loc("xk"),
                %xv: tensor<2x40x128xbf16> loc("xv"),
                %pos: tensor<2x40xi64> loc("pos"))
    -> (tensor<2x40x256xbf16>, tensor<2x40x256xbf16>) {
  %q = memwall.slice %qkv offsets [0, 0, 0] sizes [2, 40, 256] : tensor<2x40x512xbf16> -> tensor<2x40x256xbf16> loc("q")
  %qs = memwall.reshape %q [2, 40, 4, 64] : tensor<2x40x256xbf16> -> tensor<2x40x4x64xbf16> loc("q.split")
  %qh = memwall.transpose %qs [0, 2, 1, 3] : tensor<2x40x4x64xbf16> -> tensor<2x4x40x64xbf16> loc("q.heads")
  %k = memwall.slice %qkv offsets [0, 0, 256] sizes [2, 40, 128] : tensor<2x40x512xbf16> -> tensor<2x40x128xbf16> loc("k")
  %ks = memwall.reshape %k [2, 40, 2, 64] : tensor<2x40x128xbf16> -> tensor<2x40x2x64xbf16> loc("k.split")
  %kh = memwall.transpose %ks [0, 2, 1, 3] : tensor<2x40x2x64xbf16> -> tensor<2x2x40x64xbf16> loc("k.heads")
  %v = memwall.slice %qkv offsets [0, 0, 384] sizes [2, 40, 128] : tensor<2x40x512xbf16> -> tensor<2x40x128xbf16> loc("v")
  %vs = memwall.reshape %v [2, 40, 2, 64] : tensor<2x40x128xbf16> -> tensor<2x40x2x64xbf16> loc("v.split")
  %vh = memwall.transpose %vs [0, 2, 1, 3] : tensor<2x40x2x64xbf16> -> tensor<2x2x40x64xbf16> loc("v.heads")
  %o = memwall.attention %qh, %kh, %vh causal : tensor<2x4x40x64xbf16>, tensor<2x2x40x64xbf16>, tensor<2x2x40x64xbf16> -> tensor<2x4x40x64xbf16> loc("attn")
  %t = memwall.transpose %o [0, 2, 1, 3] : tensor<2x4x40x64xbf16> -> tensor<2x40x4x64xbf16> loc("heads")
  %m = memwall.reshape %t [2, 40, 256] : tensor<2x40x4x64xbf16> -> tensor<2x40x256xbf16> loc("merge")

  %q2s = memwall.reshape %xq [2, 40, 4, 64] : tensor<2x40x256xbf16> -> tensor<2x40x4x64xbf16> loc("q2.split")
  %q2h = memwall.transpose %q2s [0, 2, 1, 3] : tensor<2x40x4x64xbf16> -> tensor<2x4x40x64xbf16> loc("q2.heads")
  %k2s = memwall.reshape %xk [2, 40, 2, 64] : tensor<2x40x128xbf16> -> tensor<2x40x2x64xbf16> loc("k2.split")
  %k2h = memwall.transpose %k2s [0, 2, 1, 3] : tensor<2x40x2x64xbf16> -> tensor<2x2x40x64xbf16> loc("k2.heads")
  %v2s = memwall.reshape %xv [2, 40, 2, 64] : tensor<2x40x128xbf16> -> tensor<2x40x2x64xbf16> loc("v2.split")
  %v2h = memwall.transpose %v2s [0, 2, 1, 3] : tensor<2x40x2x64xbf16> -> tensor<2x2x40x64xbf16> loc("v2.heads")
  %q2r = memwall.rope %q2h, %pos : tensor<2x4x40x64xbf16>, tensor<2x40xi64> loc("q2.rope")
  %k2r = memwall.rope %k2h, %pos : tensor<2x2x40x64xbf16>, tensor<2x40xi64> loc("k2.rope")
  %o2 = memwall.attention %q2r, %k2r, %v2h causal : tensor<2x4x40x64xbf16>, tensor<2x2x40x64xbf16>, tensor<2x2x40x64xbf16> -> tensor<2x4x40x64xbf16> loc("attn2")
  %t2 = memwall.transpose %o2 [0, 2, 1, 3] : tensor<2x4x40x64xbf16> -> tensor<2x40x4x64xbf16> loc("attn2.heads")
  %m2 = memwall.reshape %t2 [2, 40, 256] : tensor<2x40x4x64xbf16> -> tensor<2x40x256xbf16> loc("attn2.merge")
  return %m, %m2 : tensor<2x40x256xbf16>, tensor<2x40x256xbf16>
}
