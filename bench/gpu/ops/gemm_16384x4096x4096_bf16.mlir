// A plain GEMM y = x W^T (nn.Linear without bias): M=16384, N=4096, K=4096, bf16
// with fp32 accumulation. compile_bundles.sh also builds it with
// --gemm=memwall and --gemm=cublaslt (the generated GEMM against cuBLASLt).
// PyTorch: torch.nn.functional.linear(x, w).
module @gemm_16384x4096x4096_bf16 {
  func.func @main(
      %x: tensor<16384x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w: tensor<4096x4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("weight")) -> tensor<16384x4096xbf16> {
    %0 = memwall.matmul %x, %w {transpose_rhs} : tensor<16384x4096xbf16>, tensor<4096x4096xbf16> -> tensor<16384x4096xbf16> loc("linear")
    return %0 : tensor<16384x4096xbf16>
  }
}
