func.func @main(%a: tensor<4611686018427387904xf32>) -> tensor<4611686018427387904xf32> {
  %0 = memwall.relu %a : tensor<4611686018427387904xf32>
  return %0 : tensor<4611686018427387904xf32>
}
