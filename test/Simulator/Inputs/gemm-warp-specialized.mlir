// Two GEMMs of one lhs (batch folded into M), one [N, K] weight with bias +
// GELU, one [K, N] weight, opted into the sm_90a wgmma + TMA kernel
// in its warp-specialized form (a TMA producer warpgroup, two consumers).
module attributes {memwall.gemm = "memwall", memwall.gemm_wgmma, memwall.gemm_warp_specialized} {
func.func @main(%x: tensor<2x150x512xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"), %w: tensor<384x512xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("w"), %b: tensor<384xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("b"), %v: tensor<512x256xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("v")) -> (tensor<2x150x384xbf16>, tensor<2x150x256xbf16>) {
  %0 = memwall.matmul %x, %w bias %b {transpose_rhs} : tensor<2x150x512xbf16>, tensor<384x512xbf16>, tensor<384xbf16> -> tensor<2x150x384xbf16> loc("fc")
  %1 = memwall.gelu %0 : tensor<2x150x384xbf16> loc("act")
  %2 = memwall.matmul %x, %v : tensor<2x150x512xbf16>, tensor<512x256xbf16> -> tensor<2x150x256xbf16> loc("proj")
  return %1, %2 : tensor<2x150x384xbf16>, tensor<2x150x256xbf16>
}
}
