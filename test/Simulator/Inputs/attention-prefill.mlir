// Causal grouped-query attention, 2 batches x 4 query heads over 2 KV heads,
// 200 tokens (a ragged last block), head dim 64, bf16.
func.func @main(%q: tensor<2x4x200x64xbf16> loc("q"),
                %k: tensor<2x2x200x64xbf16> loc("k"),
                %v: tensor<2x2x200x64xbf16> loc("v"))
    -> tensor<2x4x200x64xbf16> {
  %0 = memwall.attention %q, %k, %v causal : tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16> -> tensor<2x4x200x64xbf16> loc("attn")
  return %0 : tensor<2x4x200x64xbf16>
}
