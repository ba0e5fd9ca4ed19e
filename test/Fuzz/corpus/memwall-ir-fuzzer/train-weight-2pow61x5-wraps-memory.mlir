func.func @train(%x: tensor<5x2305843009213693952xbf16> {memwall.kind = #memwall.arg_kind<input>},
                 %w: tensor<2305843009213693952x5xbf16> {memwall.kind = #memwall.arg_kind<weight>},
                 %y: tensor<5xi64> {memwall.kind = #memwall.arg_kind<input>}) -> tensor<f32> {
  %h = memwall.matmul %x, %w : tensor<5x2305843009213693952xbf16>, tensor<2305843009213693952x5xbf16> -> tensor<5x5xbf16>
  %l = memwall.cross_entropy %h, %y : tensor<5x5xbf16>, tensor<5xi64> -> tensor<f32>
  return %l : tensor<f32>
}
