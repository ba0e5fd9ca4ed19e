// A weight-only int8 GEMM whose main loop cannot dequantize (K = 40 is not
// a multiple of 16, the 1-byte weights' cp.async chunk): memwall-fuse runs
// a dequantize kernel, then cuBLASLt (docs/fusion.md, "Dequantize kernels").
module @dequantize_fallback {
  func.func @main(%x: tensor<37x40xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %q: tensor<24x40xi8> {memwall.kind = #memwall.arg_kind<weight>} loc("q"),
      %s: tensor<24x1xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("q.scales")) -> tensor<37x24xbf16> {
    %w = memwall.dequantize %q, %s : tensor<24x40xi8>, tensor<24x1xbf16> -> tensor<24x40xbf16> loc("q.dequantized")
    %y = memwall.matmul %x, %w {transpose_rhs} : tensor<37x40xbf16>, tensor<24x40xbf16> -> tensor<37x24xbf16> loc("linear")
    return %y : tensor<37x24xbf16>
  }
}
