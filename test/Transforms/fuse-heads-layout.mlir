// memwall-fuse gives a generated GEMM the heads layout of its result (docs/
// fusion.md): the reshape to [B, S, H, D] and transpose to [B, H, S, D]
// attention reads, and a rope of that, so q, k and v leave their GEMMs as
// attention wants them instead of through a transpose and a rope kernel.
// RUN: memwall-opt %s --split-input-file --fuse --target=h100-sxm --gemm=memwall | FileCheck %s
// RUN: memwall-opt %s --split-input-file --fuse --target=h100-sxm --gemm=memwall --report=- -o /dev/null | FileCheck %s --check-prefix=REPORT

// Llama's attention projections (2 sequences of 64 tokens, 4 query heads
// and 2 KV heads of 64): q with its heads split and rope in one kernel; k
// and v as one dual GEMM writing k heads-split and rotated, and v as it is:
// attention reads v's heads through its addressing (the split is a view).
// The weights are weights: live throughout (an input argument's bytes free
// after its last read, and q's GEMM moved to its rope would carry wq across
// k's and v's GEMMs, above the step's peak: fuse-lifetimes.mlir).
// CHECK-LABEL: func.func @llama_projections
// CHECK: %[[Q:.*]] = memwall.fusion gemm(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x64x256xbf16>, tensor<256x256xbf16>, tensor<64xi64>) -> tensor<2x4x64x64xbf16>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memwall.matmul
// CHECK-NEXT: memwall.reshape {{.*}} [2, 64, 4, 64]
// CHECK-NEXT: memwall.transpose {{.*}} [0, 2, 1, 3]
// CHECK-NEXT: memwall.rope
// CHECK-NEXT: memwall.yield
// CHECK: %[[KV:.*]]:2 = memwall.fusion gemm({{.*}}) : (tensor<2x64x256xbf16>, tensor<256x128xbf16>, tensor<256x128xbf16>, tensor<64xi64>) -> (tensor<2x64x128xbf16>, tensor<2x2x64x64xbf16>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[K:.*]] = memwall.matmul
// CHECK-NEXT: %[[KS:.*]] = memwall.reshape %[[K]]
// CHECK-NEXT: %[[KH:.*]] = memwall.transpose %[[KS]]
// CHECK-NEXT: %[[V:.*]] = memwall.matmul
// CHECK-NEXT: %[[KR:.*]] = memwall.rope %[[KH]]
// CHECK-NEXT: memwall.yield %[[V]], %[[KR]]
// CHECK-NOT: memwall.rope
// CHECK: memwall.fusion attention(%[[KV]]#0, %[[Q]], %[[KV]]#1)
// CHECK-NEXT: ^bb0(%[[VIN:.*]]: tensor<2x64x128xbf16>, %[[QIN:.*]]: tensor<2x4x64x64xbf16>, %[[KIN:.*]]: tensor<2x2x64x64xbf16>):
// CHECK-NEXT: %[[VS:.*]] = memwall.reshape %[[VIN]]
// CHECK-NEXT: %[[VH:.*]] = memwall.transpose %[[VS]]
// CHECK-NEXT: memwall.flash_attention %[[QIN]], %[[KIN]], %[[VH]]
// REPORT: fusion: 9 kernels -> 3
// REPORT: gemm q+q.split+q.heads+q.rope: memwall gemm
// REPORT: gemm k+k.split+k.heads+v+k.rope: memwall gemm
func.func @llama_projections(%x: tensor<2x64x256xbf16>, %wq: tensor<256x256xbf16> {memwall.kind = #memwall.arg_kind<weight>}, %wk: tensor<256x128xbf16> {memwall.kind = #memwall.arg_kind<weight>}, %wv: tensor<256x128xbf16> {memwall.kind = #memwall.arg_kind<weight>}, %pos: tensor<64xi64>) -> tensor<2x4x64x64xbf16> {
  %q = memwall.matmul %x, %wq : tensor<2x64x256xbf16>, tensor<256x256xbf16> -> tensor<2x64x256xbf16> loc("q")
  %qs = memwall.reshape %q [2, 64, 4, 64] : tensor<2x64x256xbf16> -> tensor<2x64x4x64xbf16> loc("q.split")
  %qh = memwall.transpose %qs [0, 2, 1, 3] : tensor<2x64x4x64xbf16> -> tensor<2x4x64x64xbf16> loc("q.heads")
  %k = memwall.matmul %x, %wk : tensor<2x64x256xbf16>, tensor<256x128xbf16> -> tensor<2x64x128xbf16> loc("k")
  %ks = memwall.reshape %k [2, 64, 2, 64] : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16> loc("k.split")
  %kh = memwall.transpose %ks [0, 2, 1, 3] : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16> loc("k.heads")
  %v = memwall.matmul %x, %wv : tensor<2x64x256xbf16>, tensor<256x128xbf16> -> tensor<2x64x128xbf16> loc("v")
  %vs = memwall.reshape %v [2, 64, 2, 64] : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16> loc("v.split")
  %vh = memwall.transpose %vs [0, 2, 1, 3] : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16> loc("v.heads")
  %qr = memwall.rope %qh, %pos : tensor<2x4x64x64xbf16>, tensor<64xi64> loc("q.rope")
  %kr = memwall.rope %kh, %pos : tensor<2x2x64x64xbf16>, tensor<64xi64> loc("k.rope")
  %o = memwall.attention %qr, %kr, %vh causal : tensor<2x4x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16> -> tensor<2x4x64x64xbf16>
  return %o : tensor<2x4x64x64xbf16>
}

// -----

// Heads of 96 (N = 384): no tile is a multiple of 96 wide, so no tile holds
// a head and its rotation partners; the heads split still joins the GEMM
// (each element stores on its own), the rope stays its own kernel and the
// report says why.
// CHECK-LABEL: func.func @rope_over_heads_no_tile_holds
// CHECK: memwall.fusion gemm
// CHECK: memwall.transpose
// CHECK-NEXT: memwall.yield
// CHECK: memwall.rope
// REPORT: fusion: 3 kernels -> 2
// REPORT: kept apart: h+h.split+h.heads -> h.rope: the generated GEMM has no tile that fits: a rope in the epilogue needs whole heads of 96 columns in a tile, but the tile is {{[0-9]+}} wide
func.func @rope_over_heads_no_tile_holds(%x: tensor<1x512x256xbf16>, %w: tensor<256x384xbf16>, %pos: tensor<512xi64>) -> tensor<1x4x512x96xbf16> {
  %h = memwall.matmul %x, %w : tensor<1x512x256xbf16>, tensor<256x384xbf16> -> tensor<1x512x384xbf16> loc("h")
  %s = memwall.reshape %h [1, 512, 4, 96] : tensor<1x512x384xbf16> -> tensor<1x512x4x96xbf16> loc("h.split")
  %t = memwall.transpose %s [0, 2, 1, 3] : tensor<1x512x4x96xbf16> -> tensor<1x4x512x96xbf16> loc("h.heads")
  %r = memwall.rope %t, %pos : tensor<1x4x512x96xbf16>, tensor<512xi64> loc("h.rope")
  return %r : tensor<1x4x512x96xbf16>
}

// -----

// Only the heads split joins a GEMM: another permutation (here [B, H, D, S],
// k transposed for a matmul) stays a transpose kernel, with why.
// CHECK-LABEL: func.func @other_permutation_stays_a_kernel
// CHECK-NOT: memwall.fusion
// REPORT: kept apart: h -> h.split+h.kt: a GEMM's result is written heads-split by a reshape of [.., S, N] to [.., S, H, D], a transpose to [.., H, S, D] and an optional rope, but the transpose does not swap S and H
func.func @other_permutation_stays_a_kernel(%x: tensor<1x64x256xbf16>, %w: tensor<256x256xbf16>) -> tensor<1x4x64x64xbf16> {
  %h = memwall.matmul %x, %w : tensor<1x64x256xbf16>, tensor<256x256xbf16> -> tensor<1x64x256xbf16> loc("h")
  %s = memwall.reshape %h [1, 64, 4, 64] : tensor<1x64x256xbf16> -> tensor<1x64x4x64xbf16> loc("h.split")
  %t = memwall.transpose %s [0, 2, 3, 1] : tensor<1x64x4x64xbf16> -> tensor<1x4x64x64xbf16> loc("h.kt")
  return %t : tensor<1x4x64x64xbf16>
}

// -----

// The output projection reads attention's [B, H, S, D] output through a
// heads merge (transpose + reshape) folded into its lhs addressing, with the
// residual add in its epilogue: one kernel, no transpose.
// CHECK-LABEL: func.func @output_projection_reads_heads
// CHECK: memwall.fusion gemm(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x4x64x64xbf16>, tensor<256x256xbf16>, tensor<2x64x256xbf16>) -> tensor<2x64x256xbf16>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memwall.transpose {{.*}} [0, 2, 1, 3]
// CHECK-NEXT: memwall.reshape {{.*}} [2, 64, 256]
// CHECK-NEXT: memwall.matmul
// CHECK-NEXT: memwall.add
// CHECK-NEXT: memwall.yield
// REPORT: fusion: 3 kernels -> 1
// REPORT: gemm o.heads+o.merge+o+o.residual: memwall gemm
func.func @output_projection_reads_heads(%attn: tensor<2x4x64x64xbf16>, %w: tensor<256x256xbf16>, %res: tensor<2x64x256xbf16>) -> tensor<2x64x256xbf16> {
  %t = memwall.transpose %attn [0, 2, 1, 3] : tensor<2x4x64x64xbf16> -> tensor<2x64x4x64xbf16> loc("o.heads")
  %m = memwall.reshape %t [2, 64, 256] : tensor<2x64x4x64xbf16> -> tensor<2x64x256xbf16> loc("o.merge")
  %o = memwall.matmul %m, %w : tensor<2x64x256xbf16>, tensor<256x256xbf16> -> tensor<2x64x256xbf16> loc("o")
  %r = memwall.add %res, %o : tensor<2x64x256xbf16>, tensor<2x64x256xbf16> -> tensor<2x64x256xbf16> loc("o.residual")
  return %r : tensor<2x64x256xbf16>
}

// -----

// Under auto on h100-sxm a large output projection stays on cuBLASLt (the
// generated GEMM is priced at its measured 0.40 of the peak against
// cuBLAS's 0.775), so the heads merge stays a transpose kernel, and the
// report says why and what each choice predicts.
// RUN: memwall-opt %s --split-input-file --fuse --target=h100-sxm --report=- -o /dev/null | FileCheck %s --check-prefix=AUTO
// AUTO: kept apart: big.heads+big.merge -> big.o: one kernel (memwall gemm: cuBLASLt cannot run it: cuBLASLt reads its lhs as stored, not through a heads merge) predicts {{.*}} us, apart {{.*}} us + {{.*}} us
func.func @large_projection_keeps_its_transpose(%attn: tensor<4x32x2048x128xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<4x2048x4096xbf16> {
  %t = memwall.transpose %attn [0, 2, 1, 3] : tensor<4x32x2048x128xbf16> -> tensor<4x2048x32x128xbf16> loc("big.heads")
  %m = memwall.reshape %t [4, 2048, 4096] : tensor<4x2048x32x128xbf16> -> tensor<4x2048x4096xbf16> loc("big.merge")
  %o = memwall.matmul %m, %w {transpose_rhs} : tensor<4x2048x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4x2048x4096xbf16> loc("big.o")
  return %o : tensor<4x2048x4096xbf16>
}
