// Residual add followed by LayerNorm on 16384 rows of 4096 bf16; both the
// sum (the next residual stream) and the normalized value are results:
// h = x + r; y = layer_norm(h, w, b, eps=1e-5); return h, y.
// PyTorch: h = x + r; y = torch.nn.functional.layer_norm(h, (4096,), w, b, eps=1e-5).
module @residual_add_layernorm_16384x4096_bf16 {
  func.func @main(
      %x: tensor<16384x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %r: tensor<16384x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("residual"),
      %w: tensor<4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("ln.weight"),
      %b: tensor<4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("ln.bias")) -> (tensor<16384x4096xbf16>, tensor<16384x4096xbf16>) {
    %0 = memwall.add %x, %r : tensor<16384x4096xbf16>, tensor<16384x4096xbf16> -> tensor<16384x4096xbf16> loc("residual_add")
    %1 = memwall.layer_norm %0, %w, %b eps 1.000000e-05 : tensor<16384x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16> loc("ln")
    return %0, %1 : tensor<16384x4096xbf16>, tensor<16384x4096xbf16>
  }
}
