// RUN: not memwall-opt %s --memwall-annotate-costs --target=h100 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not memwall-opt %s --memwall-set-target=target=h100 --memwall-annotate-costs 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/bad-syntax.json 2>&1 | FileCheck %s --check-prefix=SYNTAX
// RUN: not memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/missing.json 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not memwall-opt %s --memwall-annotate-costs --target=a100-40gb --target-file=%S/Inputs/half-bandwidth.json 2>&1 | FileCheck %s --check-prefix=CONTRADICT
// Calibration files and rates: one error naming the field.
// RUN: not memwall-opt %s --memwall-annotate-costs --target=h100-sxm --target-file=%S/Inputs/h200-calibration.json 2>&1 | FileCheck %s --check-prefix=OTHER-GPU
// RUN: memwall-opt %s --memwall-annotate-costs --target=h200 --target-file=%S/Inputs/h200-calibration.json | FileCheck %s --check-prefix=CALIBRATED
// RUN: not memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/zero-l2.json 2>&1 | FileCheck %s --check-prefix=ZERO-L2
// RUN: not memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/rate-above-peak.json 2>&1 | FileCheck %s --check-prefix=ABOVE
// RUN: not memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/zero-efficiency.json 2>&1 | FileCheck %s --check-prefix=ZERO-EFF
// OTHER-GPU: error: --target=h100-sxm contradicts '{{.*}}h200-calibration.json': its "base" is 'h200' (a calibration file for another GPU)
// OTHER-GPU-NOT: func.func
// CALIBRATED: memwall.relu {{.*}}memwall.cost
// ZERO-L2: error: {{.*}}zero-l2.json: l2_bytes must be positive
// ABOVE: error: {{.*}}rate-above-peak.json: achievable.memory_bandwidth_bytes_per_s (4.30e+12) exceeds the datasheet memory_bandwidth_bytes_per_s (3.35e+12); is the figure for another GPU?
// ZERO-EFF: error: {{.*}}zero-efficiency.json: "achievable.gemm_efficiency.large" must be a positive number

// UNKNOWN: error: unknown target 'h100'; valid targets: a100-40gb, a100-80gb, h100-sxm, h100-pcie, h200, b200, l4, rtx-4090
// UNKNOWN-NOT: error
// SYNTAX: error: {{.*}}bad-syntax.json:3:2: Expected , or } after object property
// MISSING: error: cannot read target file '{{.*}}missing.json': No such file or directory
// CONTRADICT: error: --target=a100-40gb contradicts '{{.*}}half-bandwidth.json': its "base" is 'h100-sxm' (a calibration file for another GPU)

func.func @f(%r: tensor<4xf32>) {
  %0 = memwall.relu %r : tensor<4xf32>
  return
}
