// memwall-convert-to-gpu: one pattern per kernel family builds the kernels
// into gpu.module @kernels and turns each configured op into steps on
// buffers; tensors become memrefs.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-configure-kernels),memwall-convert-to-gpu)' | FileCheck %s

// CHECK: module attributes {gpu.container_module, memwall.kernels_source = "gpu.module @kernels [#nvvm.target<O = 3, chip = \22sm_90a\22, features = \22+ptx80\22>] {
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:.*]]: memref<64x128xf16> {memwall.kind = #memwall.arg_kind<input>}, %[[W:.*]]: memref<128x128xf16>
// CHECK-SAME: -> memref<64x128xf16>
// CHECK: %[[MM:.*]] = memref.alloc() {memwall.buffer = "mm"} : memref<64x128xf16>
// CHECK: memwall.gemm "gemm0" a(%[[X]] : memref<64x128xf16>) b(%[[W]] : memref<128x128xf16>) d(%[[MM]] : memref<64x128xf16>) <m = 64, n = 128, k = 128, {{.*}}> {ops = ["mm"], predicted_seconds =
// CHECK: %[[ACT:.*]] = memref.alloc() {memwall.buffer = "act"} : memref<64x128xf16>
// CHECK: memwall.launch @kernels::@kernel1_elementwise(%[[MM]], %[[ACT]]) grid [4, 1, 1] block [256, 1, 1] shared 0 {ops = ["act"], predicted_seconds =
// CHECK: %[[SM:.*]] = memref.alloc() {memwall.buffer = "sm"}
// CHECK: memwall.launch @kernels::@kernel2_reduction(%[[ACT]], %[[SM]]) grid [64, 1, 1] block [16, 1, 1]
// CHECK: %[[VIEW:.*]] = memwall.view %[[SM]] {memwall.buffer = "view"} : memref<64x128xf16> to memref<128x64xf16>
// CHECK: %[[T:.*]] = memref.alloc() {memwall.buffer = "t"}
// CHECK: memwall.launch @kernels::@kernel3_transpose(%[[VIEW]], %[[T]])
// CHECK: return %[[T]] : memref<64x128xf16>
// CHECK: gpu.module @kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">]
// CHECK: gpu.func @kernel1_elementwise(%{{.*}}: memref<8192xf16> {llvm.noalias}, %{{.*}}: memref<8192xf16> {llvm.noalias}) kernel
// CHECK: gpu.func @kernel2_reduction(
// CHECK: gpu.func @kernel3_transpose(
func.func @main(%x: tensor<64x128xf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"), %w: tensor<128x128xf16> {memwall.kind = #memwall.arg_kind<weight>} loc("w")) -> tensor<64x128xf16> {
  %0 = memwall.matmul %x, %w : tensor<64x128xf16>, tensor<128x128xf16> -> tensor<64x128xf16> loc("mm")
  %1 = memwall.gelu %0 : tensor<64x128xf16> loc("act")
  %2 = memwall.softmax %1 {axis = -1 : i64} : tensor<64x128xf16> loc("sm")
  %3 = memwall.reshape %2 [128, 64] : tensor<64x128xf16> -> tensor<128x64xf16> loc("view")
  %4 = memwall.transpose %3 [1, 0] : tensor<128x64xf16> -> tensor<64x128xf16> loc("t")
  return %4 : tensor<64x128xf16>
}
