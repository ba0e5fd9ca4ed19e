// Where many rows make every CTA row of tiles of a weight-only quantized
// GEMM dequantize the whole weight in its main loop, memwall-fuse marks the
// dequantize `materialize`: a dequantize kernel writes the weight once and
// the GEMM reads it as any bf16 weight, on cuBLASLt (bitsandbytes' QLoRA
// layers, vLLM's AWQ above 256 tokens). At decode the prologue stays
// (fuse-dequantize.mlir). Each function in its own run: the report's memory
// section is the first function's.
// RUN: memwall-opt %s --fuse --target=h100-sxm | FileCheck %s
// RUN: memwall-opt %s --fuse --target=h100-sxm --report=- -o /dev/null | FileCheck %s --check-prefix=REPORT
// RUN: memwall-opt %s --target=h100-sxm --report=- -o /dev/null | FileCheck %s --check-prefix=PROLOGUE
// RUN: memwall-opt %s --fuse --target=h100-sxm --dequantize=prologue | FileCheck %s --check-prefix=PROLOGUE-FORCED
// RUN: memwall-opt %s --fuse --target=h100-sxm --dequantize=kernel | FileCheck %s --check-prefix=KERNEL-FORCED
// RUN: not memwall-opt %s --fuse --dequantize=sometimes 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-fuse{dequantize=never}))' 2>&1 | FileCheck %s --check-prefix=BAD-PASS
// RUN: memwall-opt %s --fuse --target=h100-sxm --report=%t.json -o /dev/null
// RUN: %PYTHON %memwall_src/test/tools/memwall-opt/check_report.py %t.json
// RUN: FileCheck %s --check-prefix=JSON < %t.json

// QLoRA's q projection in a training step (2048 rows): the forward GEMM and
// the input gradient's (rhs transposed) each get their own copy of the NF4
// weight's two dequantizes, placed just before them, and each copy is a
// dequantize kernel (the codes, absmax and their scales read, 42.21 MB;
// 20.93 us) before a cuBLASLt GEMM (91.68 us), against 506.1 us for the
// GEMM dequantizing in its main loop with the tiling it would run (the
// unfused report's 424.41 us assumes 128-row tiles). A bf16 weight lives
// only from its kernel to its GEMM (peak 92.54 MB: the weight and the
// GEMM's operands), never from the forward to the backward.
// CHECK-LABEL: func.func @nf4_forward_and_input_gradient
// CHECK-NEXT: %[[W:.*]] = memwall.fusion dequantize(%arg3, %arg4, %arg2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memwall.dequantize
// CHECK-NOT: materialize
// CHECK-SAME: -> tensor<64x4096xf32>
// CHECK-NEXT: memwall.dequantize {{.*}}codebook{{.*}}materialize
// CHECK: memwall.matmul %arg0, %[[W]] :
// CHECK-NEXT: %[[G:.*]] = memwall.gelu %arg1
// CHECK-NEXT: %[[T:.*]] = memwall.fusion dequantize(%arg3, %arg4, %arg2)
// CHECK: memwall.matmul %[[G]], %[[T]] {transpose_rhs}
// REPORT: 0 fusion {{.*}}q.weight.dequantized {{.*}} 42.21 MB {{.*}} 20.93 us
// REPORT-NEXT: 1 matmul {{ *}}q {{.*}} 91.68 us
// REPORT-NEXT: 2 gelu
// REPORT-NEXT: 3 fusion {{.*}}q.weight.dequantized {{.*}} 42.21 MB {{.*}} 20.93 us
// REPORT-NEXT: 4 matmul {{ *}}q.grad {{.*}} 91.68 us
// PROLOGUE: matmul {{ *}}q {{.*}} 42.21 MB {{.*}} 424.41 us
func.func @nf4_forward_and_input_gradient(%x: tensor<2048x4096xbf16>, %dy: tensor<2048x4096xbf16>,
    %q: tensor<4096x4096xi4>, %a8: tensor<64x4096xi8>, %a32: tensor<1x16xf32>) -> (tensor<2048x4096xbf16>, tensor<2048x4096xbf16>) {
  %a = memwall.dequantize %a8, %a32 : tensor<64x4096xi8>, tensor<1x16xf32> -> tensor<64x4096xf32> loc("q.weight.absmax.dequantized")
  %w = memwall.dequantize %q, %a {codebook = array<f32: -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0>} : tensor<4096x4096xi4>, tensor<64x4096xf32> -> tensor<4096x4096xbf16> loc("q.weight.dequantized")
  %y = memwall.matmul %x, %w : tensor<2048x4096xbf16>, tensor<4096x4096xbf16> -> tensor<2048x4096xbf16> loc("q")
  %g = memwall.gelu %dy : tensor<2048x4096xbf16> loc("act.grad")
  %dx = memwall.matmul %g, %w {transpose_rhs} : tensor<2048x4096xbf16>, tensor<4096x4096xbf16> -> tensor<2048x4096xbf16> loc("q.grad")
  return %y, %dx : tensor<2048x4096xbf16>, tensor<2048x4096xbf16>
}

// Llama-2-7B's up projection at prefill (4096 tokens), int8 per output
// channel: the prologue would dequantize the weight 32 times (1.68 ms
// predicted); a dequantize kernel writes it once (135.29 MB, 47.17 us) and
// cuBLASLt multiplies (483.63 us). SiLU stays apart: in memwall's GEMM the
// product would take 936 us.
// CHECK-LABEL: func.func @w8_up_prefill
// CHECK-NEXT: %[[W:.*]] = memwall.dequantize %arg1, %arg2 {materialize}
// CHECK-NEXT: memwall.matmul %arg0, %[[W]] {transpose_rhs}
// CHECK-NEXT: memwall.silu
// REPORT: 5 dequantize {{ *}}up.weight.dequantized {{.*}} 135.29 MB {{.*}} 47.17 us
// REPORT-NEXT: 6 matmul {{ *}}up {{.*}} 483.63 us
// REPORT: kept apart: up -> act: one kernel (memwall gemm: cuBLASLt cannot run it: 'memwall.silu' is not a cuBLASLt epilogue) predicts 935.8 us
// Each dequantize kernel with why.
// REPORT-NEXT: dequantize kernel: q.weight.absmax.dequantized+q.weight.dequantized -> q: 20.9 us + 91.7 us, against 506.1 us in the GEMM's main loop
// REPORT-NEXT: dequantize kernel: q.weight.absmax.dequantized+q.weight.dequantized -> q.grad: 20.9 us + 91.7 us, against 506.1 us in the GEMM's main loop
// REPORT-NEXT: dequantize kernel: up.weight.dequantized -> up: 47.2 us + 483.6 us, against 1676.5 us in the GEMM's main loop
// JSON: "dequantize_kernels": [
// JSON-NEXT: {
// JSON-NEXT: "producer": "q.weight.absmax.dequantized+q.weight.dequantized",
// JSON-NEXT: "consumer": "q",
// JSON-NEXT: "reason": "20.9 us + 91.7 us, against 506.1 us in the GEMM's main loop"
// REPORT-NEXT: dequantize kernel: k.weight.dequantized -> k: 18.8 us + 13.2 us, against the GEMM's main loop, which cannot run it: neither cuBLASLt (cuBLASLt does not dequantize weights in its main loop) nor the generated GEMM (the generated GEMM: needs K a multiple of 16 for 1-byte weights, got 4104) runs it
// The first function's peak (above).
// REPORT: peak 92.54 MB
// PROLOGUE: matmul {{ *}}up {{.*}} 1.68 ms
func.func @w8_up_prefill(%x: tensor<4096x4096xbf16>, %q: tensor<11008x4096xi8>,
                         %s: tensor<11008x1xbf16>) -> tensor<4096x11008xbf16> {
  %w = memwall.dequantize %q, %s : tensor<11008x4096xi8>, tensor<11008x1xbf16> -> tensor<11008x4096xbf16> loc("up.weight.dequantized")
  %y = memwall.matmul %x, %w {transpose_rhs} : tensor<4096x4096xbf16>, tensor<11008x4096xbf16> -> tensor<4096x11008xbf16> loc("up")
  %z = memwall.silu %y : tensor<4096x11008xbf16> loc("act")
  return %z : tensor<4096x11008xbf16>
}

// The same weight at decode (16 tokens) keeps its prologue: one pass over
// the int8 weight in the GEMM beats writing 90 MB of bf16 first.
// CHECK-LABEL: func.func @w8_up_decode
// CHECK-NEXT: memwall.fusion gemm
// CHECK-NEXT: ^bb0
// CHECK-NEXT: memwall.dequantize
// CHECK-NOT: materialize
// CHECK-SAME: -> tensor<11008x4096xbf16>
func.func @w8_up_decode(%x: tensor<16x4096xbf16>, %q: tensor<11008x4096xi8>,
                        %s: tensor<11008x1xbf16>) -> tensor<16x11008xbf16> {
  %w = memwall.dequantize %q, %s : tensor<11008x4096xi8>, tensor<11008x1xbf16> -> tensor<11008x4096xbf16> loc("decode.weight.dequantized")
  %y = memwall.matmul %x, %w {transpose_rhs} : tensor<16x4096xbf16>, tensor<11008x4096xbf16> -> tensor<16x11008xbf16> loc("decode")
  %z = memwall.silu %y : tensor<16x11008xbf16> loc("decode.act")
  return %z : tensor<16x11008xbf16>
}

// A decode GEMM whose main loop cannot dequantize (K = 4104 is not a
// multiple of 16, the 1-byte weights' copy chunk) falls back to a dequantize
// kernel and cuBLASLt, and the report says why.
// CHECK-LABEL: func.func @w8_k_not_16
// CHECK-NEXT: %[[W:.*]] = memwall.dequantize %arg1, %arg2 {materialize}
// CHECK-NEXT: memwall.matmul %arg0, %[[W]] {transpose_rhs}
func.func @w8_k_not_16(%x: tensor<1x4104xbf16>, %q: tensor<4096x4104xi8>,
                       %s: tensor<4096x1xbf16>) -> tensor<1x4096xbf16> {
  %w = memwall.dequantize %q, %s : tensor<4096x4104xi8>, tensor<4096x1xbf16> -> tensor<4096x4104xbf16> loc("k.weight.dequantized")
  %y = memwall.matmul %x, %w {transpose_rhs} : tensor<1x4104xbf16>, tensor<4096x4104xbf16> -> tensor<1x4096xbf16> loc("k")
  return %y : tensor<1x4096xbf16>
}

// --dequantize=prologue keeps every GEMM's main loop dequantizing where it
// can run (all but K = 4104); --dequantize=kernel writes every weight first,
// the decode one too. A bad policy is one error.
// PROLOGUE-FORCED-LABEL: func.func @nf4_forward_and_input_gradient
// PROLOGUE-FORCED-NOT: materialize
// PROLOGUE-FORCED: memwall.fusion gemm
// PROLOGUE-FORCED-LABEL: func.func @w8_up_prefill
// PROLOGUE-FORCED-NOT: materialize
// PROLOGUE-FORCED-LABEL: func.func @w8_up_decode
// PROLOGUE-FORCED-NOT: materialize
// PROLOGUE-FORCED-LABEL: func.func @w8_k_not_16
// PROLOGUE-FORCED-NEXT: memwall.dequantize %arg1, %arg2 {materialize}
// KERNEL-FORCED-LABEL: func.func @w8_up_decode
// KERNEL-FORCED-NEXT: memwall.dequantize %arg1, %arg2 {materialize}
// BAD: error: --dequantize='sometimes' must be auto, prologue or kernel
// BAD-PASS: error: memwall-fuse: dequantize='never' must be auto, prologue or kernel
