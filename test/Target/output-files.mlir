// REQUIRES: cuda
// memwall-compile writes a bundle, or one --emit file, only when the whole
// run succeeds (docs/user-guide.md, "Outputs"): the bundle is built beside
// its target and moved into place; a failure leaves an old one intact.

// RUN: rm -rf %t && mkdir -p %t/sub

// A relative -o: the temporary directory is made in sub/, beside the target.
// RUN: cd %t && memwall-compile %S/compile-seed.mlir -o sub/x.bundle
// RUN: ls -A %t/sub %t/sub/x.bundle | FileCheck %s --check-prefix=BUNDLE --implicit-check-not=.tmp-
// BUNDLE: x.bundle
// BUNDLE: kernels.mlir
// BUNDLE: kernels.ptx
// BUNDLE: manifest.json

// Compiling again replaces the bundle as a whole: a file only the old one
// had goes with it.
// RUN: touch %t/sub/x.bundle/stale.txt
// RUN: cd %t && memwall-compile %S/compile-seed.mlir -o sub/x.bundle
// RUN: not ls %t/sub/x.bundle/stale.txt

// A failed compile leaves the old bundle byte for byte.
// RUN: cp -r %t/sub/x.bundle %t/orig.bundle
// RUN: echo "garbage" > %t/bad.mlir
// RUN: not memwall-compile %t/bad.mlir -o %t/sub/x.bundle
// RUN: not memwall-compile %S/compile-errors.mlir -o %t/sub/x.bundle
// RUN: diff -r %t/orig.bundle %t/sub/x.bundle

// A symlink to a bundle stays a symlink; the bundle it names is replaced.
// RUN: ln -s sub/x.bundle %t/link.bundle
// RUN: touch %t/sub/x.bundle/stale.txt
// RUN: memwall-compile %S/compile-seed.mlir -o %t/link.bundle
// RUN: test -L %t/link.bundle
// RUN: not ls %t/sub/x.bundle/stale.txt
// RUN: test -f %t/sub/x.bundle/manifest.json

// --emit files: a full disk is one error; a failed run keeps an old file.
// RUN: not memwall-compile %S/compile-seed.mlir --emit=fused -o /dev/full 2>&1 | FileCheck %s --check-prefix=FULL
// FULL: memwall-compile: error: cannot write '/dev/full': No space left on device
// FULL-NOT: error:
// RUN: test -c /dev/full
// RUN: echo "old" > %t/fused.mlir
// RUN: not memwall-compile %t/bad.mlir --emit=fused -o %t/fused.mlir
// RUN: FileCheck %s --check-prefix=OLD < %t/fused.mlir
// OLD: old
// RUN: ln -s fused.mlir %t/fused-link.mlir
// RUN: memwall-compile %S/compile-seed.mlir --emit=fused -o %t/fused-link.mlir
// RUN: test -L %t/fused-link.mlir
// RUN: FileCheck %s --check-prefix=FUSED < %t/fused.mlir
// FUSED: func.func @main

// Nothing else was left: no temporary file or directory, no old bundle.
// RUN: ls -A %t %t/sub | FileCheck %s --check-prefix=LEFT --implicit-check-not=.tmp- --implicit-check-not=.old-
// LEFT: bad.mlir
// LEFT: fused-link.mlir
// LEFT: fused.mlir
// LEFT: link.bundle
// LEFT: orig.bundle
// LEFT: x.bundle
