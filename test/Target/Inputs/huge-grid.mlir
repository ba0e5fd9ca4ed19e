func.func @huge_grid(%a: tensor<35184372088832xf32>) -> tensor<35184372088832xf32> {
  %0 = memwall.relu %a : tensor<35184372088832xf32>
  return %0 : tensor<35184372088832xf32>
}
