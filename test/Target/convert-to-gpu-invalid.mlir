// A configuration must be a #memwall.kernel_config, and name the family the
// op's pattern lowers.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-convert-to-gpu)' -split-input-file -verify-diagnostics

func.func @not_a_config(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'memwall.kernel_config' must be a #memwall.kernel_config attribute}}
  %0 = memwall.gelu %x {memwall.kernel_config = 3 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @wrong_family(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{failed to legalize operation 'memwall.transpose'}}
  %0 = memwall.transpose %x [1, 0] {memwall.kernel_config = #memwall.kernel_config<family = gemm, name = "gemm0">} : tensor<4x8xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
