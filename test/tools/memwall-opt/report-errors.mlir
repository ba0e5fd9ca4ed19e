// Every failure is one diagnostic, a nonzero exit and no report file.

// RUN: rm -rf %t && mkdir -p %t
// RUN: not memwall-opt %s --report=%t/r.csv -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXT
// EXT: error: cannot choose a report format for '{{.*}}r.csv': use a .json, .txt or .svg file, or - for text on stdout
// EXT-NOT: error:
// RUN: not memwall-opt %s --memwall-roofline-report=output=%t/r.csv -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXT
// A report path without an extension is no format either.
// RUN: not memwall-opt %s --report=%t/report -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOEXT
// NOEXT: error: cannot choose a report format for '{{.*}}report': use a .json, .txt or .svg file
// RUN: not memwall-opt %s --report=%t/missing-dir/r.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=DIR
// DIR: error: cannot write report '{{.*}}missing-dir/r.json'
// DIR-NOT: error:
// RUN: not memwall-opt %s --target=h100 --report=%t/r.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: memwall-opt: error: unknown target 'h100'; valid targets:
// TARGET-NOT: error:
// RUN: not memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target{target=h100},memwall-roofline-report{output=%t/r.json})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=TARGET-PASS
// TARGET-PASS: error: unknown target 'h100'; valid targets:
// A bad target file fails before the model is read.
// RUN: not memwall-opt %s --target-file=%memwall_src/test/Transforms/Inputs/negative-bandwidth.json --report=%t/r.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=TARGET-FILE
// TARGET-FILE: memwall-opt: error: {{.*}}negative-bandwidth.json: "memory_bandwidth_bytes_per_s" must be a non-negative number
// TARGET-FILE-NOT: error:
// A pass of the pipeline that fails stops the run before the report.
// RUN: not memwall-opt %s --memwall-set-target=target=h100 --memwall-annotate-costs --report=%t/r.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: error: unknown target 'h100'
// RUN: not memwall-opt %S/Inputs/malformed.mlir --report=%t/r.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=PARSE
// PARSE: malformed.mlir:3:23: error: expected ':'
// PARSE-NOT: error:
// RUN: not memwall-opt %S/Inputs/bad-shape.mlir --report=%t/r.json -o %t/out.mlir 2>&1 | FileCheck %s --check-prefix=VERIFY
// VERIFY: bad-shape.mlir:3:8: error: contraction dimensions differ: lhs has K = 8, rhs has K = 9
// VERIFY-NOT: error:
// RUN: not memwall-opt %t/does-not-exist.mlir --report=%t/r.json 2>&1 | FileCheck %s --check-prefix=INPUT
// INPUT: memwall-opt: error: cannot read input '{{.*}}does-not-exist.mlir': No such file or directory
// A directory is not a readable input file either.
// RUN: mkdir -p %t.dir.mlir
// RUN: not memwall-opt %t.dir.mlir --report=%t/r.json 2>&1 | FileCheck %s --check-prefix=INPUT-DIR
// INPUT-DIR: memwall-opt: error: cannot read input '{{.*}}dir.mlir': it is a directory
// None of the failures above left a report, a temporary, or an output file.
// RUN: ls -A %t | count 0

// The IR output too: an unwritable -o is one error and nothing is written.
// RUN: not memwall-opt %s -o %t/missing-dir/out.mlir 2>&1 | FileCheck %s --check-prefix=OUT
// OUT: memwall-opt: error: cannot write '{{.*}}missing-dir/out.mlir': No such file or directory

// A failed run leaves an earlier report as it was: the verifier failure and
// a report path that is a directory do not touch it.
// RUN: rm -rf %t.keep && mkdir -p %t.keep/dir.json
// RUN: memwall-opt %s --report=%t.keep/r.json -o /dev/null
// RUN: cp %t.keep/r.json %t.keep/r.orig
// RUN: not memwall-opt %S/Inputs/bad-shape.mlir --report=%t.keep/r.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=VERIFY
// RUN: not memwall-opt %S/Inputs/malformed.mlir --report=%t.keep/r.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: cmp %t.keep/r.json %t.keep/r.orig
// RUN: not memwall-opt %s --report=%t.keep/dir.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=ISDIR
// ISDIR: error: cannot write report '{{.*}}dir.json'
// RUN: ls -A %t.keep/dir.json | count 0
// RUN: ls -A %t.keep | count 3

// A report that cannot be written is one error, without the module dumped
// after it as a note (megabytes of IR for a real model).
// RUN: not memwall-opt %s --report=%t/missing-dir/r.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=ONE
// ONE: error: cannot write report
// ONE-NOT: note:
// ONE-NOT: memwall.relu

func.func @f(%r: tensor<4xf32>) {
  %0 = memwall.relu %r : tensor<4xf32>
  return
}
