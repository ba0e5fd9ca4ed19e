// One GPT-2 (124M) transformer block at batch 8 x 1024 tokens, bf16, with the
// attention core left out (scaled dot-product attention is not generated yet:
// see docs/codegen.md). The attention sub-layer keeps its output projection
// c_proj and residual add, so the block is
//
//   h   = x + c_proj(ln_1(x))
//   out = h + mlp.c_proj(gelu_tanh(mlp.c_fc(ln_2(h))))
//
// PyTorch: Hugging Face GPT2Block with attn.attn replaced by the identity.
// Weights are stored [in, out] like GPT-2's Conv1D.
//
//   memwall-compile examples/gpt2_block_no_attention.mlir -o block.bundle
module @gpt2_block_no_attention {
  func.func @main(
      %x: tensor<8x1024x768xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %ln1_w: tensor<768xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("ln_1.weight"),
      %ln1_b: tensor<768xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("ln_1.bias"),
      %proj_w: tensor<768x768xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("attn.c_proj.weight"),
      %proj_b: tensor<768xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("attn.c_proj.bias"),
      %ln2_w: tensor<768xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("ln_2.weight"),
      %ln2_b: tensor<768xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("ln_2.bias"),
      %fc_w: tensor<768x3072xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.c_fc.weight"),
      %fc_b: tensor<3072xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.c_fc.bias"),
      %out_w: tensor<3072x768xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.c_proj.weight"),
      %out_b: tensor<768xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("mlp.c_proj.bias"))
      -> tensor<8x1024x768xbf16> {
    %0 = memwall.layer_norm %x, %ln1_w, %ln1_b eps 1.000000e-05 : tensor<8x1024x768xbf16>, tensor<768xbf16>, tensor<768xbf16> loc("ln_1")
    %1 = memwall.matmul %0, %proj_w bias %proj_b : tensor<8x1024x768xbf16>, tensor<768x768xbf16>, tensor<768xbf16> -> tensor<8x1024x768xbf16> loc("attn.c_proj")
    %2 = memwall.add %x, %1 : tensor<8x1024x768xbf16>, tensor<8x1024x768xbf16> -> tensor<8x1024x768xbf16> loc("attn.residual")
    %3 = memwall.layer_norm %2, %ln2_w, %ln2_b eps 1.000000e-05 : tensor<8x1024x768xbf16>, tensor<768xbf16>, tensor<768xbf16> loc("ln_2")
    %4 = memwall.matmul %3, %fc_w bias %fc_b : tensor<8x1024x768xbf16>, tensor<768x3072xbf16>, tensor<3072xbf16> -> tensor<8x1024x3072xbf16> loc("mlp.c_fc")
    %5 = memwall.gelu %4 tanh : tensor<8x1024x3072xbf16> loc("mlp.act")
    %6 = memwall.matmul %5, %out_w bias %out_b : tensor<8x1024x3072xbf16>, tensor<3072x768xbf16>, tensor<768xbf16> -> tensor<8x1024x768xbf16> loc("mlp.c_proj")
    %7 = memwall.add %2, %6 : tensor<8x1024x768xbf16>, tensor<8x1024x768xbf16> -> tensor<8x1024x768xbf16> loc("mlp.residual")
    return %7 : tensor<8x1024x768xbf16>
  }
}
