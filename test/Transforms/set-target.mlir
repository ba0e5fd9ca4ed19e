// memwall-set-target attaches the whole target to the module.
// RUN: memwall-opt %s --memwall-set-target | FileCheck %s --check-prefix=DEFAULT
// RUN: memwall-opt %s --memwall-set-target=target=a100-80gb | FileCheck %s --check-prefix=NAMED
// RUN: memwall-opt %s --memwall-set-target="target=a100-80gb launch=graph" | FileCheck %s --check-prefix=GRAPH
// RUN: memwall-opt %s --memwall-set-target=target-file=%S/Inputs/h200-calibration.json | FileCheck %s --check-prefix=FILE
// A calibration file may be named with the target it calibrates.
// RUN: memwall-opt %s --memwall-set-target="target=h200 target-file=%S/Inputs/h200-calibration.json" | FileCheck %s --check-prefix=FILE

// Without options the module keeps its target; options replace it.
// RUN: memwall-opt %s --memwall-set-target=target=l4 | memwall-opt --memwall-set-target | FileCheck %s --check-prefix=KEPT
// RUN: memwall-opt %s --memwall-set-target=target=l4 | memwall-opt --memwall-set-target=launch=graph | FileCheck %s --check-prefix=KEPT-GRAPH
// RUN: memwall-opt %s --memwall-set-target=target=l4 | memwall-opt --memwall-set-target=target=b200 | FileCheck %s --check-prefix=REPLACED

// DEFAULT: module attributes {memwall.target = #memwall.target<"h100-sxm", description = "NVIDIA H100 SXM5 80GB", sm_arch = "sm_90a", launch_mode = stream,
// DEFAULT-SAME: memory_bandwidth_bytes_per_s = 3.350000e+12,
// DEFAULT-SAME: calibration = "", base = "">}
// NAMED: #memwall.target<"a100-80gb", description = "NVIDIA A100 SXM4 80GB", sm_arch = "sm_80", launch_mode = stream,
// GRAPH: #memwall.target<"a100-80gb", description = "NVIDIA A100 SXM4 80GB", sm_arch = "sm_80", launch_mode = graph,
// FILE: #memwall.target<"h200-measured", description = "NVIDIA H200 SXM 141GB", sm_arch = "sm_90a", launch_mode = stream,
// FILE-SAME: achievable = {memory_bandwidth_bytes_per_s = 4.300000e+12,
// FILE-SAME: base = "h200">}
// KEPT: #memwall.target<"l4", {{.*}}launch_mode = stream,
// KEPT-GRAPH: #memwall.target<"l4", {{.*}}launch_mode = graph,
// REPLACED: #memwall.target<"b200",
// CHECK-NOT: memwall.target

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
