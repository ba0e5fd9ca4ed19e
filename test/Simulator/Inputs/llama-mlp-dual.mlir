// A tiny Llama MLP, y = r + down(swiglu(gate(x), up(x))), on ragged M and N,
// and a SwiGLU of two biased projections with row-major weights: under
// --gemm=memwall gate and up (and the second pair) run as dual GEMMs.
module @llama_mlp_dual {
  func.func @main(
      %x: tensor<37x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %r: tensor<37x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("residual"),
      %wg: tensor<88x64xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.gate.weight"),
      %wu: tensor<88x64xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.up.weight"),
      %wd: tensor<64x88xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.down.weight"),
      %wa: tensor<64x72xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("a.weight"),
      %ba: tensor<72xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("a.bias"),
      %wb: tensor<64x72xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("b.weight"),
      %bb: tensor<72xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("b.bias"))
      -> (tensor<37x64xbf16>, tensor<37x72xbf16>) {
    %0 = memwall.matmul %x, %wg {transpose_rhs} : tensor<37x64xbf16>, tensor<88x64xbf16> -> tensor<37x88xbf16> loc("mlp.gate")
    %1 = memwall.matmul %x, %wu {transpose_rhs} : tensor<37x64xbf16>, tensor<88x64xbf16> -> tensor<37x88xbf16> loc("mlp.up")
    %2 = memwall.swiglu %0, %1 : tensor<37x88xbf16> loc("mlp.swiglu")
    %3 = memwall.matmul %2, %wd {transpose_rhs} : tensor<37x88xbf16>, tensor<64x88xbf16> -> tensor<37x64xbf16> loc("mlp.down")
    %4 = memwall.add %r, %3 : tensor<37x64xbf16>, tensor<37x64xbf16> -> tensor<37x64xbf16> loc("mlp.residual")
    %5 = memwall.matmul %4, %wa bias %ba : tensor<37x64xbf16>, tensor<64x72xbf16>, tensor<72xbf16> -> tensor<37x72xbf16> loc("a")
    %6 = memwall.matmul %4, %wb bias %bb : tensor<37x64xbf16>, tensor<64x72xbf16>, tensor<72xbf16> -> tensor<37x72xbf16> loc("b")
    %7 = memwall.silu %5 : tensor<37x72xbf16> loc("silu")
    %8 = memwall.mul %7, %6 : tensor<37x72xbf16>, tensor<37x72xbf16> -> tensor<37x72xbf16> loc("glu")
    return %4, %8 : tensor<37x64xbf16>, tensor<37x72xbf16>
  }
}
