// RUN: memwall-opt %s --mlir-disable-threading --pass-pipeline='builtin.module(func.func(memwall-test-print-memory-liveness))' -o /dev/null | FileCheck %s
// RUN: memwall-opt %s --mlir-disable-threading --pass-pipeline='builtin.module(func.func(memwall-test-print-memory-liveness{devices=4 zero-stage=3}))' -o /dev/null | FileCheck %s --check-prefix=ZERO3

// MemoryLiveness: one buffer per allocation; views (the reshapes) share
// their operand's buffer and keep it live to the return; weights live for
// the whole step, an input until its last reader.
// CHECK: memory liveness of @step: 5 steps, no backward
// CHECK-NEXT: %arg0: 131072 B activations, steps 0..0
// CHECK-NEXT: %arg1: 2097152 B weights, steps 0..4
// CHECK-NEXT: %arg2: 2048 B weights, steps 0..4
// CHECK-NEXT: %0: 131072 B activations, steps 0..1
// CHECK-NEXT: %1: 131072 B activations, steps 1..2
// CHECK-NEXT: %2: 131072 B activations, steps 2..4
// CHECK-NEXT: peak 2361344 B at step 0 (proj) on 1 device(s), zero 0, offload none

// In a backward, an elementwise op writes over an operand that dies at it
// (docs/memory.md, "In place"): the bias add over the GEMM's result, the
// activation gradient over the sum; the cast changes the type and keeps its
// own buffer. An argument is never written over.
// CHECK: memory liveness of @backward: 4 steps, training, backward from step 0
// CHECK-NEXT: %arg0: 131072 B activations, steps 0..3
// CHECK-NEXT: %arg1: 2097152 B weights, steps 0..3
// CHECK-NEXT: %arg2: 2048 B weights, steps 0..3
// CHECK-NEXT: %0: 131072 B workspace, steps 0..3
// CHECK-NEXT: %3: 262144 B gradients, steps 3..3

// An operand something else reads too keeps its buffer.
// CHECK: memory liveness of @shared: 2 steps, training, backward from step 0
// CHECK-NEXT: %arg0: 131072 B activations, steps 0..0
// CHECK-NEXT: %0: 131072 B gradients, steps 0..1
// CHECK-NEXT: %1: 131072 B gradients, steps 1..1

// The sharding options apply on top of the same liveness: ZeRO-3 shards the
// weights over 4 devices and gathers two of the largest at a time.
// ZERO3: %2: 131072 B activations, steps 2..4
// ZERO3-NEXT: peak 4981248 B at step 0 (proj) on 4 device(s), zero 3, offload none
module @m {
  func.func @step(%x: tensor<64x1024xbf16>, %w: tensor<1024x1024xbf16> {memwall.kind = #memwall.arg_kind<weight>}, %b: tensor<1024xbf16> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<64x1024xbf16> {
    %0 = memwall.matmul %x, %w : tensor<64x1024xbf16>, tensor<1024x1024xbf16> -> tensor<64x1024xbf16> loc("proj")
    %1 = memwall.add %0, %b : tensor<64x1024xbf16>, tensor<1024xbf16> -> tensor<64x1024xbf16> loc("bias")
    %2 = memwall.gelu %1 : tensor<64x1024xbf16> loc("act")
    %3 = memwall.reshape %2 [64, 32, 32] : tensor<64x1024xbf16> -> tensor<64x32x32xbf16> loc("view")
    %4 = memwall.reshape %3 [64, 1024] : tensor<64x32x32xbf16> -> tensor<64x1024xbf16> loc("back")
    return %4 : tensor<64x1024xbf16>
  }
  func.func @backward(%x: tensor<64x1024xbf16>, %w: tensor<1024x1024xbf16> {memwall.kind = #memwall.arg_kind<weight>}, %b: tensor<1024xbf16> {memwall.kind = #memwall.arg_kind<weight>}) -> (tensor<64x1024xbf16>, tensor<64x1024xf32>) {
    %0 = memwall.matmul %x, %w {memwall.phase = "backward"} : tensor<64x1024xbf16>, tensor<1024x1024xbf16> -> tensor<64x1024xbf16> loc("proj.grad")
    %1 = memwall.add %0, %b {memwall.phase = "backward"} : tensor<64x1024xbf16>, tensor<1024xbf16> -> tensor<64x1024xbf16> loc("bias.grad")
    %2 = memwall.activation_grad gelu_tanh %x, %1 {memwall.phase = "backward"} : tensor<64x1024xbf16> loc("act.grad")
    %3 = memwall.cast %x to f32 {memwall.phase = "backward"} : tensor<64x1024xbf16> -> tensor<64x1024xf32> loc("wide")
    return %2, %3 : tensor<64x1024xbf16>, tensor<64x1024xf32>
  }
  func.func @shared(%x: tensor<64x1024xbf16>) -> (tensor<64x1024xbf16>, tensor<64x1024xbf16>) {
    %0 = memwall.scale %x by 2.0 {memwall.phase = "backward"} : tensor<64x1024xbf16> loc("twice")
    %1 = memwall.mul %0, %0 {memwall.phase = "backward"} : tensor<64x1024xbf16>, tensor<64x1024xbf16> -> tensor<64x1024xbf16> loc("square")
    return %0, %1 : tensor<64x1024xbf16>, tensor<64x1024xbf16>
  }
}
