// Seed workload: Linear(1024, 1024) -> GELU -> Linear(1024, 1024) -> LayerNorm(1024)
// on 512 rows of f32. PyTorch equivalent:
//   nn.Sequential(nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.LayerNorm(1024))
// (nn.Linear: y = x W^T + b with W [out, in]; nn.GELU: the exact erf form).
//   memwall-compile examples/memory_bound_model_512x1024_f32.mlir --target=h100-sxm -o memory_bound_model_512x1024_f32.bundle
module @memory_bound_model_512x1024_f32 {
  func.func @main(
      %x: tensor<512x1024xf32> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %w1: tensor<1024x1024xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("fc1.weight"),
      %b1: tensor<1024xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("fc1.bias"),
      %w2: tensor<1024x1024xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("fc2.weight"),
      %b2: tensor<1024xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("fc2.bias"),
      %g: tensor<1024xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("ln.weight"),
      %be: tensor<1024xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("ln.bias")) -> tensor<512x1024xf32> {
    %0 = memwall.matmul %x, %w1 bias %b1 {transpose_rhs} : tensor<512x1024xf32>, tensor<1024x1024xf32>, tensor<1024xf32> -> tensor<512x1024xf32> loc("fc1")
    %1 = memwall.gelu %0 : tensor<512x1024xf32> loc("gelu")
    %2 = memwall.matmul %1, %w2 bias %b2 {transpose_rhs} : tensor<512x1024xf32>, tensor<1024x1024xf32>, tensor<1024xf32> -> tensor<512x1024xf32> loc("fc2")
    %3 = memwall.layer_norm %2, %g, %be eps 1.000000e-05 : tensor<512x1024xf32>, tensor<1024xf32>, tensor<1024xf32> loc("ln")
    return %3 : tensor<512x1024xf32>
  }
}
