// QLoRA's NF4 weights: i4 codes into the NF4 codebook, one absmax per 64
// weights along K, the absmax double-quantized (i8 with an f32 scale per
// block of them). The forward layout [K, N] and the transposed [N, K] of a
// backward's input gradient; M = 37 is ragged against the tiles, N = 96
// too.
module @gemm_nf4 {
  func.func @main(%x: tensor<37x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w: tensor<128x96xi4> {memwall.kind = #memwall.arg_kind<weight>} loc("w"),
      %w8: tensor<2x96xi8> {memwall.kind = #memwall.arg_kind<weight>} loc("w.absmax"),
      %w32: tensor<1x3xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("w.absmax_scales"),
      %t: tensor<96x128xi4> {memwall.kind = #memwall.arg_kind<weight>} loc("t"),
      %t8: tensor<96x2xi8> {memwall.kind = #memwall.arg_kind<weight>} loc("t.absmax"),
      %t32: tensor<3x2xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("t.absmax_scales")) -> (tensor<37x96xbf16>, tensor<37x96xbf16>) {
    %wa = memwall.dequantize %w8, %w32 : tensor<2x96xi8>, tensor<1x3xf32> -> tensor<2x96xf32> loc("w.absmax.dequantized")
    %wd = memwall.dequantize %w, %wa {codebook = array<f32: -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0>} : tensor<128x96xi4>, tensor<2x96xf32> -> tensor<128x96xbf16> loc("w.dequantized")
    %y = memwall.matmul %x, %wd : tensor<37x128xbf16>, tensor<128x96xbf16> -> tensor<37x96xbf16> loc("forward")
    %ta = memwall.dequantize %t8, %t32 : tensor<96x2xi8>, tensor<3x2xf32> -> tensor<96x2xf32> loc("t.absmax.dequantized")
    %td = memwall.dequantize %t, %ta {codebook = array<f32: -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0>} : tensor<96x128xi4>, tensor<96x2xf32> -> tensor<96x128xbf16> loc("t.dequantized")
    %z = memwall.matmul %x, %td {transpose_rhs} : tensor<37x128xbf16>, tensor<96x128xbf16> -> tensor<37x96xbf16> loc("transposed")
    return %y, %z : tensor<37x96xbf16>, tensor<37x96xbf16>
  }
}
