// memwall-configure-kernels attaches what the cost model and the planners
// chose to every op that becomes a step, naming the steps in order.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-configure-kernels))' | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK: memwall.matmul {{.*}}memwall.kernel_config = #memwall.kernel_config<family = gemm, name = "gemm0", predictedSeconds = {{.*}}, gemm = <m = 64, n = 128, k = 128, batch = 1, strideA = 0, strideB = 0, strideC = 0, strideD = 0, transA = false, transB = false, epilogue = "none">>
// CHECK: memwall.gelu {{.*}}#memwall.kernel_config<family = elementwise, name = "kernel1_elementwise", grid = [4, 1, 1], block = [256, 1, 1], predictedSeconds =
// CHECK: memwall.softmax {{.*}}#memwall.kernel_config<family = row_reduction, name = "kernel2_reduction", grid = [64, 1, 1], block = [16, 1, 1], predictedSeconds =
// A reshape is a view: no step, so the next kernel is number 3.
// CHECK: memwall.reshape {{.*}}#memwall.kernel_config<family = view, name = "">
// A 2-D transpose goes through shared-memory tiles of 64 x 64 f16: 2 x 1.
// CHECK: memwall.transpose {{.*}}#memwall.kernel_config<family = layout, name = "kernel3_transpose", grid = [2, 1, 1], block = [256, 1, 1], predictedSeconds =
func.func @main(%x: tensor<64x128xf16>, %w: tensor<128x128xf16>) -> tensor<64x128xf16> {
  %0 = memwall.matmul %x, %w : tensor<64x128xf16>, tensor<128x128xf16> -> tensor<64x128xf16>
  %1 = memwall.gelu %0 : tensor<64x128xf16>
  %2 = memwall.softmax %1 {axis = -1 : i64} : tensor<64x128xf16>
  %3 = memwall.reshape %2 [128, 64] : tensor<64x128xf16> -> tensor<128x64xf16>
  %4 = memwall.transpose %3 [1, 0] : tensor<128x64xf16> -> tensor<64x128xf16>
  return %4 : tensor<64x128xf16>
}
