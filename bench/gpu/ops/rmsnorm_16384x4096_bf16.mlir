// RMSNorm over the last axis of 16384 rows of 4096 bf16 (Llama style):
// y = x / sqrt(mean(x^2) + 1e-6) * w.
// PyTorch: torch.nn.functional.rms_norm(x, (4096,), w, eps=1e-6).
module @rmsnorm_16384x4096_bf16 {
  func.func @main(
      %x: tensor<16384x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w: tensor<4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("norm.weight")) -> tensor<16384x4096xbf16> {
    %0 = memwall.rms_norm %x, %w eps 1.000000e-06 : tensor<16384x4096xbf16>, tensor<4096xbf16> loc("norm")
    return %0 : tensor<16384x4096xbf16>
  }
}
