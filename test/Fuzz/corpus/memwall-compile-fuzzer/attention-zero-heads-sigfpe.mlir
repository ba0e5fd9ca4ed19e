func.func @main(%q: tensor<1x0x64x64xbf16>) -> tensor<1x0x64x64xbf16> {
  %0 = memwall.attention %q, %q, %q causal : tensor<1x0x64x64xbf16>, tensor<1x0x64x64xbf16>, tensor<1x0x64x64xbf16> -> tensor<1x0x64x64xbf16>
  return %0 : tensor<1x0x64x64xbf16>
}
