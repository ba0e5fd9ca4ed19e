// RUN: memwall-opt %s | memwall-opt | FileCheck %s
// RUN: memwall-opt %s --mlir-print-op-generic | memwall-opt | FileCheck %s
// RUN: memwall-opt %s | memwall-opt | memwall-opt --mlir-print-op-generic | memwall-opt | FileCheck %s

// #memwall.cost reads integers or floats, prints every float with a '.' (so
// it reads back as a float) at four significant digits, and survives the
// generic form.

#free = #memwall.cost<flops = 0, bytes_read = 0, bytes_written = 0, intensity = 0, bound = memory, time_s = 0>

// CHECK-LABEL: func.func @annotated
func.func @annotated(%a: tensor<4xf32>) {
  // CHECK: #memwall.cost<flops = 4, bytes_read = 16, bytes_written = 16, intensity = 0.125, bound = memory, time_s = 2.0e-06>
  %0 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 4, bytes_read = 16, bytes_written = 16, intensity = 0.125, bound = memory, time_s = 2.0e-06>} : tensor<4xf32>
  // Integers where floats go print as floats.
  // CHECK: #memwall.cost<flops = 9000000000000, bytes_read = 1, bytes_written = 1, intensity = 4.5e+12, bound = compute, time_s = 9.0>
  %1 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 9000000000000, bytes_read = 1, bytes_written = 1, intensity = 4500000000000, bound = compute, time_s = 9>} : tensor<4xf32>
  // All zero, through an alias: zero prints as 0.0.
  // CHECK: #memwall.cost<flops = 0, bytes_read = 0, bytes_written = 0, intensity = 0.0, bound = memory, time_s = 0.0>
  %2 = memwall.relu %a {memwall.cost = #free} : tensor<4xf32>
  // The largest int64 counts survive; a quoted bound reads like the keyword.
  // CHECK: #memwall.cost<flops = 9223372036854775807, bytes_read = 9223372036854775807, bytes_written = 0, intensity = 8.0, bound = compute, time_s = 1.0e-07>
  %3 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 9223372036854775807, bytes_read = 9223372036854775807, bytes_written = 0, intensity = 8.0e0, bound = "compute", time_s = 1.0e-07>} : tensor<4xf32>
  // Four significant digits: 279.26374 -> 279.3, 4.58393e-06 -> 4.584e-06,
  // 123456 -> 1.235e+05; an exponent without a fraction gets ".0" (1.0e+20).
  // CHECK: #memwall.cost<flops = 2417491968, bytes_read = 5511168, bytes_written = 3145728, intensity = 279.3, bound = memory, time_s = 4.584e-06>
  %4 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 2417491968, bytes_read = 5511168, bytes_written = 3145728, intensity = 279.26374, bound = memory, time_s = 4.58393e-06>} : tensor<4xf32>
  // CHECK: #memwall.cost<flops = 1, bytes_read = 1, bytes_written = 1, intensity = 1.235e+05, bound = memory, time_s = 1.0e+20>
  %5 = memwall.relu %a {memwall.cost = #memwall.cost<flops = 1, bytes_read = 1, bytes_written = 1, intensity = 123456, bound = memory, time_s = 1.0e+20>} : tensor<4xf32>
  // The attribute is verified on any op, not only memwall ones.
  // CHECK: return {memwall.cost = #memwall.cost<flops = 1, bytes_read = 2, bytes_written = 3, intensity = 0.5, bound = memory, time_s = 3.0>}
  func.return {memwall.cost = #memwall.cost<flops = 1, bytes_read = 2, bytes_written = 3, intensity = 0.5, bound = memory, time_s = 3>}
}
