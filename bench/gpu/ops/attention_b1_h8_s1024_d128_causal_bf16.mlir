// Small causal attention forward (B1 H8 S1024 D128), quick to --check against the CPU
// reference: the head dimension (and tiles) of the large D128 workloads, which run.sh
// times without --check.
// q [B, Hq, Sq, D] = [1, 8, 1024, 128], k and v [B, Hkv, Sk, D] = [1, 8, 1024, 128], bf16,
// scale 1/sqrt(D), causal (aligned bottom-right: query i sees keys j <= i + Sk - Sq).
// memwall-tile-attention turns it into memwall.flash_attention.
// PyTorch: F.scaled_dot_product_attention(q, k, v, is_causal=True).
module @attention_b1_h8_s1024_d128_causal_bf16 {
  func.func @main(
      %q: tensor<1x8x1024x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("q"),
      %k: tensor<1x8x1024x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("k"),
      %v: tensor<1x8x1024x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("v")) -> tensor<1x8x1024x128xbf16> {
    %0 = memwall.attention %q, %k, %v causal : tensor<1x8x1024x128xbf16>, tensor<1x8x1024x128xbf16>, tensor<1x8x1024x128xbf16> -> tensor<1x8x1024x128xbf16> loc("attention")
    return %0 : tensor<1x8x1024x128xbf16>
  }
}
