// memwall-shard writes the tensor-parallel plan in the shard dialect: a
// grid of T devices and one shard.shard of each tensor argument, the
// weights split as Megatron splits them (docs/parallelism.md).
// RUN: memwall-opt %s --split-input-file --memwall-shard=tensor-parallel=4 | FileCheck %s
// RUN: memwall-opt %s --split-input-file --memwall-shard="tensor-parallel=2 grid=tp" | FileCheck %s --check-prefix=NAMED

// fc1's weight [K, N] splits along N (column-parallel), its bias with it;
// fc2's weight along K (row-parallel), its bias replicated; the input and
// the norm's parameters replicated.
// CHECK: shard.grid @tensor(shape = 4)
// CHECK-LABEL: func.func @gpt2_mlp
// CHECK-SAME: %[[X:[^:]*]]: tensor<8x64x256xbf16>, %[[G:[^:]*]]: tensor<256xbf16> {{.*}}, %[[BETA:[^:]*]]: tensor<256xbf16> {{.*}}, %[[W1:[^:]*]]: tensor<256x1024xbf16> {{.*}}, %[[B1:[^:]*]]: tensor<1024xbf16> {{.*}}, %[[W2:[^:]*]]: tensor<1024x256xbf16> {{.*}}, %[[B2:[^:]*]]: tensor<256xbf16>
// CHECK-NEXT: %[[REPLICATED:.*]] = shard.sharding @tensor split_axes = [] : !shard.sharding
// CHECK-NEXT: %[[XS:.*]] = shard.shard %[[X]] to %[[REPLICATED]] : tensor<8x64x256xbf16>
// CHECK-NEXT: shard.shard %[[G]] to %[[REPLICATED]]
// CHECK-NEXT: shard.shard %[[BETA]] to %[[REPLICATED]]
// CHECK-NEXT: %[[COLUMNS:.*]] = shard.sharding @tensor split_axes = {{\[\[}}], [0]] : !shard.sharding
// CHECK-NEXT: shard.shard %[[W1]] to %[[COLUMNS]] : tensor<256x1024xbf16>
// CHECK-NEXT: %[[ROWS:.*]] = shard.sharding @tensor split_axes = {{\[\[}}0]] : !shard.sharding
// CHECK-NEXT: shard.shard %[[B1]] to %[[ROWS]] : tensor<1024xbf16>
// CHECK-NEXT: shard.shard %[[W2]] to %[[ROWS]] : tensor<1024x256xbf16>
// CHECK-NEXT: shard.shard %[[B2]] to %[[REPLICATED]]
// CHECK: memwall.layer_norm %[[XS]]
// NAMED: shard.grid @tp(shape = 2)
// NAMED: shard.sharding @tp split_axes = {{\[\[}}], [0]]
func.func @gpt2_mlp(%x: tensor<8x64x256xbf16>,
    %g: tensor<256xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %beta: tensor<256xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %w1: tensor<256x1024xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %b1: tensor<1024xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %w2: tensor<1024x256xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %b2: tensor<256xbf16> {memwall.kind = #memwall.arg_kind<weight>})
    -> tensor<8x64x256xbf16> {
  %n = memwall.layer_norm %x, %g, %beta : tensor<8x64x256xbf16>, tensor<256xbf16>, tensor<256xbf16> loc("h.0.ln_2")
  %h = memwall.matmul %n, %w1 bias %b1 : tensor<8x64x256xbf16>, tensor<256x1024xbf16>, tensor<1024xbf16> -> tensor<8x64x1024xbf16> loc("h.0.mlp.c_fc")
  %a = memwall.gelu %h tanh : tensor<8x64x1024xbf16> loc("h.0.mlp.act")
  %o = memwall.matmul %a, %w2 bias %b2 : tensor<8x64x1024xbf16>, tensor<1024x256xbf16>, tensor<256xbf16> -> tensor<8x64x256xbf16> loc("h.0.mlp.c_proj")
  %r = memwall.add %x, %o : tensor<8x64x256xbf16>, tensor<8x64x256xbf16> -> tensor<8x64x256xbf16> loc("h.0.residual")
  return %r : tensor<8x64x256xbf16>
}

// -----

// A weight stored transposed ([N, K], transpose_rhs) splits along its
// first dimension when column-parallel and its second when row-parallel.
// (A GEMM whose result the function returns is taken for the
// language-model head, which stays whole: hence the residual add.)
// CHECK-LABEL: func.func @transposed_weights
// CHECK-DAG: %[[ROWS:.*]] = shard.sharding @tensor split_axes = {{\[\[}}0]] : !shard.sharding
// CHECK-DAG: %[[COLUMNS:.*]] = shard.sharding @tensor split_axes = {{\[\[}}], [0]] : !shard.sharding
// CHECK-DAG: shard.shard %arg1 to %[[ROWS]] : tensor<512x128xbf16>
// CHECK-DAG: shard.shard %arg2 to %[[COLUMNS]] : tensor<128x512xbf16>
func.func @transposed_weights(%x: tensor<16x128xbf16>,
    %w1: tensor<512x128xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %w2: tensor<128x512xbf16> {memwall.kind = #memwall.arg_kind<weight>})
    -> tensor<16x128xbf16> {
  %h = memwall.matmul %x, %w1 {transpose_rhs} : tensor<16x128xbf16>, tensor<512x128xbf16> -> tensor<16x512xbf16>
  %a = memwall.silu %h : tensor<16x512xbf16>
  %o = memwall.matmul %a, %w2 {transpose_rhs} : tensor<16x512xbf16>, tensor<128x512xbf16> -> tensor<16x128xbf16>
  %r = memwall.add %x, %o : tensor<16x128xbf16>, tensor<16x128xbf16> -> tensor<16x128xbf16>
  return %r : tensor<16x128xbf16>
}
