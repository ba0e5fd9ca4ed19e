func.func @train(%x: tensor<4x4xf32> {memwall.kind = #memwall.arg_kind<weight>},
                 %y: tensor<4xi64> {memwall.kind = #memwall.arg_kind<input>}) -> tensor<f32> {
  %r = memwall.reshape %x [4294967296, 4294967296, 4] : tensor<4x4xf32> -> tensor<4294967296x4294967296x4xf32>
  %b = memwall.reshape %r [4, 4] : tensor<4294967296x4294967296x4xf32> -> tensor<4x4xf32>
  %l = memwall.cross_entropy %b, %y : tensor<4x4xf32>, tensor<4xi64> -> tensor<f32>
  return %l : tensor<f32>
}
