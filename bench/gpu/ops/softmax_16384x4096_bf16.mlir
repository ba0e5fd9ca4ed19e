// Softmax along the last axis of 16384 rows of 4096 bf16.
// PyTorch: torch.softmax(x, dim=-1).
module @softmax_16384x4096_bf16 {
  func.func @main(
      %x: tensor<16384x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x")) -> tensor<16384x4096xbf16> {
    %0 = memwall.softmax %x axis -1 : tensor<16384x4096xbf16> loc("softmax")
    return %0 : tensor<16384x4096xbf16>
  }
}
