// The seed workload's shape at 64 rows and a width of 1024 (memwall-compile
// --gemm=memwall on sm_90a): fc2's bias and LayerNorm run in a row-chunked
// epilogue whose rows a thread-block cluster shares, fc1's bias and erf GELU
// in the other GEMM.
module @gemm_cluster_norm {
  func.func @main(
      %x: tensor<64x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w1: tensor<1024x128xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("fc1.weight"),
      %b1: tensor<1024xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("fc1.bias"),
      %w2: tensor<1024x1024xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("fc2.weight"),
      %b2: tensor<1024xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("fc2.bias"),
      %g: tensor<1024xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("ln.weight"),
      %be: tensor<1024xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("ln.bias")) -> tensor<64x1024xbf16> {
    %0 = memwall.matmul %x, %w1 bias %b1 {transpose_rhs} : tensor<64x128xbf16>, tensor<1024x128xbf16>, tensor<1024xbf16> -> tensor<64x1024xbf16> loc("fc1")
    %1 = memwall.gelu %0 : tensor<64x1024xbf16> loc("gelu")
    %2 = memwall.matmul %1, %w2 bias %b2 {transpose_rhs} : tensor<64x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024xbf16> -> tensor<64x1024xbf16> loc("fc2")
    %3 = memwall.layer_norm %2, %g, %be eps 1.000000e-05 : tensor<64x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16> loc("ln")
    return %3 : tensor<64x1024xbf16>
  }
}
