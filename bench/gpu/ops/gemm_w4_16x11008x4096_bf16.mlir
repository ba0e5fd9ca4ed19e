// A weight-only int4 GEMM y = x (q s)^T (W4A16, as AWQ/GPTQ decode kernels):
// M=16, N=11008, K=4096, the weight stored as packed int4 (two a byte, the even
// element in the low nibble) with a bf16 scale per group of 128 along K,
// unpacked and dequantized in memwall's GEMM main loop (docs/codegen.md,
// "Weight-only quantized GEMMs").
// PyTorch: unpack the nibbles, scale the groups, F.linear (eager writes a
// bf16 copy of the weight first; torch.compile may fuse the unpacking).
module @gemm_w4_16x11008x4096_bf16 {
  func.func @main(
      %x: tensor<16x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %q: tensor<11008x4096xi4> {memwall.kind = #memwall.arg_kind<weight>} loc("weight"),
      %s: tensor<11008x32xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("weight.scales")) -> tensor<16x11008xbf16> {
    %w = memwall.dequantize %q, %s : tensor<11008x4096xi4>, tensor<11008x32xbf16> -> tensor<11008x4096xbf16> loc("weight.dequantized")
    %0 = memwall.matmul %x, %w {transpose_rhs} : tensor<16x4096xbf16>, tensor<11008x4096xbf16> -> tensor<16x11008xbf16> loc("linear")
    return %0 : tensor<16x11008xbf16>
  }
}
