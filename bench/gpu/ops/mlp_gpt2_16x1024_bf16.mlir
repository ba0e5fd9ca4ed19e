// The MLP of a GPT-2 (124M) block on 16 x 1024 tokens (bf16) with its
// residual: y = r + proj(gelu_tanh(fc(x) + b_fc)) + b_proj, C = 768.
// PyTorch: r + F.linear(F.gelu(F.linear(x, w1, b1), approximate="tanh"), w2, b2).
module @mlp_gpt2_16x1024_bf16 {
  func.func @main(
      %x: tensor<16384x768xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %r: tensor<16384x768xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("residual"),
      %w1: tensor<3072x768xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.c_fc.weight"),
      %b1: tensor<3072xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.c_fc.bias"),
      %w2: tensor<768x3072xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.c_proj.weight"),
      %b2: tensor<768xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.c_proj.bias")) -> tensor<16384x768xbf16> {
    %0 = memwall.matmul %x, %w1 bias %b1 {transpose_rhs} : tensor<16384x768xbf16>, tensor<3072x768xbf16>, tensor<3072xbf16> -> tensor<16384x3072xbf16> loc("mlp.c_fc")
    %1 = memwall.gelu %0 tanh : tensor<16384x3072xbf16> loc("mlp.gelu")
    %2 = memwall.matmul %1, %w2 bias %b2 {transpose_rhs} : tensor<16384x3072xbf16>, tensor<768x3072xbf16>, tensor<768xbf16> -> tensor<16384x768xbf16> loc("mlp.c_proj")
    %3 = memwall.add %r, %2 : tensor<16384x768xbf16>, tensor<16384x768xbf16> -> tensor<16384x768xbf16> loc("mlp.residual")
    return %3 : tensor<16384x768xbf16>
  }
}
