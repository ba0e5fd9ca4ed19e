// Dequantize kernels (`materialize`): each writes its dequantized weight,
// which a GEMM then reads as any bf16 weight. QLoRA's NF4 (i4 codes into
// the codebook, double-quantized absmax) [128, 96]; int8 per output channel
// [40, 36] (4 lanes a thread); int4 groups with zero points [64, 6] (2
// lanes); fp8 e4m3 per tensor [24, 5] (an odd row: 1 lane a thread). M = 37
// is ragged against the tiles.
module @dequantize_kernels {
  func.func @main(%x: tensor<37x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w: tensor<128x96xi4> {memwall.kind = #memwall.arg_kind<weight>} loc("w"),
      %w8: tensor<2x96xi8> {memwall.kind = #memwall.arg_kind<weight>} loc("w.absmax"),
      %w32: tensor<1x3xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("w.absmax_scales"),
      %a: tensor<37x40xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("a"),
      %q8: tensor<40x36xi8> {memwall.kind = #memwall.arg_kind<weight>} loc("q8"),
      %s8: tensor<1x36xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("q8.scales"),
      %c: tensor<37x64xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("c"),
      %q4: tensor<64x6xi4> {memwall.kind = #memwall.arg_kind<weight>} loc("q4"),
      %s4: tensor<4x6xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("q4.scales"),
      %z4: tensor<4x6xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("q4.zero_points"),
      %e: tensor<37x24xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("e"),
      %f8: tensor<24x5xf8E4M3FN> {memwall.kind = #memwall.arg_kind<weight>} loc("f8"),
      %sf: tensor<1x1xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("f8.scales"))
      -> (tensor<37x96xbf16>, tensor<37x36xbf16>, tensor<37x6xbf16>, tensor<37x5xbf16>) {
    %wa = memwall.dequantize %w8, %w32 : tensor<2x96xi8>, tensor<1x3xf32> -> tensor<2x96xf32> loc("w.absmax.dequantized")
    %wd = memwall.dequantize %w, %wa {codebook = array<f32: -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0>, materialize} : tensor<128x96xi4>, tensor<2x96xf32> -> tensor<128x96xbf16> loc("w.dequantized")
    %y = memwall.matmul %x, %wd : tensor<37x128xbf16>, tensor<128x96xbf16> -> tensor<37x96xbf16> loc("nf4")
    %d8 = memwall.dequantize %q8, %s8 {materialize} : tensor<40x36xi8>, tensor<1x36xbf16> -> tensor<40x36xbf16> loc("q8.dequantized")
    %y8 = memwall.matmul %a, %d8 : tensor<37x40xbf16>, tensor<40x36xbf16> -> tensor<37x36xbf16> loc("int8")
    %d4 = memwall.dequantize %q4, %s4 zero_points %z4 {materialize} : tensor<64x6xi4>, tensor<4x6xbf16>, tensor<4x6xbf16> -> tensor<64x6xbf16> loc("q4.dequantized")
    %y4 = memwall.matmul %c, %d4 : tensor<37x64xbf16>, tensor<64x6xbf16> -> tensor<37x6xbf16> loc("int4")
    %df = memwall.dequantize %f8, %sf {materialize} : tensor<24x5xf8E4M3FN>, tensor<1x1xbf16> -> tensor<24x5xbf16> loc("f8.dequantized")
    %yf = memwall.matmul %e, %df : tensor<37x24xbf16>, tensor<24x5xbf16> -> tensor<37x5xbf16> loc("fp8")
    return %y, %y8, %y4, %yf : tensor<37x96xbf16>, tensor<37x36xbf16>, tensor<37x6xbf16>, tensor<37x5xbf16>
  }
}
