// A weight-only int8 GEMM y = x (q s)^T (W8A16, as gpt-fast's and TensorRT-
// LLM's int8 weight-only decode): M=16, N=11008, K=4096, the weight stored int8
// with a bf16 scale per output channel, dequantized in memwall's GEMM main
// loop (docs/codegen.md, "Weight-only quantized GEMMs").
// PyTorch: torch.nn.functional.linear(x, q.to(bf16) * s) (eager dequantizes
// into a bf16 copy first; torch.compile fuses the dequantize into its GEMM).
module @gemm_w8_16x11008x4096_bf16 {
  func.func @main(
      %x: tensor<16x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %q: tensor<11008x4096xi8> {memwall.kind = #memwall.arg_kind<weight>} loc("weight"),
      %s: tensor<11008x1xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("weight.scales")) -> tensor<16x11008xbf16> {
    %w = memwall.dequantize %q, %s : tensor<11008x4096xi8>, tensor<11008x1xbf16> -> tensor<11008x4096xbf16> loc("weight.dequantized")
    %0 = memwall.matmul %x, %w {transpose_rhs} : tensor<16x4096xbf16>, tensor<11008x4096xbf16> -> tensor<16x11008xbf16> loc("linear")
    return %0 : tensor<16x11008xbf16>
  }
}
