// memwall.softmax's sharding rule: every dimension but the normalized axis
// is a parallel loop. The axis is read from its I64Attr as signed: the
// default -1 is the last dimension (not an index past the end).
// RUN: memwall-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' | FileCheck %s

// Split along the rows, normalized along the (default) last axis: each
// device normalizes its own rows, no collective.
// CHECK-LABEL: func.func @rows_split_default_axis
// CHECK-SAME: %[[X:.*]]: tensor<4x16xf32>
// CHECK-NEXT: %[[P:.*]] = memwall.softmax %[[X]] : tensor<4x16xf32>
// CHECK-NEXT: return %[[P]] : tensor<4x16xf32>
shard.grid @grid(shape = 2)
func.func @rows_split_default_axis(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x16xf32>
  %p = memwall.softmax %xs : tensor<8x16xf32>
  %ps = shard.shard %p to %s annotate_for_users : tensor<8x16xf32>
  return %ps : tensor<8x16xf32>
}

// -----

// Split along the normalized axis: the columns are gathered whole first.
// CHECK-LABEL: func.func @split_along_the_axis
// CHECK: shard.all_gather
// CHECK: memwall.softmax %{{.*}} axis 0 : tensor<8x16xf32>
shard.grid @grid(shape = 2)
func.func @split_along_the_axis(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x16xf32>
  %p = memwall.softmax %xs axis 0 : tensor<8x16xf32>
  return %p : tensor<8x16xf32>
}
