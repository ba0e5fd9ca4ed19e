// One decode token over a 700-token f16 KV cache, 8 query heads over 2 KV
// heads of 128: split keys and the combine kernel.
func.func @main(%q: tensor<1x8x1x128xf16> loc("q"),
                %k: tensor<1x2x700x128xf16> loc("k"),
                %v: tensor<1x2x700x128xf16> loc("v"))
    -> tensor<1x8x1x128xf16> {
  %0 = memwall.attention %q, %k, %v causal : tensor<1x8x1x128xf16>, tensor<1x2x700x128xf16>, tensor<1x2x700x128xf16> -> tensor<1x8x1x128xf16> loc("attn")
  return %0 : tensor<1x8x1x128xf16>
}
