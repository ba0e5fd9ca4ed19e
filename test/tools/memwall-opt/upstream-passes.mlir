// Upstream passes run on memwall IR: memwall ops are pure, so CSE merges
// duplicates and canonicalization drops dead ones; the pipeline syntax names
// memwall passes beside upstream ones.
// RUN: memwall-opt %s --cse --canonicalize | FileCheck %s
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target{target=l4},func.func(cse,canonicalize,memwall-annotate-costs))' | FileCheck %s --check-prefix=PIPELINE
// RUN: memwall-opt --help | FileCheck %s --check-prefix=HELP

// CHECK-LABEL: func.func @f
// CHECK-COUNT-1: memwall.gelu
// CHECK-NOT: memwall.gelu
// CHECK-NOT: memwall.relu
// CHECK: return
// PIPELINE: memwall.gelu {{.*}}memwall.cost = #memwall.cost<
// PIPELINE-NOT: memwall.gelu
func.func @f(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = memwall.gelu %x tanh : tensor<4x8xf32>
  %1 = memwall.gelu %x tanh : tensor<4x8xf32>
  %unused = memwall.relu %x : tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// HELP: --memwall-annotate-costs
// HELP: --memwall-roofline-report
// HELP: memwall options:
// HELP: --report=<file>
// HELP: --target=<name>
// HELP: --target-file=<file>
