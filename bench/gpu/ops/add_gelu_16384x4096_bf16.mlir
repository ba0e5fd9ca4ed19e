// Bias add followed by the tanh GELU on 16384 rows of 4096 bf16 (the
// epilogue of a GPT-2 MLP up-projection done as a separate pass):
// y = gelu_tanh(x + b).
// PyTorch: torch.nn.functional.gelu(x + b, approximate="tanh").
module @add_gelu_16384x4096_bf16 {
  func.func @main(
      %x: tensor<16384x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %b: tensor<4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("bias")) -> tensor<16384x4096xbf16> {
    %0 = memwall.add %x, %b : tensor<16384x4096xbf16>, tensor<4096xbf16> -> tensor<16384x4096xbf16> loc("bias_add")
    %1 = memwall.gelu %0 tanh : tensor<16384x4096xbf16> loc("gelu")
    return %1 : tensor<16384x4096xbf16>
  }
}
