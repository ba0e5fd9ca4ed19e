func.func @f(%a: tensor<4x8xbf16>, %b: tensor<9x16xbf16>) {
  // The report must not be written when the input does not verify.
  %0 = memwall.matmul %a, %b : tensor<4x8xbf16>, tensor<9x16xbf16> -> tensor<4x16xbf16>
  return
}
