// A target memwall-set-target cannot resolve is one error at the module and
// the pass fails, leaving the module without a target.
// RUN: memwall-opt %s --memwall-set-target=target=h900 -verify-diagnostics
// The other option errors, on a module with no expected-error comments:
// RUN: not memwall-opt %S/set-target.mlir --memwall-set-target=launch=eager 2>&1 | FileCheck %s --check-prefix=LAUNCH
// RUN: not memwall-opt %S/set-target.mlir --memwall-set-target=target-file=%S/Inputs/unknown-field.json 2>&1 | FileCheck %s --check-prefix=FILE
// RUN: not memwall-opt %S/set-target.mlir --memwall-set-target=target-file=%t.missing.json 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not memwall-opt %S/set-target.mlir --memwall-set-target="target=l4 target-file=%S/Inputs/h200-calibration.json" 2>&1 | FileCheck %s --check-prefix=CONTRADICTS

// LAUNCH: set-target.mlir:{{[0-9]+}}:{{[0-9]+}}: error: launch 'eager' must be stream or graph
// LAUNCH-NOT: error
// FILE: set-target.mlir:{{[0-9]+}}:{{[0-9]+}}: error: {{.*}}unknown-field.json
// FILE-NOT: error
// MISSING: error: {{.*}}missing.json
// MISSING-NOT: error
// CONTRADICTS: error: --target=l4 contradicts '{{.*}}h200-calibration.json': its "base" is 'h200'
// CONTRADICTS-NOT: error
// expected-error @below {{unknown target 'h900'; valid targets: a100-40gb, a100-80gb, h100-sxm}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
