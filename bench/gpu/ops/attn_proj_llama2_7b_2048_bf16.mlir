// The attention projections of a Llama-2-7B layer on 2 x 1024 tokens (bf16):
// q, k and v = x W^T (hidden 4096, 32 heads of 128), each split into heads
// [B, H, S, D] as attention reads them, q and k rotated by rope at positions
// 0..S-1. memwall's GEMM writes them heads-split and rotated in its epilogue
// (docs/codegen.md, "Heads layouts"); PyTorch (Hugging Face's Llama):
// linear, view, transpose(1, 2), apply_rotary_pos_emb.
module @attn_proj_llama2_7b_2048_bf16 {
  func.func @main(
      %x: tensor<2x1024x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %pos: tensor<1024xi64> {memwall.kind = #memwall.arg_kind<input>} loc("positions"),
      %wq: tensor<4096x4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("attn.q.weight"),
      %wk: tensor<4096x4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("attn.k.weight"),
      %wv: tensor<4096x4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("attn.v.weight"))
      -> (tensor<2x32x1024x128xbf16>, tensor<2x32x1024x128xbf16>, tensor<2x32x1024x128xbf16>) {
    %q = memwall.matmul %x, %wq {transpose_rhs} : tensor<2x1024x4096xbf16>, tensor<4096x4096xbf16> -> tensor<2x1024x4096xbf16> loc("attn.q")
    %qs = memwall.reshape %q [2, 1024, 32, 128] : tensor<2x1024x4096xbf16> -> tensor<2x1024x32x128xbf16> loc("attn.q.split")
    %qh = memwall.transpose %qs [0, 2, 1, 3] : tensor<2x1024x32x128xbf16> -> tensor<2x32x1024x128xbf16> loc("attn.q.heads")
    %k = memwall.matmul %x, %wk {transpose_rhs} : tensor<2x1024x4096xbf16>, tensor<4096x4096xbf16> -> tensor<2x1024x4096xbf16> loc("attn.k")
    %ks = memwall.reshape %k [2, 1024, 32, 128] : tensor<2x1024x4096xbf16> -> tensor<2x1024x32x128xbf16> loc("attn.k.split")
    %kh = memwall.transpose %ks [0, 2, 1, 3] : tensor<2x1024x32x128xbf16> -> tensor<2x32x1024x128xbf16> loc("attn.k.heads")
    %v = memwall.matmul %x, %wv {transpose_rhs} : tensor<2x1024x4096xbf16>, tensor<4096x4096xbf16> -> tensor<2x1024x4096xbf16> loc("attn.v")
    %vs = memwall.reshape %v [2, 1024, 32, 128] : tensor<2x1024x4096xbf16> -> tensor<2x1024x32x128xbf16> loc("attn.v.split")
    %vh = memwall.transpose %vs [0, 2, 1, 3] : tensor<2x1024x32x128xbf16> -> tensor<2x32x1024x128xbf16> loc("attn.v.heads")
    %qr = memwall.rope %qh, %pos : tensor<2x32x1024x128xbf16>, tensor<1024xi64> loc("attn.q.rope")
    %kr = memwall.rope %kh, %pos : tensor<2x32x1024x128xbf16>, tensor<1024xi64> loc("attn.k.rope")
    return %qr, %kr, %vh : tensor<2x32x1024x128xbf16>, tensor<2x32x1024x128xbf16>, tensor<2x32x1024x128xbf16>
  }
}
