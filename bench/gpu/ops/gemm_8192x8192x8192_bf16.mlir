// A plain GEMM y = x W^T (nn.Linear without bias): M=8192, N=8192, K=8192, bf16
// with fp32 accumulation. compile_bundles.sh also builds it with
// --gemm=memwall and --gemm=cublaslt (the generated GEMM against cuBLASLt).
// PyTorch: torch.nn.functional.linear(x, w).
module @gemm_8192x8192x8192_bf16 {
  func.func @main(
      %x: tensor<8192x8192xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w: tensor<8192x8192xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("weight")) -> tensor<8192x8192xbf16> {
    %0 = memwall.matmul %x, %w {transpose_rhs} : tensor<8192x8192xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xbf16> loc("linear")
    return %0 : tensor<8192x8192xbf16>
  }
}
