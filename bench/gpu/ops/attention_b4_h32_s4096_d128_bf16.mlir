// Attention forward, prefill shape of baselines.md: B4 H32 S4096 D128.
// q [B, Hq, Sq, D] = [4, 32, 4096, 128], k and v [B, Hkv, Sk, D] = [4, 32, 4096, 128], bf16,
// scale 1/sqrt(D).
// memwall-tile-attention turns it into memwall.flash_attention.
// PyTorch: F.scaled_dot_product_attention(q, k, v, is_causal=False).
module @attention_b4_h32_s4096_d128_bf16 {
  func.func @main(
      %q: tensor<4x32x4096x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("q"),
      %k: tensor<4x32x4096x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("k"),
      %v: tensor<4x32x4096x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("v")) -> tensor<4x32x4096x128xbf16> {
    %0 = memwall.attention %q, %k, %v : tensor<4x32x4096x128xbf16>, tensor<4x32x4096x128xbf16>, tensor<4x32x4096x128xbf16> -> tensor<4x32x4096x128xbf16> loc("attention")
    return %0 : tensor<4x32x4096x128xbf16>
  }
}
