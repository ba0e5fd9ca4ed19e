func.func @many_splits(%q: tensor<1x1x16x16xbf16>, %kv: tensor<1x1x32768x16xbf16>) -> tensor<1x1x16x16xbf16> {
  %0:2 = memwall.flash_attention %q, %kv, %kv scale 0.25 block_q 16 block_kv 16 splits 2048 : (tensor<1x1x16x16xbf16>, tensor<1x1x32768x16xbf16>, tensor<1x1x32768x16xbf16>) -> (tensor<1x1x16x16xbf16>, tensor<1x1x16xf32>)
  return %0#0 : tensor<1x1x16x16xbf16>
}
