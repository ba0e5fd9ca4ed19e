// The MLP of a Llama-2-7B layer on 2048 tokens (bf16) with its residual:
// y = r + down(silu(gate(x)) * up(x)), hidden 4096, intermediate 11008.
// PyTorch: r + F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd).
module @mlp_llama2_7b_2048_bf16 {
  func.func @main(
      %x: tensor<2048x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %r: tensor<2048x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("residual"),
      %wg: tensor<11008x4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.gate.weight"),
      %wu: tensor<11008x4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.up.weight"),
      %wd: tensor<4096x11008xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.down.weight")) -> tensor<2048x4096xbf16> {
    %0 = memwall.matmul %x, %wg {transpose_rhs} : tensor<2048x4096xbf16>, tensor<11008x4096xbf16> -> tensor<2048x11008xbf16> loc("mlp.gate")
    %1 = memwall.matmul %x, %wu {transpose_rhs} : tensor<2048x4096xbf16>, tensor<11008x4096xbf16> -> tensor<2048x11008xbf16> loc("mlp.up")
    %2 = memwall.swiglu %0, %1 : tensor<2048x11008xbf16> loc("mlp.swiglu")
    %3 = memwall.matmul %2, %wd {transpose_rhs} : tensor<2048x11008xbf16>, tensor<4096x11008xbf16> -> tensor<2048x4096xbf16> loc("mlp.down")
    %4 = memwall.add %r, %3 : tensor<2048x4096xbf16>, tensor<2048x4096xbf16> -> tensor<2048x4096xbf16> loc("mlp.residual")
    return %4 : tensor<2048x4096xbf16>
  }
}
