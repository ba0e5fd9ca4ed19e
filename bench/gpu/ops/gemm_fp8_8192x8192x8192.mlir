// An fp8 GEMM y = x W^T: M=8192, N=8192, K=8192, both operands f8E4M3FN
// (K-major, as fp8 tensor cores read them), the product bf16 with fp32
// accumulation. memwall runs fp8 on its sm_90a wgmma kernel only (k32
// QGMMA); compile_bundles.sh also builds the warp-specialized form (.ws).
// PyTorch: torch._scaled_mm(x, w.t(), unit scales, out_dtype=bf16), which
// calls cuBLASLt's fp8 GEMM.
module @gemm_fp8_8192x8192x8192 {
  func.func @main(
      %x: tensor<8192x8192xf8E4M3FN> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w: tensor<8192x8192xf8E4M3FN> {memwall.kind = #memwall.arg_kind<weight>} loc("weight")) -> tensor<8192x8192xbf16> {
    %0 = memwall.matmul %x, %w {transpose_rhs} : tensor<8192x8192xf8E4M3FN>, tensor<8192x8192xf8E4M3FN> -> tensor<8192x8192xbf16> loc("linear")
    return %0 : tensor<8192x8192xbf16>
  }
}
