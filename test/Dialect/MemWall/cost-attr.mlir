// RUN: memwall-opt %s | memwall-opt | FileCheck %s

// #memwall.cost reads integers or floats and prints floats that read back.
// CHECK-LABEL: func.func @annotated
func.func @annotated(%a: tensor<4xf32>) {
  // CHECK: #memwall.cost<flops = 4, bytes_read = 16, bytes_written = 16, intensity = 0.125, bound = memory, time_s = 2.0e-06>
  %0 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 4, bytes_read = 16, bytes_written = 16, intensity = 0.125, bound = memory, time_s = 2.0e-06>} : tensor<4xf32>
  // CHECK: #memwall.cost<flops = 9000000000000, bytes_read = 1, bytes_written = 1, intensity = 4.5e+12, bound = compute, time_s = 9.0>
  %1 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 9000000000000, bytes_read = 1, bytes_written = 1, intensity = 4500000000000, bound = compute, time_s = 9>} : tensor<4xf32>
  return
}
