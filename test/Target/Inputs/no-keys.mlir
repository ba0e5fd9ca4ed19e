func.func @no_keys(%q: tensor<1x2x16x64xbf16>, %k: tensor<1x2x0x64xbf16>) -> tensor<1x2x16x64xbf16> {
  %0 = memwall.attention %q, %k, %k : tensor<1x2x16x64xbf16>, tensor<1x2x0x64xbf16>, tensor<1x2x0x64xbf16> -> tensor<1x2x16x64xbf16>
  return %0 : tensor<1x2x16x64xbf16>
}
