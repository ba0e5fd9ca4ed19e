// An fp8 GEMM small enough for memwall-run --check to verify in seconds,
// with the K of gemm_fp8_8192x8192x8192: y = x W^T, x [1536, 8192] and
// W [1536, 8192] in f8E4M3FN, the product bf16. 1536 rows and columns make
// at least as many tiles as an H100 or H200 has SMs (144 of 128x128), so no
// kernel splits K: each output's accumulation runs over all 8192.
// compile_bundles.sh also builds it as .fastacc
// (memwall.gemm_fp8_fast_accumulation): whether that one passes --check on the GPU measures whether the tensor cores' own fp8
// accumulation holds over K = 8192 (docs/codegen.md, "fp8 GEMMs"). No
// PyTorch row.
module @gemm_fp8_check_1536x1536x8192 {
  func.func @main(
      %x: tensor<1536x8192xf8E4M3FN> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w: tensor<1536x8192xf8E4M3FN> {memwall.kind = #memwall.arg_kind<weight>} loc("weight")) -> tensor<1536x1536xbf16> {
    %0 = memwall.matmul %x, %w {transpose_rhs} : tensor<1536x8192xf8E4M3FN>, tensor<1536x8192xf8E4M3FN> -> tensor<1536x1536xbf16> loc("linear")
    return %0 : tensor<1536x1536xbf16>
  }
}
