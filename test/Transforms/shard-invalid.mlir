// memwall-shard refuses, with one error at the op or argument, a plan the
// grid cannot hold: tensor parallelism not dividing the heads or a split
// GEMM's width, an op without a sharding rule, a taken grid symbol.
// RUN: memwall-opt %s --split-input-file --verify-diagnostics --memwall-shard=tensor-parallel=4
// RUN: not memwall-opt %s --split-input-file --memwall-shard=tensor-parallel=0 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: tensor-parallel must be at least 1, not 0

// Two KV heads cannot be split over 4 devices.
func.func @kv_heads(%x: tensor<2x64x256xbf16>,
    %wq: tensor<256x256xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %wk: tensor<256x128xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %wv: tensor<256x128xbf16> {memwall.kind = #memwall.arg_kind<weight>})
    -> tensor<2x4x64x64xbf16> {
  %q = memwall.matmul %x, %wq : tensor<2x64x256xbf16>, tensor<256x256xbf16> -> tensor<2x64x256xbf16>
  %qs = memwall.reshape %q [2, 64, 4, 64] : tensor<2x64x256xbf16> -> tensor<2x64x4x64xbf16>
  %qh = memwall.transpose %qs [0, 2, 1, 3] : tensor<2x64x4x64xbf16> -> tensor<2x4x64x64xbf16>
  %k = memwall.matmul %x, %wk : tensor<2x64x256xbf16>, tensor<256x128xbf16> -> tensor<2x64x128xbf16>
  %ks = memwall.reshape %k [2, 64, 2, 64] : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16>
  %kh = memwall.transpose %ks [0, 2, 1, 3] : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  %v = memwall.matmul %x, %wv : tensor<2x64x256xbf16>, tensor<256x128xbf16> -> tensor<2x64x128xbf16>
  %vs = memwall.reshape %v [2, 64, 2, 64] : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16>
  %vh = memwall.transpose %vs [0, 2, 1, 3] : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  // expected-error @below {{--tensor-parallel=4 does not divide the key/value heads (2)}}
  %o = memwall.attention %qh, %kh, %vh causal : tensor<2x4x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16> -> tensor<2x4x64x64xbf16>
  return %o : tensor<2x4x64x64xbf16>
}

// -----

// An MLP 6 wide cannot be split over 4 devices.
func.func @width(%x: tensor<16x128xbf16>,
    // expected-error @below {{--tensor-parallel=4 does not divide the output width of a weight (6)}}
    %w1: tensor<128x6xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %w2: tensor<6x128xbf16> {memwall.kind = #memwall.arg_kind<weight>})
    -> tensor<16x128xbf16> {
  %h = memwall.matmul %x, %w1 : tensor<16x128xbf16>, tensor<128x6xbf16> -> tensor<16x6xbf16>
  %o = memwall.matmul %h, %w2 : tensor<16x6xbf16>, tensor<6x128xbf16> -> tensor<16x128xbf16>
  return %o : tensor<16x128xbf16>
}

// -----

// A reduction has no sharding rule yet: say which op, not what upstream's
// propagation would ("sharding interface is not implemented").
func.func @no_rule(%x: tensor<16x128xf32>) -> tensor<16xf32> {
  // expected-error @below {{'memwall.reduce' has no sharding rule, so the plan cannot be emitted in the shard dialect}}
  %m = memwall.reduce sum %x axes [1] : tensor<16x128xf32> -> tensor<16xf32>
  return %m : tensor<16xf32>
}

// -----

// Fusions come after sharding.
func.func @fused(%x: tensor<64x1024xbf16>) -> tensor<64x1024xbf16> {
  // expected-error @below {{'memwall.fusion' has no sharding rule, so the plan cannot be emitted in the shard dialect (shard before memwall-fuse)}}
  %0 = memwall.fusion elementwise(%x) : (tensor<64x1024xbf16>) -> tensor<64x1024xbf16> {
  ^bb0(%a: tensor<64x1024xbf16>):
    %1 = memwall.gelu %a : tensor<64x1024xbf16>
    memwall.yield %1 : tensor<64x1024xbf16>
  }
  return %0 : tensor<64x1024xbf16>
}

// -----

// The grid's symbol must be free.
// expected-error @below {{the grid symbol 'tensor' is already taken; choose another with grid=}}
module {
  func.func private @tensor()
}
