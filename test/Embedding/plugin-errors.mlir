// REQUIRES: memwall-plugin
// Bad option values of memwall-default get the diagnostics memwall-opt
// gives for the same flags (memwall-opt checks them before reading the
// model, as its own errors); nothing crashes.

// RUN: not mlir-opt %s --load-dialect-plugin=%memwall_plugin --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-default{precision=fp7})' 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not memwall-opt %s --fuse --precision=fp7 2>&1 | FileCheck %s --check-prefix=POLICY
// POLICY: error: {{(memwall-precision: )?}}unknown policy 'fp7' (expected fp32, bf16-mixed, fp16-mixed, fp8-mixed, int8-weights, fp8-weights or int4-weights)

// RUN: not mlir-opt %s --load-dialect-plugin=%memwall_plugin --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-default{kv-cache-dtype=f12})' 2>&1 | FileCheck %s --check-prefix=KV
// RUN: not memwall-opt %s --fuse --kv-cache-dtype=f12 2>&1 | FileCheck %s --check-prefix=KV
// KV: error: {{(memwall-precision: )?}}unknown KV-cache dtype 'f12'

// RUN: not mlir-opt %s --load-dialect-plugin=%memwall_plugin --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-default{target=h100})' 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not memwall-opt %s --fuse --target=h100 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: unknown target 'h100'; valid targets: a100-40gb,

// RUN: not mlir-opt %s --load-dialect-plugin=%memwall_plugin --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-default{budget=40XB})' 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: not memwall-opt %s --fuse --budget=40XB 2>&1 | FileCheck %s --check-prefix=BUDGET
// BUDGET: error: --budget:

// RUN: not mlir-opt %s --load-dialect-plugin=%memwall_plugin --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-default{offload=gpu})' 2>&1 | FileCheck %s --check-prefix=OFFLOAD
// RUN: not memwall-opt %s --fuse --offload=gpu 2>&1 | FileCheck %s --check-prefix=OFFLOAD
// OFFLOAD: error: --offload: unknown policy 'gpu' (expected none, optimizer or params)

// RUN: not mlir-opt %s --load-dialect-plugin=%memwall_plugin --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-default{report=r.csv})' 2>&1 | FileCheck %s --check-prefix=EXT
// RUN: not memwall-opt %s --fuse --report=r.csv 2>&1 | FileCheck %s --check-prefix=EXT
// EXT: error: cannot choose a report format for 'r.csv'

// A value that is not a number is the option parser's error, as in
// memwall-opt.
// RUN: not mlir-opt %s --load-dialect-plugin=%memwall_plugin --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-default{devices=abc})' 2>&1 | FileCheck %s --check-prefix=NUMBER
// RUN: not memwall-opt %s --fuse --devices=abc 2>&1 | FileCheck %s --check-prefix=NUMBER
// NUMBER: for the --devices option: 'abc' value invalid for long argument!

// An unknown option name.
// RUN: not mlir-opt %s --load-dialect-plugin=%memwall_plugin --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-default{bogus=1})' 2>&1 | FileCheck %s --check-prefix=NAME
// NAME: no such option bogus

func.func @f(%r: tensor<4xf32>) {
  %0 = memwall.relu %r : tensor<4xf32>
  return
}
