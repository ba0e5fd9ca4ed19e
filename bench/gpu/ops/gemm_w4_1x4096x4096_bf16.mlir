// A weight-only int4 GEMM y = x (q s)^T (W4A16, as AWQ/GPTQ decode kernels):
// M=1, N=4096, K=4096, the weight stored as packed int4 (two a byte, the even
// element in the low nibble) with a bf16 scale per group of 128 along K,
// unpacked and dequantized in memwall's GEMM main loop (docs/codegen.md,
// "Weight-only quantized GEMMs").
// PyTorch: unpack the nibbles, scale the groups, F.linear (eager writes a
// bf16 copy of the weight first; torch.compile may fuse the unpacking).
module @gemm_w4_1x4096x4096_bf16 {
  func.func @main(
      %x: tensor<1x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %q: tensor<4096x4096xi4> {memwall.kind = #memwall.arg_kind<weight>} loc("weight"),
      %s: tensor<4096x32xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("weight.scales")) -> tensor<1x4096xbf16> {
    %w = memwall.dequantize %q, %s : tensor<4096x4096xi4>, tensor<4096x32xbf16> -> tensor<4096x4096xbf16> loc("weight.dequantized")
    %0 = memwall.matmul %x, %w {transpose_rhs} : tensor<1x4096xbf16>, tensor<4096x4096xbf16> -> tensor<1x4096xbf16> loc("linear")
    return %0 : tensor<1x4096xbf16>
  }
}
