// A fusion is placed at its last op; an op that read an earlier op of it
// (here the reshape of the gelu, and the softmax after it) moves to just
// after the fusion, not past every later op (as a topological sort would:
// in a backward pass that kept each layer's activation alive to the end of
// the step: GPT-2-medium's arena at --budget=7GB was 10.04 GB, not 6.81).
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-fuse))' | FileCheck %s

// CHECK-LABEL: func.func @f
// CHECK:      %[[FIRST:.*]]:2 = memwall.fusion elementwise(%arg0, %arg1)
// CHECK:      memwall.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[VIEW:.*]] = memwall.reshape %[[FIRST]]#0 [16384]
// CHECK-NEXT: memwall.softmax %[[VIEW]]
// CHECK-NEXT: memwall.fusion elementwise(%arg2)
// CHECK:      memwall.relu
// CHECK-NEXT: memwall.tanh
func.func @f(%x: tensor<64x256xf32>, %y: tensor<64x256xf32>, %z: tensor<32x32xf32>) -> (tensor<64x256xf32>, tensor<16384xf32>, tensor<32x32xf32>) {
  %a = memwall.gelu %x : tensor<64x256xf32>
  %v = memwall.reshape %a [16384] : tensor<64x256xf32> -> tensor<16384xf32>
  %s = memwall.softmax %v axis -1 : tensor<16384xf32>
  %c = memwall.relu %z : tensor<32x32xf32>
  %b = memwall.add %a, %y : tensor<64x256xf32>, tensor<64x256xf32> -> tensor<64x256xf32>
  %d = memwall.tanh %c : tensor<32x32xf32>
  return %b, %s, %d : tensor<64x256xf32>, tensor<16384xf32>, tensor<32x32xf32>
}
