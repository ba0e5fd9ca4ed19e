// A small Llama attention block's layouts, checked on the GPU (memwall-run
// --check; the large attn_proj_llama2_7b_2048_bf16 is timed unchecked): q, k
// and v projections (hidden 512, 4 heads of 128, 2 x 128 tokens) written
// [B, H, S, D] with q and k rotated by rope, and an output projection
// reading an attention output [B, H, S, D] through a heads merge. With
// --gemm=memwall on sm_90a: the heads layouts in the epilogues and the
// merged lhs through a 4-D tensor map (S = 128 is a multiple of the tiles).
module @attn_proj_check_b2_s128_bf16 {
  func.func @main(
      %x: tensor<2x128x512xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %pos: tensor<128xi64> {memwall.kind = #memwall.arg_kind<input>} loc("positions"),
      %attn: tensor<2x4x128x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("attn"),
      %wq: tensor<512x512xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("attn.q.weight"),
      %wk: tensor<512x512xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("attn.k.weight"),
      %wv: tensor<512x512xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("attn.v.weight"),
      %wo: tensor<512x512xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("attn.o.weight"))
      -> (tensor<2x4x128x128xbf16>, tensor<2x4x128x128xbf16>, tensor<2x4x128x128xbf16>, tensor<2x128x512xbf16>) {
    %q = memwall.matmul %x, %wq {transpose_rhs} : tensor<2x128x512xbf16>, tensor<512x512xbf16> -> tensor<2x128x512xbf16> loc("attn.q")
    %qs = memwall.reshape %q [2, 128, 4, 128] : tensor<2x128x512xbf16> -> tensor<2x128x4x128xbf16> loc("attn.q.split")
    %qh = memwall.transpose %qs [0, 2, 1, 3] : tensor<2x128x4x128xbf16> -> tensor<2x4x128x128xbf16> loc("attn.q.heads")
    %k = memwall.matmul %x, %wk {transpose_rhs} : tensor<2x128x512xbf16>, tensor<512x512xbf16> -> tensor<2x128x512xbf16> loc("attn.k")
    %ks = memwall.reshape %k [2, 128, 4, 128] : tensor<2x128x512xbf16> -> tensor<2x128x4x128xbf16> loc("attn.k.split")
    %kh = memwall.transpose %ks [0, 2, 1, 3] : tensor<2x128x4x128xbf16> -> tensor<2x4x128x128xbf16> loc("attn.k.heads")
    %v = memwall.matmul %x, %wv {transpose_rhs} : tensor<2x128x512xbf16>, tensor<512x512xbf16> -> tensor<2x128x512xbf16> loc("attn.v")
    %vs = memwall.reshape %v [2, 128, 4, 128] : tensor<2x128x512xbf16> -> tensor<2x128x4x128xbf16> loc("attn.v.split")
    %vh = memwall.transpose %vs [0, 2, 1, 3] : tensor<2x128x4x128xbf16> -> tensor<2x4x128x128xbf16> loc("attn.v.heads")
    %qr = memwall.rope %qh, %pos : tensor<2x4x128x128xbf16>, tensor<128xi64> loc("attn.q.rope")
    %kr = memwall.rope %kh, %pos : tensor<2x4x128x128xbf16>, tensor<128xi64> loc("attn.k.rope")
    %at = memwall.transpose %attn [0, 2, 1, 3] : tensor<2x4x128x128xbf16> -> tensor<2x128x4x128xbf16> loc("attn.heads")
    %am = memwall.reshape %at [2, 128, 512] : tensor<2x128x4x128xbf16> -> tensor<2x128x512xbf16> loc("attn.merge")
    %o = memwall.matmul %am, %wo {transpose_rhs} : tensor<2x128x512xbf16>, tensor<512x512xbf16> -> tensor<2x128x512xbf16> loc("attn.o")
    return %qr, %kr, %vh, %o : tensor<2x4x128x128xbf16>, tensor<2x4x128x128xbf16>, tensor<2x4x128x128xbf16>, tensor<2x128x512xbf16>
  }
}
