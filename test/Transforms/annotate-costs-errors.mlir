// RUN: not memwall-opt %s --memwall-annotate-costs --target=h100 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not memwall-opt %s --memwall-annotate-costs=target=h100 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/bad-syntax.json 2>&1 | FileCheck %s --check-prefix=SYNTAX
// RUN: not memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/missing.json 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not memwall-opt %s --memwall-annotate-costs --target=a100-40gb --target-file=%S/Inputs/half-bandwidth.json 2>&1 | FileCheck %s --check-prefix=CONTRADICT

// UNKNOWN: error: unknown target 'h100'; valid targets: a100-40gb, a100-80gb, h100-sxm, h100-pcie, h200, b200, l4, rtx-4090
// UNKNOWN-NOT: error
// SYNTAX: error: {{.*}}bad-syntax.json:3:2: Expected , or } after object property
// MISSING: error: cannot read target file '{{.*}}missing.json': No such file or directory
// CONTRADICT: error: --target=a100-40gb contradicts '{{.*}}half-bandwidth.json': its "base" is 'h100-sxm' (a calibration file for another GPU)

func.func @f(%r: tensor<4xf32>) {
  %0 = memwall.relu %r : tensor<4xf32>
  return
}
