func.func @main(%s: tensor<1x1073741824x64x16xbf16>) -> tensor<1x1073741824x64x16xbf16> {
  %1:2 = memwall.flash_attention %s, %s, %s scale 0.25 block_q 64 block_kv 64 splits 1 : (tensor<1x1073741824x64x16xbf16>, tensor<1x1073741824x64x16xbf16>, tensor<1x1073741824x64x16xbf16>) -> (tensor<1x1073741824x64x16xbf16>, tensor<1x1073741824x64xf32>)
  return %1#0 : tensor<1x1073741824x64x16xbf16>
}
