// Attention forward, baselines.md's head-dim-64 shape: B8 H16 S2048 D64.
// q [B, Hq, Sq, D] = [8, 16, 2048, 64], k and v [B, Hkv, Sk, D] = [8, 16, 2048, 64], bf16,
// scale 1/sqrt(D).
// memwall-tile-attention turns it into memwall.flash_attention.
// PyTorch: F.scaled_dot_product_attention(q, k, v, is_causal=False).
module @attention_b8_h16_s2048_d64_bf16 {
  func.func @main(
      %q: tensor<8x16x2048x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("q"),
      %k: tensor<8x16x2048x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("k"),
      %v: tensor<8x16x2048x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("v")) -> tensor<8x16x2048x64xbf16> {
    %0 = memwall.attention %q, %k, %v : tensor<8x16x2048x64xbf16>, tensor<8x16x2048x64xbf16>, tensor<8x16x2048x64xbf16> -> tensor<8x16x2048x64xbf16> loc("attention")
    return %0 : tensor<8x16x2048x64xbf16>
  }
}
