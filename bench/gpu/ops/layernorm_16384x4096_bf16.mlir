// LayerNorm over the last axis of 16384 rows of 4096 bf16, with weight and
// bias. PyTorch: torch.nn.functional.layer_norm(x, (4096,), w, b, eps=1e-5).
// Memory-bound: reads x once, writes y once (256 MiB moved).
module @layernorm_16384x4096_bf16 {
  func.func @main(
      %x: tensor<16384x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w: tensor<4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("ln.weight"),
      %b: tensor<4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("ln.bias")) -> tensor<16384x4096xbf16> {
    %0 = memwall.layer_norm %x, %w, %b eps 1.000000e-05 : tensor<16384x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16> loc("ln")
    return %0 : tensor<16384x4096xbf16>
  }
}
