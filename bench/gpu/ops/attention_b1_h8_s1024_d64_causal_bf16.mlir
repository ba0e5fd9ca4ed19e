// Small causal attention forward (B1 H8 S1024 D64), quick to --check against the CPU reference.
// q [B, Hq, Sq, D] = [1, 8, 1024, 64], k and v [B, Hkv, Sk, D] = [1, 8, 1024, 64], bf16,
// scale 1/sqrt(D), causal (aligned bottom-right: query i sees keys j <= i + Sk - Sq).
// memwall-tile-attention turns it into memwall.flash_attention.
// PyTorch: F.scaled_dot_product_attention(q, k, v, is_causal=True).
module @attention_b1_h8_s1024_d64_causal_bf16 {
  func.func @main(
      %q: tensor<1x8x1024x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("q"),
      %k: tensor<1x8x1024x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("k"),
      %v: tensor<1x8x1024x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("v")) -> tensor<1x8x1024x64xbf16> {
    %0 = memwall.attention %q, %k, %v causal : tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16> -> tensor<1x8x1024x64xbf16> loc("attention")
    return %0 : tensor<1x8x1024x64xbf16>
  }
}
