// An fp8 GEMM with a long K: y = x W^T, x [64, 8192] and W [128, 8192] in
// f8E4M3FN (K-major, as fp8 tensor cores read them), the product bf16.
// Compiled for two SMs, its two 128x64 tiles do not split K, so each
// tile's accumulation runs over all 8192 of K (64 k-steps, 256 k32 steps).
module @gemm_fp8_long_k {
  func.func @main(
      %x: tensor<64x8192xf8E4M3FN> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w: tensor<128x8192xf8E4M3FN> {memwall.kind = #memwall.arg_kind<weight>} loc("weight")) -> tensor<64x128xbf16> {
    %0 = memwall.matmul %x, %w {transpose_rhs} : tensor<64x8192xf8E4M3FN>, tensor<128x8192xf8E4M3FN> -> tensor<64x128xbf16> loc("linear")
    return %0 : tensor<64x128xbf16>
  }
}
