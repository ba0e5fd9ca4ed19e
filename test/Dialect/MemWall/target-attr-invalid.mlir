// RUN: memwall-opt %s -split-input-file -verify-diagnostics

// A #memwall.target that is not a whole, valid target is refused when it is
// read, with one error naming what is wrong.

// expected-error @below {{'h900' is not a built-in target; give its figures}}
module attributes {memwall.target = #memwall.target<"h900">} {}

// -----

// expected-error @below {{'memwall.target' must be a #memwall.target attribute}}
module attributes {memwall.target = "h100-sxm"} {}

// -----

// Figures come in the printed order; a missing one is a parse error.
// expected-error @below {{expected 'sm_arch'}}
module attributes {memwall.target = #memwall.target<"x", description = "", launch_mode = stream>} {}

// -----

module attributes {memwall.target = #memwall.target<"x", description = "", sm_arch = "sm_90",
    // expected-error @below {{launch_mode must be stream or graph}}
    launch_mode = eager>} {}

// -----

// The figures are checked as a target file's are (docs/targets.md).
// expected-error @below {{invalid target 'x': achievable.memory_bandwidth_bytes_per_s (4.00e+12) exceeds the datasheet memory_bandwidth_bytes_per_s (3.00e+12); is the figure for another GPU?}}
module attributes {memwall.target = #memwall.target<"x", description = "", sm_arch = "sm_90a",
    launch_mode = stream,
    peak_flops = {fp32 = 6.0e13, tf32 = 0.0, bf16 = 9.0e14, fp16 = 9.0e14, fp8 = 0.0, int8 = 0.0},
    memory_bandwidth_bytes_per_s = 3.0e12, memory_capacity_bytes = 85899345920,
    l2_bytes = 52428800, shared_memory_per_sm_bytes = 233472, sm_count = 132,
    kernel_launch_s = 2.0e-06, graph_kernel_launch_s = 1.0e-06,
    achievable = {memory_bandwidth_bytes_per_s = 4.0e12,
                  gemm_efficiency = {large = 0.7, small = 0.5, skinny = 0.25},
                    generated_gemm_efficiency = {large = 0.6, small = 0.4,
                                                 skinny = 0.25},
                  attention_efficiency = 0.4},
    interconnect = {nvlink_bytes_per_s = 0.0, pcie_bytes_per_s = 6.4e10,
                    network_bytes_per_s = 5.0e10, gpus_per_node = 8},
    calibration = "", base = "">} {}
