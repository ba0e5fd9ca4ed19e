// memwall-serialize-bundle writes only a lowered model (steps, arena and
// reference), to a directory it is given; nothing is written otherwise.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-serialize-bundle{output=%t/b})' -split-input-file -verify-diagnostics
// RUN: not ls %t/b
// RUN: echo 'module {}' | not memwall-opt --pass-pipeline='builtin.module(memwall-serialize-bundle)' 2>&1 | FileCheck %s
// CHECK: error: memwall-serialize-bundle needs output=BUNDLE_DIR

// expected-error @+1 {{not a lowered model: expected one function and the reference of memwall-export-reference}}
module {
  func.func @main() { return }
}

// -----

module attributes {memwall.output_names = [], memwall.reference = "{}"} {
  // expected-error @+1 {{the buffers have no arena: run memwall-plan-arena first}}
  func.func @main() { return }
}
