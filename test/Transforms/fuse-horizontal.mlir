// memwall-fuse-horizontal (run by --fuse) runs AdamW updates shorter than
// their launch as one multi-tensor launch (docs/fusion.md, "Multi-tensor
// AdamW"): a group grows in program order while one launch's 4 KiB of
// parameters hold its buffers and the gradients it carries to its last
// update keep the peak.
// RUN: memwall-opt %s --split-input-file --fuse --target=h100-sxm | FileCheck %s
// RUN: memwall-opt %s --split-input-file --pass-pipeline='builtin.module(memwall-set-target{target=h100-sxm},func.func(memwall-fuse-horizontal))' | FileCheck %s
// RUN: echo 'module attributes {memwall.target = "h100"} { func.func @f() { return } }' | not memwall-opt --pass-pipeline='builtin.module(func.func(memwall-fuse-horizontal))' 2>&1 | FileCheck %s --check-prefix=BAD-TARGET
// RUN: %PYTHON %S/Inputs/adamw_updates.py 105 | memwall-opt --fuse --target=h100-sxm | FileCheck %s --check-prefix=LIMIT

// The bias's and the norm's updates (2 KB and 16 KB of gradient) move far
// less than the 2 us launch; the 4096 x 4096 weight's (470 MB) does not
// and stays where it is. The group runs at its last update's step.
// CHECK-LABEL: func.func @small_updates_share_a_launch
// CHECK: memwall.adamw %arg5,
// CHECK-NEXT: %[[FUSED:.*]]:7 = memwall.fusion horizontal
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memwall.adamw
// CHECK-NEXT: memwall.adamw
// CHECK-NEXT: memwall.yield
// CHECK: return
func.func @small_updates_share_a_launch(
    %bias: tensor<1024xbf16> {memwall.kind = #memwall.arg_kind<weight>},
    %bias_grad: tensor<1024xbf16>,
    %bias_m: tensor<1024xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>},
    %bias_v: tensor<1024xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>},
    %bias_w: tensor<1024xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>},
    %big: tensor<4096x4096xf32> {memwall.kind = #memwall.arg_kind<weight>},
    %big_grad: tensor<4096x4096xf32>,
    %big_m: tensor<4096x4096xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>},
    %big_v: tensor<4096x4096xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>},
    %norm: tensor<4096xf32> {memwall.kind = #memwall.arg_kind<weight>},
    %norm_grad: tensor<4096xf32>,
    %norm_m: tensor<4096xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>},
    %norm_v: tensor<4096xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>})
    -> (tensor<1024xbf16>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>,
        tensor<4096x4096xf32>, tensor<4096x4096xf32>, tensor<4096x4096xf32>,
        tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>) {
  %b:4 = memwall.adamw %bias, %bias_grad, %bias_m, %bias_v master %bias_w lr 1.0e-03
      : (tensor<1024xbf16>, tensor<1024xbf16>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>)
      -> (tensor<1024xbf16>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>)
  %w:3 = memwall.adamw %big, %big_grad, %big_m, %big_v lr 1.0e-03
      : (tensor<4096x4096xf32>, tensor<4096x4096xf32>, tensor<4096x4096xf32>, tensor<4096x4096xf32>)
      -> (tensor<4096x4096xf32>, tensor<4096x4096xf32>, tensor<4096x4096xf32>)
  %n:3 = memwall.adamw %norm, %norm_grad, %norm_m, %norm_v lr 1.0e-03
      : (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>)
      -> (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>)
  return %b#0, %b#1, %b#2, %b#3, %w#0, %w#1, %w#2, %n#0, %n#1, %n#2
      : tensor<1024xbf16>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>,
        tensor<4096x4096xf32>, tensor<4096x4096xf32>, tensor<4096x4096xf32>,
        tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>
}

// -----

// The first update's gradient is made in the step and dies at its update;
// carried to the second, it would live across the softmax, the peak (x and
// its softmax), and raise it: the updates stay apart.
// CHECK-LABEL: func.func @no_gradient_carried_across_the_peak
// CHECK-NOT: memwall.fusion horizontal
// CHECK: memwall.adamw
// CHECK: memwall.softmax
// CHECK: memwall.adamw
// CHECK-NOT: memwall.fusion horizontal
// CHECK: return
func.func @no_gradient_carried_across_the_peak(
    %a: tensor<4096xf32>, %c: tensor<4096xf32>,
    %p: tensor<4096xf32> {memwall.kind = #memwall.arg_kind<weight>},
    %m: tensor<4096xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>},
    %v: tensor<4096xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>},
    %x: tensor<4096x4096xf32>,
    %q: tensor<4096xf32> {memwall.kind = #memwall.arg_kind<weight>},
    %q_grad: tensor<4096xf32>,
    %n: tensor<4096xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>},
    %u: tensor<4096xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>})
    -> (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096x4096xf32>,
        tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>) {
  %g = memwall.mul %a, %c : tensor<4096xf32>, tensor<4096xf32> -> tensor<4096xf32>
  %first:3 = memwall.adamw %p, %g, %m, %v lr 1.0e-03
      : (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>)
      -> (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>)
  %y = memwall.softmax %x {axis = -1 : i64} : tensor<4096x4096xf32>
  %second:3 = memwall.adamw %q, %q_grad, %n, %u lr 1.0e-03
      : (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>)
      -> (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>)
  return %first#0, %first#1, %first#2, %y, %second#0, %second#1, %second#2
      : tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096x4096xf32>,
        tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>
}

// -----

// The first update's result is read before the second update: run at the
// second, the group would come after that reader.
// CHECK-LABEL: func.func @result_read_in_between
// CHECK-NOT: memwall.fusion horizontal
// CHECK: memwall.adamw
// CHECK: memwall.mul
// CHECK: memwall.adamw
// CHECK-NOT: memwall.fusion horizontal
// CHECK: return
func.func @result_read_in_between(
    %p: tensor<64xf32> {memwall.kind = #memwall.arg_kind<weight>},
    %g: tensor<64xf32>,
    %m: tensor<64xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>},
    %v: tensor<64xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>},
    %q: tensor<64xf32> {memwall.kind = #memwall.arg_kind<weight>},
    %h: tensor<64xf32>,
    %n: tensor<64xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>},
    %u: tensor<64xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>})
    -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>,
        tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %first:3 = memwall.adamw %p, %g, %m, %v lr 1.0e-03
      : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
      -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
  %read = memwall.mul %first#0, %g : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %second:3 = memwall.adamw %q, %h, %n, %u lr 1.0e-03
      : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
      -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
  return %first#1, %first#2, %read, %second#0, %second#1, %second#2, %first#0
      : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>,
        tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// 105 updates of five buffers each: 102 fill one launch's 4096 bytes of
// pointers (4080), the other 3 start a second.
// LIMIT: memwall.fusion horizontal
// LIMIT-NEXT: ^bb0
// LIMIT-COUNT-102: memwall.adamw
// LIMIT-NEXT: memwall.yield
// LIMIT: memwall.fusion horizontal
// LIMIT-NEXT: ^bb0
// LIMIT-COUNT-3: memwall.adamw
// LIMIT-NEXT: memwall.yield
// LIMIT-NOT: memwall.adamw
// LIMIT: return

// BAD-TARGET: error: 'memwall.target' must be a #memwall.target attribute
