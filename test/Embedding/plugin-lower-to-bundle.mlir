// REQUIRES: memwall-plugin, cuda
// Upstream mlir-opt with memwall as a plugin runs memwall-lower-to-bundle and
// writes the bundle memwall-compile writes, byte for byte.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %S/../Target/compile-seed.mlir -o %t/compile.bundle
// RUN: mlir-opt %S/../Target/compile-seed.mlir --load-dialect-plugin=%memwall_plugin --load-pass-plugin=%memwall_plugin --pass-pipeline='builtin.module(memwall-lower-to-bundle{output=%t/plugin.bundle})' -o /dev/null
// RUN: diff -r %t/compile.bundle %t/plugin.bundle
