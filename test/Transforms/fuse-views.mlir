// memwall-fuse folds the slices, heads splits and transposes around
// attention into its addressing only where its kernel can index them: its
// tiles are copied in 16-byte chunks, so every row of a view must start on
// a 16-byte boundary. Here the packed projection is 389 columns wide (778
// bytes a token): the slices stay kernels (contiguous copies the attention
// then reads through their heads splits) and --report says why.
// RUN: memwall-opt %s --fuse --target=h100-sxm | FileCheck %s
// RUN: memwall-opt %s --fuse --target=h100-sxm --report=- -o /dev/null | FileCheck %s --check-prefix=REPORT
// CHECK: memwall.slice {{.*}} offsets [0, 0, 0]
// CHECK-NEXT: memwall.slice {{.*}} offsets [0, 0, 131]
// CHECK-NEXT: memwall.slice {{.*}} offsets [0, 0, 256]
// CHECK-NEXT: memwall.fusion attention
// CHECK-NOT: memwall.slice
// CHECK: memwall.flash_attention
// CHECK-NEXT: memwall.transpose
// CHECK-NEXT: memwall.reshape
// REPORT: kept apart: q -> {{.*}}: attention reads q, k and v and writes its output through reshapes, transposes and slices it can index, but the view q reads: a stride of 778 bytes is not a multiple of 16
// REPORT: kept apart: k -> {{.*}}: {{.*}} the view k reads: it starts 262 bytes into its buffer, not a multiple of 16
func.func @misaligned(%qkv: tensor<1x64x389xbf16>) -> tensor<1x64x128xbf16> {
  %q = memwall.slice %qkv offsets [0, 0, 0] sizes [1, 64, 128] : tensor<1x64x389xbf16> -> tensor<1x64x128xbf16> loc("q")
  %qs = memwall.reshape %q [1, 64, 2, 64] : tensor<1x64x128xbf16> -> tensor<1x64x2x64xbf16> loc("q.split")
  %qh = memwall.transpose %qs [0, 2, 1, 3] : tensor<1x64x2x64xbf16> -> tensor<1x2x64x64xbf16> loc("q.heads")
  %k = memwall.slice %qkv offsets [0, 0, 131] sizes [1, 64, 128] : tensor<1x64x389xbf16> -> tensor<1x64x128xbf16> loc("k")
  %ks = memwall.reshape %k [1, 64, 2, 64] : tensor<1x64x128xbf16> -> tensor<1x64x2x64xbf16> loc("k.split")
  %kh = memwall.transpose %ks [0, 2, 1, 3] : tensor<1x64x2x64xbf16> -> tensor<1x2x64x64xbf16> loc("k.heads")
  %v = memwall.slice %qkv offsets [0, 0, 256] sizes [1, 64, 128] : tensor<1x64x389xbf16> -> tensor<1x64x128xbf16> loc("v")
  %vs = memwall.reshape %v [1, 64, 2, 64] : tensor<1x64x128xbf16> -> tensor<1x64x2x64xbf16> loc("v.split")
  %vh = memwall.transpose %vs [0, 2, 1, 3] : tensor<1x64x2x64xbf16> -> tensor<1x2x64x64xbf16> loc("v.heads")
  %o = memwall.attention %qh, %kh, %vh causal : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16> loc("attn")
  %t = memwall.transpose %o [0, 2, 1, 3] : tensor<1x2x64x64xbf16> -> tensor<1x64x2x64xbf16> loc("heads")
  %m = memwall.reshape %t [1, 64, 128] : tensor<1x64x2x64xbf16> -> tensor<1x64x128xbf16> loc("merge")
  return %m : tensor<1x64x128xbf16>
}
