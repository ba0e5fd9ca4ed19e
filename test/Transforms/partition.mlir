// memwall-partition splits a function over a tensor-parallel grid through
// MLIR's upstream shard dialect: memwall-shard annotates the weights with
// Megatron's column/row split, upstream sharding-propagation carries it
// through memwall's sharding rules, and shard-partition writes the
// per-device program (docs/parallelism.md, "Per-device programs").
// RUN: memwall-opt %s --split-input-file --pass-pipeline='builtin.module(memwall-partition{tensor-parallel=2})' | FileCheck %s

// GPT-2's MLP (the residual stream of 8 sequences of 64 tokens, width 256):
// fc1 is column-parallel (each device holds 512 of its 1024 columns and
// their bias), GELU runs on the device's columns, fc2 is row-parallel: its
// partial products are summed by one all-reduce, and its bias is added
// once, after the sum. The norm and the residual add are replicated.
// CHECK: shard.grid @tensor(shape = 2)
// CHECK-LABEL: func.func @gpt2_mlp
// CHECK-SAME: %[[X:[^:]*]]: tensor<8x64x256xbf16>
// CHECK-SAME: tensor<256x512xbf16> {memwall.kind = #memwall.arg_kind<weight>}, %[[B1:[^:]*]]: tensor<512xbf16>
// CHECK-SAME: tensor<512x256xbf16> {memwall.kind = #memwall.arg_kind<weight>}, %[[B2:[^:]*]]: tensor<256xbf16>
// CHECK-SAME: -> tensor<8x64x256xbf16>
// CHECK: %[[N:.*]] = memwall.layer_norm %[[X]], {{.*}} : tensor<8x64x256xbf16>, tensor<256xbf16>, tensor<256xbf16>
// CHECK: %[[H:.*]] = memwall.matmul %[[N]], %{{.*}} bias %[[B1]] : tensor<8x64x256xbf16>, tensor<256x512xbf16>, tensor<512xbf16> -> tensor<8x64x512xbf16>
// CHECK: %[[A:.*]] = memwall.gelu %[[H]] tanh : tensor<8x64x512xbf16>
// CHECK: %[[P:.*]] = memwall.matmul %[[A]], %{{.*}} : tensor<8x64x512xbf16>, tensor<512x256xbf16> -> tensor<8x64x256xbf16>
// CHECK: %[[S:.*]] = shard.all_reduce %[[P]] on @tensor grid_axes = [0] : tensor<8x64x256xbf16> -> tensor<8x64x256xbf16>
// CHECK: %[[O:.*]] = memwall.add %[[S]], %[[B2]] : tensor<8x64x256xbf16>, tensor<256xbf16> -> tensor<8x64x256xbf16>
// CHECK: %[[R:.*]] = memwall.add %[[X]], %[[O]]
// CHECK-NOT: shard.
// CHECK: return %[[R]] : tensor<8x64x256xbf16>
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

// Llama's attention block with grouped-query attention (2 sequences of 64
// tokens, width 256: 4 query heads and 2 KV heads of 64). q, k and v are
// column-parallel: each device computes its query heads (2 of 4) and their
// KV head (1 of 2), splits them out of the GEMM's columns (the reshape is
// split along the heads, not inside a head), rotates and attends to them
// on its own; o is row-parallel and its partial sums are all-reduced.
// CHECK: shard.grid @tensor(shape = 2)
// CHECK-LABEL: func.func @llama_attention
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x64x256xbf16>
// CHECK-SAME: tensor<256x128xbf16> {memwall.kind = #memwall.arg_kind<weight>}, %{{[^:]*}}: tensor<256x64xbf16> {memwall.kind = #memwall.arg_kind<weight>}, %{{[^:]*}}: tensor<256x64xbf16> {memwall.kind = #memwall.arg_kind<weight>}, %{{[^:]*}}: tensor<128x256xbf16>
// CHECK: %[[Q:.*]] = memwall.matmul {{.*}} -> tensor<2x64x128xbf16>
// CHECK: memwall.reshape %[[Q]] [2, 64, 2, 64] : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16>
// CHECK: memwall.transpose {{.*}} -> tensor<2x2x64x64xbf16>
// CHECK: memwall.reshape {{.*}} [2, 64, 1, 64] : tensor<2x64x64xbf16> -> tensor<2x64x1x64xbf16>
// CHECK: memwall.rope {{.*}} : tensor<2x2x64x64xbf16>, tensor<64xi64>
// CHECK: memwall.rope {{.*}} : tensor<2x1x64x64xbf16>, tensor<64xi64>
// CHECK: %[[ATT:.*]] = memwall.attention {{.*}} causal : tensor<2x2x64x64xbf16>, tensor<2x1x64x64xbf16>, tensor<2x1x64x64xbf16> -> tensor<2x2x64x64xbf16>
// CHECK: memwall.transpose %[[ATT]] [0, 2, 1, 3] : tensor<2x2x64x64xbf16> -> tensor<2x64x2x64xbf16>
// CHECK: %[[M:.*]] = memwall.reshape {{.*}} [2, 64, 128] : tensor<2x64x2x64xbf16> -> tensor<2x64x128xbf16>
// CHECK: %[[P:.*]] = memwall.matmul %[[M]], {{.*}} : tensor<2x64x128xbf16>, tensor<128x256xbf16> -> tensor<2x64x256xbf16>
// CHECK: %[[S:.*]] = shard.all_reduce %[[P]] on @tensor grid_axes = [0] : tensor<2x64x256xbf16> -> tensor<2x64x256xbf16>
// CHECK: %[[R:.*]] = memwall.add %[[X]], %[[S]]
// CHECK-NOT: shard.
// CHECK: return %[[R]]
func.func @llama_attention(%x: tensor<2x64x256xbf16>,
    %wq: tensor<256x256xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %wk: tensor<256x128xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %wv: tensor<256x128xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %wo: tensor<256x256xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %pos: tensor<64xi64>) -> tensor<2x64x256xbf16> {
  %q = memwall.matmul %x, %wq : tensor<2x64x256xbf16>, tensor<256x256xbf16> -> tensor<2x64x256xbf16> loc("layers.0.attn.q")
  %qs = memwall.reshape %q [2, 64, 4, 64] : tensor<2x64x256xbf16> -> tensor<2x64x4x64xbf16> loc("layers.0.attn.q.split")
  %qh = memwall.transpose %qs [0, 2, 1, 3] : tensor<2x64x4x64xbf16> -> tensor<2x4x64x64xbf16> loc("layers.0.attn.q.heads")
  %k = memwall.matmul %x, %wk : tensor<2x64x256xbf16>, tensor<256x128xbf16> -> tensor<2x64x128xbf16> loc("layers.0.attn.k")
  %ks = memwall.reshape %k [2, 64, 2, 64] : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16> loc("layers.0.attn.k.split")
  %kh = memwall.transpose %ks [0, 2, 1, 3] : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16> loc("layers.0.attn.k.heads")
  %v = memwall.matmul %x, %wv : tensor<2x64x256xbf16>, tensor<256x128xbf16> -> tensor<2x64x128xbf16> loc("layers.0.attn.v")
  %vs = memwall.reshape %v [2, 64, 2, 64] : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16> loc("layers.0.attn.v.split")
  %vh = memwall.transpose %vs [0, 2, 1, 3] : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16> loc("layers.0.attn.v.heads")
  %qr = memwall.rope %qh, %pos : tensor<2x4x64x64xbf16>, tensor<64xi64> loc("layers.0.attn.q.rope")
  %kr = memwall.rope %kh, %pos : tensor<2x2x64x64xbf16>, tensor<64xi64> loc("layers.0.attn.k.rope")
  %o = memwall.attention %qr, %kr, %vh causal : tensor<2x4x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16> -> tensor<2x4x64x64xbf16> loc("layers.0.attn")
  %ot = memwall.transpose %o [0, 2, 1, 3] : tensor<2x4x64x64xbf16> -> tensor<2x64x4x64xbf16> loc("layers.0.attn.merge")
  %om = memwall.reshape %ot [2, 64, 256] : tensor<2x64x4x64xbf16> -> tensor<2x64x256xbf16> loc("layers.0.attn.merge.view")
  %p = memwall.matmul %om, %wo : tensor<2x64x256xbf16>, tensor<256x256xbf16> -> tensor<2x64x256xbf16> loc("layers.0.attn.o")
  %r = memwall.add %x, %p : tensor<2x64x256xbf16>, tensor<2x64x256xbf16> -> tensor<2x64x256xbf16> loc("layers.0.residual")
  return %r : tensor<2x64x256xbf16>
}
