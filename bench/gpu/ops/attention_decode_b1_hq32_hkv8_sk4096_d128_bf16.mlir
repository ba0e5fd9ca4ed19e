// Decode step with grouped-query attention: one query token per head, 32 query heads over 8 KV heads, a 4096-token KV cache, D128.
// q [B, Hq, Sq, D] = [1, 32, 1, 128], k and v [B, Hkv, Sk, D] = [1, 8, 4096, 128], bf16,
// scale 1/sqrt(D), causal (aligned bottom-right: query i sees keys j <= i + Sk - Sq).
// memwall-tile-attention turns it into memwall.flash_attention.
// With Sq = 1 the bottom-right causal mask hides no key. PyTorch:
// F.scaled_dot_product_attention(q, k, v, enable_gqa=True), is_causal left False
// because SDPA aligns its causal mask top-left (it would leave only key 0).
module @attention_decode_b1_hq32_hkv8_sk4096_d128_bf16 {
  func.func @main(
      %q: tensor<1x32x1x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("q"),
      %k: tensor<1x8x4096x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("k"),
      %v: tensor<1x8x4096x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("v")) -> tensor<1x32x1x128xbf16> {
    %0 = memwall.attention %q, %k, %v causal : tensor<1x32x1x128xbf16>, tensor<1x8x4096x128xbf16>, tensor<1x8x4096x128xbf16> -> tensor<1x32x1x128xbf16> loc("attention")
    return %0 : tensor<1x32x1x128xbf16>
  }
}
