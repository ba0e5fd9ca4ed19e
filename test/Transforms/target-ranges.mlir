// Target-file rates and sizes outside physical ranges are refused naming the
// field: a bf16 peak of 1e-308 FLOP/s made every bf16 kernel take inf
// seconds (and the remat MILP abort on NaN coefficients), a bandwidth of
// 5e-324 B/s wrote a report with bare `inf` (not JSON), and a capacity past
// int64 compared as negative.
// RUN: not memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/denormal-peak.json 2>&1 | FileCheck %s --check-prefix=PEAK
// RUN: not memwall-opt %s --fuse --budget=1MB --report=%t.json --target-file=%S/Inputs/denormal-peak.json 2>&1 | FileCheck %s --check-prefix=PEAK
// RUN: not test -e %t.json
// RUN: not memwall-opt %s --report=%t.json --target-file=%S/Inputs/denormal-bandwidth.json 2>&1 | FileCheck %s --check-prefix=BANDWIDTH
// RUN: not test -e %t.json
// RUN: not memwall-opt %s --report=%t.json --target-file=%S/Inputs/huge-capacity.json 2>&1 | FileCheck %s --check-prefix=CAPACITY
// RUN: not test -e %t.json
// PEAK: error: {{.*}}denormal-peak.json: peak_flops.bf16 (1.00e-308) must be between 1 and 1e+21 FLOP/s (or 0: not supported)
// PEAK-NOT: error
// BANDWIDTH: error: {{.*}}denormal-bandwidth.json: memory_bandwidth_bytes_per_s (4.94e-324) must be between 1 and 1e+21 bytes/s
// BANDWIDTH-NOT: error
// CAPACITY: error: {{.*}}huge-capacity.json: memory_capacity_bytes (4611686018427387904) must be at most 2^60 (1 EiB)
// CAPACITY-NOT: error

// The shipped target files are inside the ranges.
// RUN: memwall-opt %s --memwall-annotate-costs --target-file=%memwall_src/examples/targets/custom-gpu.json -o /dev/null
// RUN: memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/h200-calibration.json -o /dev/null
// RUN: memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/half-bandwidth.json -o /dev/null

func.func @mlp(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>) -> tensor<4x8xbf16> {
  %0 = memwall.matmul %x, %w : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}
