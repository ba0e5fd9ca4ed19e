// Outputs are written only by a fully successful run (docs/user-guide.md,
// "Outputs"): a write error is one error naming the path and a nonzero exit;
// a failed run leaves an existing output as it was; devices and symlinks
// stay what they are; no temporary is left behind.

// RUN: rm -rf %t && mkdir -p %t/sub

// A full disk, for -o, stdout and every file the pipeline writes.
// RUN: not memwall-opt %s -o /dev/full 2>&1 | FileCheck %s --check-prefix=FULL
// FULL: memwall-opt: error: cannot write '/dev/full': No space left on device
// FULL-NOT: error:
// RUN: not memwall-opt %s > /dev/full 2> %t/stdout.err
// RUN: FileCheck %s --check-prefix=STDOUT < %t/stdout.err
// STDOUT: memwall-opt: error: cannot write '<stdout>': No space left on device
// STDOUT-NOT: error:
// /dev/full has no report extension; a link named .json to it is written in
// place, and fails.
// RUN: not memwall-opt %s --report=/dev/full -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT-EXT
// REPORT-EXT: error: cannot choose a report format for '/dev/full'
// REPORT-EXT-NOT: error:
// RUN: ln -s /dev/full %t/full.json
// RUN: ln -s /dev/full %t/full.svg
// RUN: not memwall-opt %s --report=%t/full.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// REPORT: error: cannot write report '{{.*}}full.json': No space left on device
// REPORT-NOT: error:
// RUN: not memwall-opt %s --report=%t/r.json --memory-timeline=%t/full.svg -o /dev/null 2>&1 | FileCheck %s --check-prefix=TIMELINE
// TIMELINE: error: cannot write memory timeline '{{.*}}full.svg': No space left on device
// TIMELINE-NOT: error:
// RUN: memwall-gen --preset=gpt2 --mode=train --seq=64 --layers=1 -o %t/train.mlir
// RUN: not memwall-opt %t/train.mlir --fuse --budget=1GB --remat-pareto=%t/full.svg -o /dev/null 2>&1 | FileCheck %s --check-prefix=PARETO
// PARETO: error: {{.*}}cannot write remat Pareto plot '{{.*}}full.svg': No space left on device
// PARETO-NOT: error:
// The device is still a device, the links still links.
// RUN: test -c /dev/full
// RUN: test -L %t/full.json
// RUN: test -L %t/full.svg

// A failed run (bad input, or a pass that fails) leaves the earlier output
// and report byte for byte.
// RUN: memwall-opt %s --report=%t/r.json -o %t/out.mlir
// RUN: cp %t/out.mlir %t/out.orig
// RUN: cp %t/r.json %t/r.orig
// RUN: echo "garbage" > %t/bad.mlir
// RUN: not memwall-opt %t/bad.mlir --report=%t/r.json -o %t/out.mlir
// RUN: not memwall-opt %s --memwall-set-target=target=h100 --memwall-annotate-costs --report=%t/r.json -o %t/out.mlir
// RUN: cmp %t/out.mlir %t/out.orig
// RUN: cmp %t/r.json %t/r.orig

// A symlink stays a symlink; its target gets the output.
// RUN: echo "old" > %t/sub/target.mlir
// RUN: ln -s sub/target.mlir %t/link.mlir
// RUN: memwall-opt %s -o %t/link.mlir
// RUN: test -L %t/link.mlir
// RUN: FileCheck %s --check-prefix=IR < %t/sub/target.mlir
// IR: memwall.relu

// A relative path gets its temporary in its own directory.
// RUN: cd %t && memwall-opt %s -o sub/relative.mlir
// RUN: FileCheck %s --check-prefix=IR < %t/sub/relative.mlir

// An unwritable -o fails before the run, and nothing is left anywhere.
// RUN: not memwall-opt %s -o %t/missing-dir/out.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: memwall-opt: error: cannot write '{{.*}}missing-dir/out.mlir': No such file or directory
// RUN: ls -A %t %t/sub | FileCheck %s --check-prefix=LEFT --implicit-check-not=.tmp-
// LEFT: bad.mlir
// LEFT: full.json
// LEFT: out.mlir
// LEFT: r.json
// LEFT: relative.mlir
// LEFT: target.mlir

func.func @f(%r: tensor<4xf32>) {
  %0 = memwall.relu %r : tensor<4xf32>
  return
}
