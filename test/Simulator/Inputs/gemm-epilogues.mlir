// Matmuls whose epilogues run in memwall's generated GEMM
// (memwall-compile --gemm=memwall): ragged M and N, a bias and erf GELU, a
// residual add, a two-output DAG, a batched GEMM and f16.
module @gemm_epilogues {
  func.func @main(
      %x: tensor<37x40xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w: tensor<72x40xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("w"),
      %b: tensor<72xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("b"),
      %r: tensor<37x72xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("r"),
      %v: tensor<72x136xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("v"),
      %qa: tensor<3x20x64xf16> {memwall.kind = #memwall.arg_kind<input>} loc("qa"),
      %qb: tensor<3x64x24xf16> {memwall.kind = #memwall.arg_kind<input>} loc("qb"))
      -> (tensor<37x72xbf16>, tensor<37x136xbf16>, tensor<37x136xbf16>, tensor<3x20x24xf16>) {
    %0 = memwall.matmul %x, %w bias %b {transpose_rhs} : tensor<37x40xbf16>, tensor<72x40xbf16>, tensor<72xbf16> -> tensor<37x72xbf16> loc("fc")
    %1 = memwall.gelu %0 : tensor<37x72xbf16> loc("gelu")
    %2 = memwall.add %1, %r : tensor<37x72xbf16>, tensor<37x72xbf16> -> tensor<37x72xbf16> loc("residual")
    %3 = memwall.matmul %2, %v : tensor<37x72xbf16>, tensor<72x136xbf16> -> tensor<37x136xbf16> loc("proj")
    %4 = memwall.silu %3 : tensor<37x136xbf16> loc("silu")
    %5 = memwall.scale %4 by 0.5 : tensor<37x136xbf16> loc("half")
    %6 = memwall.matmul %qa, %qb : tensor<3x20x64xf16>, tensor<3x64x24xf16> -> tensor<3x20x24xf16> loc("batched")
    %7 = memwall.tanh %6 : tensor<3x20x24xf16> loc("tanh")
    return %2, %4, %5, %7 : tensor<37x72xbf16>, tensor<37x136xbf16>, tensor<37x136xbf16>, tensor<3x20x24xf16>
  }
}
