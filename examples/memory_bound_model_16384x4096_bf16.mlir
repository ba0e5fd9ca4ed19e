// Seed workload: Linear(4096, 4096) -> GELU -> Linear(4096, 4096) -> LayerNorm(4096)
// on 16384 rows of bf16. PyTorch equivalent:
//   nn.Sequential(nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.LayerNorm(4096))
// (nn.Linear: y = x W^T + b with W [out, in]; nn.GELU: the exact erf form).
//   memwall-compile examples/memory_bound_model_16384x4096_bf16.mlir --target=h100-sxm -o memory_bound_model_16384x4096_bf16.bundle
module @memory_bound_model_16384x4096_bf16 {
  func.func @main(
      %x: tensor<16384x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w1: tensor<4096x4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("fc1.weight"),
      %b1: tensor<4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("fc1.bias"),
      %w2: tensor<4096x4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("fc2.weight"),
      %b2: tensor<4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("fc2.bias"),
      %g: tensor<4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("ln.weight"),
      %be: tensor<4096xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("ln.bias")) -> tensor<16384x4096xbf16> {
    %0 = memwall.matmul %x, %w1 bias %b1 {transpose_rhs} : tensor<16384x4096xbf16>, tensor<4096x4096xbf16>, tensor<4096xbf16> -> tensor<16384x4096xbf16> loc("fc1")
    %1 = memwall.gelu %0 : tensor<16384x4096xbf16> loc("gelu")
    %2 = memwall.matmul %1, %w2 bias %b2 {transpose_rhs} : tensor<16384x4096xbf16>, tensor<4096x4096xbf16>, tensor<4096xbf16> -> tensor<16384x4096xbf16> loc("fc2")
    %3 = memwall.layer_norm %2, %g, %be eps 1.000000e-05 : tensor<16384x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16> loc("ln")
    return %3 : tensor<16384x4096xbf16>
  }
}
