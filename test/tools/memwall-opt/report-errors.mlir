// Every failure is one diagnostic, a nonzero exit and no report file.

// RUN: rm -rf %t && mkdir -p %t
// RUN: not memwall-opt %s --report=%t/r.csv -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXT
// EXT: error: cannot choose a report format for '{{.*}}r.csv': use a .json, .txt or .svg file, or - for text on stdout
// RUN: not memwall-opt %s --report=%t/missing-dir/r.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=DIR
// DIR: error: cannot write report '{{.*}}missing-dir/r.json'
// RUN: not memwall-opt %s --target=h100 --report=%t/r.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: memwall-opt: error: unknown target 'h100'; valid targets:
// RUN: not memwall-opt %S/Inputs/malformed.mlir --report=%t/r.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=PARSE
// PARSE: malformed.mlir:3:23: error: expected ':'
// PARSE-NOT: error:
// RUN: not memwall-opt %S/Inputs/bad-shape.mlir --report=%t/r.json -o %t/out.mlir 2>&1 | FileCheck %s --check-prefix=VERIFY
// VERIFY: bad-shape.mlir:3:8: error: contraction dimensions differ: lhs has K = 8, rhs has K = 9
// RUN: not memwall-opt %t/does-not-exist.mlir --report=%t/r.json 2>&1 | FileCheck %s --check-prefix=INPUT
// INPUT: memwall-opt: error: cannot open input file '{{.*}}does-not-exist.mlir': No such file or directory
// RUN: ls %t | count 0

func.func @f(%r: tensor<4xf32>) {
  %0 = memwall.relu %r : tensor<4xf32>
  return
}

// The IR output too: an unwritable -o is one error and nothing is written.
// RUN: not memwall-opt %s -o %t/missing-dir/out.mlir 2>&1 | FileCheck %s --check-prefix=OUT
// OUT: memwall-opt: error: cannot open output file '{{.*}}missing-dir/out.mlir'
