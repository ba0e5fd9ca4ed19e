// RUN: memwall-opt %s | FileCheck %s
// RUN: memwall-opt %s | memwall-opt | FileCheck %s
// RUN: memwall-opt %s --mlir-print-op-generic | memwall-opt | FileCheck %s

// #memwall.target holds every figure of the target under the target file's
// keys (docs/targets.md), in a fixed order; a built-in target may be written
// by its name alone. Figures without a short decimal form print in full so
// that they read back bit-identical (graph_kernel_launch_s below). The L4
// (sm_89) assumes its generated GEMM reaches 0.9 of cuBLAS's fractions.

// CHECK: module attributes {memwall.target = #memwall.target<"l4", description = "NVIDIA L4 24GB", sm_arch = "sm_89", launch_mode = stream,
// CHECK-SAME: peak_flops = {fp32 = 3.030000e+13, tf32 = 6.000000e+13, bf16 = 1.210000e+14, fp16 = 1.210000e+14, fp8 = 2.425000e+14, int8 = 2.425000e+14},
// CHECK-SAME: memory_bandwidth_bytes_per_s = 3.000000e+11, memory_capacity_bytes = 25769803776, l2_bytes = 50331648, shared_memory_per_sm_bytes = 102400, sm_count = 58,
// CHECK-SAME: kernel_launch_s = 2.000000e-06, graph_kernel_launch_s = 9.9999999999999995E-7,
// CHECK-SAME: achievable = {memory_bandwidth_bytes_per_s = 269552238805.97012, gemm_efficiency = {large = 0.77521730341621187, small = 5.000000e-01, skinny = 2.500000e-01}, generated_gemm_efficiency = {large = 0.69769557307459074, small = 4.500000e-01, skinny = 2.250000e-01}, attention_efficiency = 0.35981402870426521},
// CHECK-SAME: interconnect = {nvlink_bytes_per_s = 0.000000e+00, pcie_bytes_per_s = 3.200000e+10, network_bytes_per_s = 2.500000e+10, gpus_per_node = 8},
// CHECK-SAME: calibration = "", base = "">}
module attributes {memwall.target = #memwall.target<"l4">} {
  // A target written out in full (a calibration of an H100) keeps every
  // figure, provenance included.
  // CHECK: func.func @calibrated() attributes {memwall.target = #memwall.target<"h100-lab", description = "lab H100", sm_arch = "sm_90a", launch_mode = graph,
  // CHECK-SAME: peak_flops = {fp32 = 6.690000e+13, tf32 = 4.947000e+14, bf16 = 9.894000e+14, fp16 = 9.894000e+14, fp8 = 1.978900e+15, int8 = 1.978900e+15},
  // CHECK-SAME: memory_bandwidth_bytes_per_s = 3.350000e+12, memory_capacity_bytes = 85899345920, l2_bytes = 52428800, shared_memory_per_sm_bytes = 233472, sm_count = 132,
  // CHECK-SAME: kernel_launch_s = 2.500000e-06, graph_kernel_launch_s = 0.33333333333333331,
  // CHECK-SAME: achievable = {memory_bandwidth_bytes_per_s = 2.900000e+12, gemm_efficiency = {large = 0.69999999999999996, small = 5.000000e-01, skinny = 2.500000e-01}, generated_gemm_efficiency = {large = 6.000000e-01, small = 4.000000e-01, skinny = 2.500000e-01}, attention_efficiency = 4.000000e-01},
  // CHECK-SAME: interconnect = {nvlink_bytes_per_s = 4.500000e+11, pcie_bytes_per_s = 6.400000e+10, network_bytes_per_s = 5.000000e+10, gpus_per_node = 8},
  // CHECK-SAME: calibration = "copy and GEMM microbenchmarks", base = "h100-sxm">}
  func.func @calibrated() attributes {memwall.target = #memwall.target<"h100-lab",
      description = "lab H100", sm_arch = "sm_90a", launch_mode = graph,
      peak_flops = {fp32 = 6.69e13, tf32 = 4.947e14, bf16 = 9.894e14,
                    fp16 = 9.894e14, fp8 = 1.9789e15, int8 = 1.9789e15},
      memory_bandwidth_bytes_per_s = 3.35e12,
      memory_capacity_bytes = 85899345920, l2_bytes = 52428800,
      shared_memory_per_sm_bytes = 233472, sm_count = 132,
      kernel_launch_s = 2.5e-6, graph_kernel_launch_s = 0.33333333333333331,
      achievable = {memory_bandwidth_bytes_per_s = 2.9e12,
                    gemm_efficiency = {large = 0.7, small = 0.5, skinny = 0.25},
                    generated_gemm_efficiency = {large = 0.6, small = 0.4,
                                                 skinny = 0.25},
                    attention_efficiency = 0.4},
      interconnect = {nvlink_bytes_per_s = 4.5e11, pcie_bytes_per_s = 6.4e10,
                      network_bytes_per_s = 5.0e10, gpus_per_node = 8},
      calibration = "copy and GEMM microbenchmarks", base = "h100-sxm">} {
    return
  }
}
