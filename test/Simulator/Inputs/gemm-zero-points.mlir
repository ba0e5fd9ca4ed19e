// An asymmetric int4 linear layer (AWQ-style): packed i4 weights in groups
// of 32 along K, each group with a bf16 scale and zero point; M = 37 and
// N = 96 ragged against the tiles.
module @gemm_zero_points {
  func.func @main(%x: tensor<37x160xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %q: tensor<96x160xi4> {memwall.kind = #memwall.arg_kind<weight>} loc("weight"),
      %s: tensor<96x5xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("weight.scales"),
      %z: tensor<96x5xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("weight.zeros")) -> tensor<37x96xbf16> {
    %w = memwall.dequantize %q, %s zero_points %z : tensor<96x160xi4>, tensor<96x5xbf16>, tensor<96x5xbf16> -> tensor<96x160xbf16> loc("weight.dequantized")
    %0 = memwall.matmul %x, %w {transpose_rhs} : tensor<37x160xbf16>, tensor<96x160xbf16> -> tensor<37x96xbf16> loc("linear")
    return %0 : tensor<37x96xbf16>
  }
}
