func.func @infinite(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<0x7F800000> : tensor<4xf32>
  %0 = memwall.add %a, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
