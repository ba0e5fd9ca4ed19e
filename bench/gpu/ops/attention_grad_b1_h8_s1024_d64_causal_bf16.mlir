// Causal attention's backward alone (B1 H8 S1024 D64, quick to --check).
// q, k, v, the output o and its gradient do [B, H, S, D] bf16, the forward's
// log-sum-exp lse [B, H, S] f32; dq, dk, dv out. scale 1/sqrt(D), causal.
// PyTorch: torch.autograd.grad of F.scaled_dot_product_attention(q, k, v,
// is_causal=True) for do, its forward run once outside the timing
// (bench/gpu/pytorch_bench.py).
module @attention_grad_b1_h8_s1024_d64_causal_bf16 {
  func.func @main(
      %q: tensor<1x8x1024x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("q"),
      %k: tensor<1x8x1024x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("k"),
      %v: tensor<1x8x1024x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("v"),
      %o: tensor<1x8x1024x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("o"),
      %do: tensor<1x8x1024x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("do"),
      %lse: tensor<1x8x1024xf32> {memwall.kind = #memwall.arg_kind<input>} loc("lse"))
      -> (tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16>) {
    %dq, %dk, %dv = memwall.flash_attention_grad %q, %k, %v, %o, %do, %lse causal scale 0.125 block_q 64 block_kv 64
        : (tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16>, tensor<1x8x1024xf32>) -> (tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16>) loc("attention_grad")
    return %dq, %dk, %dv : tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16>
  }
}
