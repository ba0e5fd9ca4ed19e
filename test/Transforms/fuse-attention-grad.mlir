// Attention's backward (memwall.flash_attention_grad) reads q, k, v, the
// output and the output's gradient through the views that make them, and
// writes dq, dk and dv through heads merges and a concat that packs them:
// one attention_grad kernel, no layout kernel. A view the kernel cannot
// index stays a kernel, and --report says why.
// RUN: memwall-opt %s --split-input-file --fuse --target=h100-sxm | FileCheck %s
// RUN: memwall-opt %s --split-input-file --fuse --target=h100-sxm --report=- -o /dev/null | FileCheck %s --check-prefix=REPORT

// The packed QKV [B, S, 3·H·D] in, its packed gradient out.
// CHECK-LABEL: func.func @packed
// CHECK-NEXT: %[[GRAD:.*]] = memwall.fusion attention_grad(%arg0, %arg2, %arg1, %arg3) {memwall.phase = "backward"} {{.*}} -> tensor<1x64x384xbf16>
// CHECK-COUNT-3: memwall.slice
// CHECK: memwall.flash_attention_grad
// CHECK: memwall.concat {{.*}} axis 2
// CHECK-NEXT: memwall.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[GRAD]]
func.func @packed(%qkv: tensor<1x64x384xbf16>, %o: tensor<1x2x64x64xbf16>, %merged_grad: tensor<1x64x128xbf16>, %lse: tensor<1x2x64xf32>) -> tensor<1x64x384xbf16> {
  %q = memwall.slice %qkv offsets [0, 0, 0] sizes [1, 64, 128] {memwall.phase = "backward"} : tensor<1x64x384xbf16> -> tensor<1x64x128xbf16> loc("q")
  %qs = memwall.reshape %q [1, 64, 2, 64] {memwall.phase = "backward"} : tensor<1x64x128xbf16> -> tensor<1x64x2x64xbf16> loc("q.split")
  %qh = memwall.transpose %qs [0, 2, 1, 3] {memwall.phase = "backward"} : tensor<1x64x2x64xbf16> -> tensor<1x2x64x64xbf16> loc("q.heads")
  %k = memwall.slice %qkv offsets [0, 0, 128] sizes [1, 64, 128] {memwall.phase = "backward"} : tensor<1x64x384xbf16> -> tensor<1x64x128xbf16> loc("k")
  %ks = memwall.reshape %k [1, 64, 2, 64] {memwall.phase = "backward"} : tensor<1x64x128xbf16> -> tensor<1x64x2x64xbf16> loc("k.split")
  %kh = memwall.transpose %ks [0, 2, 1, 3] {memwall.phase = "backward"} : tensor<1x64x2x64xbf16> -> tensor<1x2x64x64xbf16> loc("k.heads")
  %v = memwall.slice %qkv offsets [0, 0, 256] sizes [1, 64, 128] {memwall.phase = "backward"} : tensor<1x64x384xbf16> -> tensor<1x64x128xbf16> loc("v")
  %vs = memwall.reshape %v [1, 64, 2, 64] {memwall.phase = "backward"} : tensor<1x64x128xbf16> -> tensor<1x64x2x64xbf16> loc("v.split")
  %vh = memwall.transpose %vs [0, 2, 1, 3] {memwall.phase = "backward"} : tensor<1x64x2x64xbf16> -> tensor<1x2x64x64xbf16> loc("v.heads")
  %gs = memwall.reshape %merged_grad [1, 64, 2, 64] {memwall.phase = "backward"} : tensor<1x64x128xbf16> -> tensor<1x64x2x64xbf16> loc("grad.split")
  %gh = memwall.transpose %gs [0, 2, 1, 3] {memwall.phase = "backward"} : tensor<1x64x2x64xbf16> -> tensor<1x2x64x64xbf16> loc("grad.heads")
  %dq, %dk, %dv = memwall.flash_attention_grad %qh, %kh, %vh, %o, %gh, %lse causal scale 0.125 block_q 64 block_kv 64 {memwall.phase = "backward"} : (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>) -> (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) loc("attn.grad")
  %dqt = memwall.transpose %dq [0, 2, 1, 3] {memwall.phase = "backward"} : tensor<1x2x64x64xbf16> -> tensor<1x64x2x64xbf16> loc("dq.heads")
  %dqm = memwall.reshape %dqt [1, 64, 128] {memwall.phase = "backward"} : tensor<1x64x2x64xbf16> -> tensor<1x64x128xbf16> loc("dq.merge")
  %dkt = memwall.transpose %dk [0, 2, 1, 3] {memwall.phase = "backward"} : tensor<1x2x64x64xbf16> -> tensor<1x64x2x64xbf16> loc("dk.heads")
  %dkm = memwall.reshape %dkt [1, 64, 128] {memwall.phase = "backward"} : tensor<1x64x2x64xbf16> -> tensor<1x64x128xbf16> loc("dk.merge")
  %dvt = memwall.transpose %dv [0, 2, 1, 3] {memwall.phase = "backward"} : tensor<1x2x64x64xbf16> -> tensor<1x64x2x64xbf16> loc("dv.heads")
  %dvm = memwall.reshape %dvt [1, 64, 128] {memwall.phase = "backward"} : tensor<1x64x2x64xbf16> -> tensor<1x64x128xbf16> loc("dv.merge")
  %packed = memwall.concat %dqm, %dkm, %dvm axis 2 {memwall.phase = "backward"} : tensor<1x64x128xbf16>, tensor<1x64x128xbf16>, tensor<1x64x128xbf16> -> tensor<1x64x384xbf16> loc("qkv.grad")
  return %packed : tensor<1x64x384xbf16>
}

// -----

// k starts 258 bytes into its packed buffer: its slice stays a kernel (a
// contiguous copy the backward reads through its heads split); q and v
// are still views.
// CHECK-LABEL: func.func @misaligned
// CHECK-NEXT: %[[K:.*]] = memwall.slice %arg0 offsets [0, 0, 129]
// CHECK-NEXT: memwall.fusion attention_grad(%arg0, %[[K]],
// REPORT: kept apart: k -> {{.*}}attn.grad{{.*}}: attention's backward reads q, k, v, the output and its gradient and writes dq, dk and dv through reshapes, transposes, slices and a concat of the three it can index, but the view k reads: it starts 258 bytes into its buffer, not a multiple of 16
func.func @misaligned(%qkv: tensor<1x64x392xbf16>, %o: tensor<1x2x64x64xbf16>, %do: tensor<1x2x64x64xbf16>, %lse: tensor<1x2x64xf32>) -> (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) {
  %q = memwall.slice %qkv offsets [0, 0, 0] sizes [1, 64, 128] {memwall.phase = "backward"} : tensor<1x64x392xbf16> -> tensor<1x64x128xbf16> loc("q")
  %qs = memwall.reshape %q [1, 64, 2, 64] {memwall.phase = "backward"} : tensor<1x64x128xbf16> -> tensor<1x64x2x64xbf16> loc("q.split")
  %qh = memwall.transpose %qs [0, 2, 1, 3] {memwall.phase = "backward"} : tensor<1x64x2x64xbf16> -> tensor<1x2x64x64xbf16> loc("q.heads")
  %k = memwall.slice %qkv offsets [0, 0, 129] sizes [1, 64, 128] {memwall.phase = "backward"} : tensor<1x64x392xbf16> -> tensor<1x64x128xbf16> loc("k")
  %ks = memwall.reshape %k [1, 64, 2, 64] {memwall.phase = "backward"} : tensor<1x64x128xbf16> -> tensor<1x64x2x64xbf16> loc("k.split")
  %kh = memwall.transpose %ks [0, 2, 1, 3] {memwall.phase = "backward"} : tensor<1x64x2x64xbf16> -> tensor<1x2x64x64xbf16> loc("k.heads")
  %v = memwall.slice %qkv offsets [0, 0, 256] sizes [1, 64, 128] {memwall.phase = "backward"} : tensor<1x64x392xbf16> -> tensor<1x64x128xbf16> loc("v")
  %vs = memwall.reshape %v [1, 64, 2, 64] {memwall.phase = "backward"} : tensor<1x64x128xbf16> -> tensor<1x64x2x64xbf16> loc("v.split")
  %vh = memwall.transpose %vs [0, 2, 1, 3] {memwall.phase = "backward"} : tensor<1x64x2x64xbf16> -> tensor<1x2x64x64xbf16> loc("v.heads")
  %dq, %dk, %dv = memwall.flash_attention_grad %qh, %kh, %vh, %o, %do, %lse causal scale 0.125 block_q 64 block_kv 64 {memwall.phase = "backward"} : (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>) -> (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) loc("attn.grad")
  return %dq, %dk, %dv : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>
}

// -----

// Copying q's views for the backward would keep the 512 KB packed buffer
// alive across the 4 MB activation the step peaks at (only q is sliced
// from it): memwall-fuse keeps one copy of the views, which run as kernels
// that attention and its backward both read.
// CHECK-LABEL: func.func @copies_would_raise_the_peak
// CHECK-NEXT: memwall.slice
// CHECK-NEXT: memwall.reshape
// CHECK-NEXT: %[[Q:.*]] = memwall.transpose
// CHECK-NEXT: memwall.flash_attention %[[Q]]
// CHECK: memwall.flash_attention_grad %[[Q]]
func.func @copies_would_raise_the_peak(%qkv: tensor<1x64x4096xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>, %h: tensor<1024x1024xf32>, %do: tensor<1x2x64x64xbf16>) -> (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1024x1024xf32>) {
  %q = memwall.slice %qkv offsets [0, 0, 0] sizes [1, 64, 128] : tensor<1x64x4096xbf16> -> tensor<1x64x128xbf16> loc("q")
  %qs = memwall.reshape %q [1, 64, 2, 64] : tensor<1x64x128xbf16> -> tensor<1x64x2x64xbf16> loc("q.split")
  %qh = memwall.transpose %qs [0, 2, 1, 3] : tensor<1x64x2x64xbf16> -> tensor<1x2x64x64xbf16> loc("q.heads")
  %o, %lse = memwall.flash_attention %qh, %k, %v causal scale 0.125 block_q 64 block_kv 64 splits 1 : (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) -> (tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>) loc("attn")
  %big = memwall.scale %h by 2.0 : tensor<1024x1024xf32> loc("big")
  %dq, %dk, %dv = memwall.flash_attention_grad %qh, %k, %v, %o, %do, %lse causal scale 0.125 block_q 64 block_kv 64 {memwall.phase = "backward"} : (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>) -> (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) loc("attn.grad")
  return %dq, %dk, %dv, %big : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1024x1024xf32>
}
