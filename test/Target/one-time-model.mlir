// One time model: the bundle's predicted time of each kernel is the time the
// report predicts for the same ops (before the time model was shared, this
// SwiGLU was 42 us in the report and 83 us in the bundle).
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s --target=h100-sxm -o %t/bundle
// RUN: memwall-opt %s --fuse --target=h100-sxm --report=%t/report.json -o /dev/null
// RUN: %PYTHON %s.py %t/bundle/manifest.json %t/report.json | FileCheck %s
// CHECK: swiglu: bundle {{[0-9.]+}} us, report {{[0-9.]+}} us: equal
// CHECK: layers.0.mlp.down: bundle {{[0-9.]+}} us, report {{[0-9.]+}} us: equal
// CHECK: 2 kernels agree

module @swiglu_block {
  func.func @f(%g: tensor<2048x11008xbf16> {memwall.kind = #memwall.arg_kind<input>},
               %u: tensor<2048x11008xbf16> {memwall.kind = #memwall.arg_kind<input>},
               %w: tensor<11008x4096xbf16> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<2048x4096xbf16> {
    %0 = memwall.swiglu %g, %u : tensor<2048x11008xbf16> loc("swiglu")
    %1 = memwall.matmul %0, %w : tensor<2048x11008xbf16>, tensor<11008x4096xbf16> -> tensor<2048x4096xbf16> loc("layers.0.mlp.down")
    return %1 : tensor<2048x4096xbf16>
  }
}
