// REQUIRES: memwall-plugin
// memwall-default run by upstream mlir-opt through the plugin does exactly
// what memwall-opt --fuse does with the same options: the same IR and the
// same report, byte for byte.

// RUN: rm -rf %t && mkdir -p %t
// RUN: mlir-opt %S/Inputs/train-step.mlir \
// RUN:   --load-dialect-plugin=%memwall_plugin --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-default{target=a100-80gb precision=bf16-mixed budget=40GB report=%t/plugin.json})' \
// RUN:   -o %t/plugin.mlir
// RUN: memwall-opt %S/Inputs/train-step.mlir --fuse --target=a100-80gb \
// RUN:   --precision=bf16-mixed --budget=40GB --report=%t/opt.json -o %t/opt.mlir
// RUN: diff %t/plugin.mlir %t/opt.mlir
// RUN: diff %t/plugin.json %t/opt.json
// RUN: FileCheck %s < %t/plugin.mlir
// RUN: FileCheck %s --check-prefix=REPORT < %t/plugin.json

// Precision, autodiff with AdamW, recomputation under the budget (nothing to
// recompute: the step fits), then fusion all ran.
// CHECK: module attributes {memwall.precision = "bf16-mixed", memwall.remat = {{{.*}}recomputed = 0 : i64{{.*}}}, memwall.target = #memwall.target<"a100-80gb",
// CHECK: func.func @train_step(%arg0: tensor<512x768xbf16>
// CHECK-SAME: attributes {memwall.fused}
// CHECK: memwall.fusion gemm
// CHECK: memwall.adamw

// REPORT: "name": "a100-80gb"
// REPORT: "budget_bytes": 40000000000
// REPORT: "remat": {

// Without options the pipeline fuses for the default target and writes no
// report (as memwall-opt --fuse).
// RUN: mlir-opt %S/Inputs/train-step.mlir \
// RUN:   --load-dialect-plugin=%memwall_plugin --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-default)' -o %t/default.mlir
// RUN: memwall-opt %S/Inputs/train-step.mlir --fuse -o %t/default-opt.mlir
// RUN: diff %t/default.mlir %t/default-opt.mlir
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// FILES-NOT: default{{.*}}.json

// fuse=false leaves the graph unfused but still differentiates it.
// RUN: mlir-opt %S/Inputs/train-step.mlir \
// RUN:   --load-dialect-plugin=%memwall_plugin --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-default{fuse=false})' \
// RUN:   | FileCheck %s --check-prefix=NOFUSE
// NOFUSE-NOT: memwall.fusion
// NOFUSE: memwall.adamw
// NOFUSE-NOT: memwall.fusion
