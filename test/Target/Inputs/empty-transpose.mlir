func.func @empty_transpose(%a: tensor<4x0xf32>) -> tensor<0x4xf32> {
  %0 = memwall.transpose %a [1, 0] : tensor<4x0xf32> -> tensor<0x4xf32>
  return %0 : tensor<0x4xf32>
}
