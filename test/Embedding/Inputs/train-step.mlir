// A two-layer MLP and its loss: a training function for memwall-default.
func.func @train_step(%x: tensor<512x768xf32> {memwall.kind = #memwall.arg_kind<input>},
                      %w1: tensor<768x3072xf32> {memwall.kind = #memwall.arg_kind<weight>},
                      %b1: tensor<3072xf32> {memwall.kind = #memwall.arg_kind<weight>},
                      %w2: tensor<3072x64xf32> {memwall.kind = #memwall.arg_kind<weight>},
                      %y: tensor<512xi64> {memwall.kind = #memwall.arg_kind<input>}) -> tensor<f32> {
  %h = memwall.matmul %x, %w1 : tensor<512x768xf32>, tensor<768x3072xf32> -> tensor<512x3072xf32>
  %hb = memwall.add %h, %b1 : tensor<512x3072xf32>, tensor<3072xf32> -> tensor<512x3072xf32>
  %a = memwall.gelu %hb tanh : tensor<512x3072xf32>
  %s = memwall.scale %a by 0.5 : tensor<512x3072xf32>
  %o = memwall.matmul %s, %w2 : tensor<512x3072xf32>, tensor<3072x64xf32> -> tensor<512x64xf32>
  %l = memwall.cross_entropy %o, %y : tensor<512x64xf32>, tensor<512xi64> -> tensor<f32>
  return %l : tensor<f32>
}
