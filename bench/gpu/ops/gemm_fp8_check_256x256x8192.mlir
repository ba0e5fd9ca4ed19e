// An fp8 GEMM small enough for memwall-run --check to verify in a second,
// with the K of gemm_fp8_8192x8192x8192: y = x W^T, x [256, 8192] and
// W [256, 8192] in f8E4M3FN, the product bf16. compile_bundles.sh also
// builds it as .fastacc (memwall.gemm_fp8_fast_accumulation): whether that
// one passes --check on the GPU measures whether the tensor cores' own fp8
// accumulation holds over K = 8192 (docs/codegen.md, "fp8 GEMMs"). No
// PyTorch row.
module @gemm_fp8_check_256x256x8192 {
  func.func @main(
      %x: tensor<256x8192xf8E4M3FN> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w: tensor<256x8192xf8E4M3FN> {memwall.kind = #memwall.arg_kind<weight>} loc("weight")) -> tensor<256x256xbf16> {
    %0 = memwall.matmul %x, %w {transpose_rhs} : tensor<256x8192xf8E4M3FN>, tensor<256x8192xf8E4M3FN> -> tensor<256x256xbf16> loc("linear")
    return %0 : tensor<256x256xbf16>
  }
}
