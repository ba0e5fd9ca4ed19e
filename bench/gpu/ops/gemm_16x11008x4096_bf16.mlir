// A plain GEMM y = x W^T (nn.Linear without bias): M=16, N=11008, K=4096, bf16
// with fp32 accumulation. compile_bundles.sh also builds it with
// --gemm=memwall and --gemm=cublaslt (the generated GEMM against cuBLASLt).
// PyTorch: torch.nn.functional.linear(x, w).
module @gemm_16x11008x4096_bf16 {
  func.func @main(
      %x: tensor<16x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w: tensor<11008x4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("weight")) -> tensor<16x11008xbf16> {
    %0 = memwall.matmul %x, %w {transpose_rhs} : tensor<16x4096xbf16>, tensor<11008x4096xbf16> -> tensor<16x11008xbf16> loc("linear")
    return %0 : tensor<16x11008xbf16>
  }
}
