// REQUIRES: memwall-plugin
// Single memwall passes, named through --pass-pipeline, in upstream
// mlir-opt with the plugin loaded.

// RUN: mlir-opt %s --load-dialect-plugin=%memwall_plugin \
// RUN:   --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-set-target{target=h100-sxm},func.func(memwall-fuse))' \
// RUN:   | FileCheck %s --check-prefix=FUSE
// FUSE: module attributes {memwall.target = #memwall.target<"h100-sxm",
// FUSE: func.func @chain({{.*}}) {{.*}}attributes {memwall.fused}
// FUSE: memwall.fusion elementwise(%arg0, %arg1)
// FUSE-NEXT: ^bb0
// FUSE-NEXT: memwall.add
// FUSE-NEXT: memwall.gelu
// FUSE-NEXT: memwall.scale
// FUSE-NEXT: memwall.yield

// RUN: mlir-opt %s --load-dialect-plugin=%memwall_plugin \
// RUN:   --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(memwall-set-target{target=h100-sxm},func.func(memwall-annotate-costs))' \
// RUN:   | FileCheck %s --check-prefix=COSTS
// COSTS: memwall.add {{.*}}memwall.cost = #memwall.cost<flops = 65536,
// COSTS: memwall.gelu {{.*}}memwall.cost = #memwall.cost<

// Upstream passes and memwall's mix in one pipeline; memwall's function
// passes nest under func.func as upstream's do.
// RUN: mlir-opt %s --load-dialect-plugin=%memwall_plugin \
// RUN:   --load-pass-plugin=%memwall_plugin \
// RUN:   --pass-pipeline='builtin.module(canonicalize,func.func(memwall-fuse),cse)' \
// RUN:   | FileCheck %s --check-prefix=MIXED
// MIXED: memwall.fusion elementwise

// The dialect plugin alone is enough to parse and print memwall IR.
// RUN: mlir-opt %s --load-dialect-plugin=%memwall_plugin | FileCheck %s --check-prefix=ROUNDTRIP
// ROUNDTRIP: memwall.scale %{{.*}} by 2.000000e+00

func.func @chain(%x: tensor<64x1024xbf16>, %b: tensor<1024xbf16>) -> tensor<64x1024xbf16> {
  %0 = memwall.add %x, %b : tensor<64x1024xbf16>, tensor<1024xbf16> -> tensor<64x1024xbf16>
  %1 = memwall.gelu %0 : tensor<64x1024xbf16>
  %2 = memwall.scale %1 by 2.0 : tensor<64x1024xbf16>
  return %2 : tensor<64x1024xbf16>
}
