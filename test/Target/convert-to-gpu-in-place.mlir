// In a training step's backward, an elementwise kernel writes its result
// over an operand that dies at it (docs/memory.md, "In place"): the result
// is a view of that operand's buffer, and the kernel's two parameters that
// alias are not noalias (the others stay so). A forward kernel keeps a new
// buffer, and so does one whose operand is read again.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-configure-kernels),memwall-convert-to-gpu)' | FileCheck %s

// CHECK-LABEL: func.func @main(
// CHECK: %[[DY:.*]] = memref.alloc() {memwall.buffer = "dy"} : memref<64x128xbf16>
// CHECK: memwall.gemm "gemm0" {{.*}} d(%[[DY]] : memref<64x128xbf16>)
// CHECK: %[[DX:.*]] = memwall.view %[[DY]] {memwall.buffer = "dx"} : memref<64x128xbf16> to memref<64x128xbf16>
// CHECK: memwall.launch @kernels::@kernel1_elementwise(%[[H:.*]], %[[DY]], %[[DX]])
// CHECK: %[[G:.*]] = memref.alloc() {memwall.buffer = "g"} : memref<64x128xbf16>
// CHECK: memwall.launch @kernels::@kernel2_elementwise(%[[H]], %[[G]])
// CHECK: %[[S:.*]] = memref.alloc() {memwall.buffer = "s"} : memref<64x128xbf16>
// CHECK: memwall.launch @kernels::@kernel3_elementwise(%[[DX]], %[[S]])
// CHECK: gpu.func @kernel1_elementwise(%{{.*}}: memref<8192xbf16> {llvm.noalias}, %{{.*}}: memref<8192xbf16>, %{{.*}}: memref<8192xbf16>) kernel
// CHECK: gpu.func @kernel2_elementwise(%{{.*}}: memref<8192xbf16> {llvm.noalias}, %{{.*}}: memref<8192xbf16> {llvm.noalias}) kernel
func.func @main(%h: tensor<64x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("h"),
                %g: tensor<64x128xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("gy"),
                %w: tensor<128x128xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("w"))
    -> (tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<64x128xbf16>) {
  %dy = memwall.matmul %g, %w {memwall.phase = "backward"} : tensor<64x128xbf16>, tensor<128x128xbf16> -> tensor<64x128xbf16> loc("dy")
  %dx = memwall.activation_grad gelu_tanh %h, %dy {memwall.phase = "backward"} : tensor<64x128xbf16> loc("dx")
  %y = memwall.gelu %h tanh : tensor<64x128xbf16> loc("g")
  %s = memwall.scale %dx by 2.0 {memwall.phase = "backward"} : tensor<64x128xbf16> loc("s")
  return %dx, %y, %s : tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<64x128xbf16>
}
