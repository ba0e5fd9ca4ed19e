// Decode-shaped GEMMs (5 rows) whose tiles leave most SMs idle, so memwall's
// GEMM splits K over grid.z: bias + erf GELU on an [N, K] weight, a residual
// add on a [K, N] weight (memwall-compile --gemm=memwall).
module attributes {memwall.gemm = "memwall"} {
func.func @main(%x: tensor<5x1000xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"), %w: tensor<200x1000xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("w"), %b: tensor<200xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("b"), %v: tensor<1000x136xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("v"), %r: tensor<5x136xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("r")) -> (tensor<5x200xbf16>, tensor<5x136xbf16>) {
  %0 = memwall.matmul %x, %w bias %b {transpose_rhs} : tensor<5x1000xbf16>, tensor<200x1000xbf16>, tensor<200xbf16> -> tensor<5x200xbf16> loc("fc")
  %1 = memwall.gelu %0 : tensor<5x200xbf16> loc("act")
  %2 = memwall.matmul %x, %v : tensor<5x1000xbf16>, tensor<1000x136xbf16> -> tensor<5x136xbf16> loc("proj")
  %3 = memwall.add %2, %r : tensor<5x136xbf16>, tensor<5x136xbf16> -> tensor<5x136xbf16> loc("res")
  return %1, %3 : tensor<5x200xbf16>, tensor<5x136xbf16>
}
}
