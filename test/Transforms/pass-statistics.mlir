// REQUIRES: pass-statistics
// Each memwall pass counts what it did in its statistics (shown by
// -mlir-pass-statistics when LLVM was built with statistics).
// RUN: memwall-opt %s --memwall-set-target=target=h100-sxm --memwall-tile-attention --memwall-fuse --memwall-annotate-costs -mlir-pass-statistics -mlir-pass-statistics-display=list -o /dev/null 2>&1 | FileCheck %s
// RUN: memwall-opt %S/../Embedding/Inputs/train-step.mlir --pass-pipeline='builtin.module(memwall-precision{policy=bf16-mixed},memwall-autodiff)' -mlir-pass-statistics -mlir-pass-statistics-display=list -o /dev/null 2>&1 | FileCheck %s --check-prefix=TRAIN

// One attention tiled, none left untiled; the chain fused into one kernel
// of three ops, saving two launches and two round trips through DRAM; five
// ops annotated (the kernel, the three ops inside it, the tiled attention).
// CHECK-DAG: (S) 1 attentions-tiled
// CHECK-DAG: (S) 0 attentions-untiled
// CHECK-DAG: (S) 0 dequantize-kernels
// CHECK-DAG: (S) 1 kernels-formed
// CHECK-DAG: (S) 3 ops-fused
// CHECK-DAG: (S) {{[1-9][0-9]*}} predicted-ns-saved
// CHECK-DAG: (S) 5 ops-annotated

// The training step: its arguments and results retyped to bf16, eight
// backward ops and an AdamW update per weight.
// TRAIN-DAG: (S) {{[1-9][0-9]*}} values-retyped
// TRAIN-DAG: (S) 8 backward-ops
// TRAIN-DAG: (S) 3 optimizer-ops

func.func @chain(%x: tensor<64x1024xbf16>, %b: tensor<1024xbf16>) -> tensor<64x1024xbf16> {
  %0 = memwall.add %x, %b : tensor<64x1024xbf16>, tensor<1024xbf16> -> tensor<64x1024xbf16>
  %1 = memwall.gelu %0 : tensor<64x1024xbf16>
  %2 = memwall.scale %1 by 2.0 : tensor<64x1024xbf16>
  return %2 : tensor<64x1024xbf16>
}

func.func @attention(%q: tensor<1x2x512x128xbf16>) -> tensor<1x2x512x128xbf16> {
  %0 = memwall.attention %q, %q, %q : tensor<1x2x512x128xbf16>, tensor<1x2x512x128xbf16>, tensor<1x2x512x128xbf16> -> tensor<1x2x512x128xbf16>
  return %0 : tensor<1x2x512x128xbf16>
}
