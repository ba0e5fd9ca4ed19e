// REQUIRES: cuda
// memwall-compile is a driver over the memwall-lower-to-bundle pipeline: the
// same pipeline named in --pass-pipeline writes the same bundle
// (manifest, PTX and kernels.mlir byte for byte), fused or not, per target.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %S/compile-seed.mlir -o %t/compile.bundle
// RUN: memwall-opt %S/compile-seed.mlir --pass-pipeline='builtin.module(memwall-lower-to-bundle{output=%t/opt.bundle})' -o /dev/null
// RUN: diff -r %t/compile.bundle %t/opt.bundle
// Upstream mlir-opt with the plugin: test/Embedding/plugin-lower-to-bundle.mlir.
// RUN: memwall-compile %S/compile-attention-decode.mlir --no-fuse --target=a100-80gb -o %t/compile-a100.bundle
// RUN: memwall-opt %S/compile-attention-decode.mlir --pass-pipeline='builtin.module(memwall-lower-to-bundle{fuse=false target=a100-80gb output=%t/opt-a100.bundle})' -o /dev/null
// RUN: diff -r %t/compile-a100.bundle %t/opt-a100.bundle

// Every stage of the compile path is a pass the pass manager sees.
// RUN: memwall-compile %S/compile-seed.mlir -o %t/dump.bundle -mlir-print-ir-after-all 2>&1 | FileCheck %s
// CHECK: IR Dump After SetTarget (memwall-set-target)
// CHECK: module @seed attributes {memwall.target = #memwall.target<"h100-sxm"
// CHECK: IR Dump After ExportReference (memwall-export-reference)
// CHECK: memwall.output_names = ["ln"]
// CHECK: IR Dump After TileAttention (memwall-tile-attention)
// CHECK: IR Dump After Fuse (memwall-fuse)
// CHECK: IR Dump After ConfigureKernels (memwall-configure-kernels)
// CHECK: memwall.kernel_config = #memwall.kernel_config<family = gemm, name = "gemm0"
// CHECK: IR Dump After ConvertToGPU (memwall-convert-to-gpu)
// CHECK: memwall.gemm "gemm0"
// CHECK: memwall.launch @kernels::@kernel1_elementwise
// CHECK: gpu.module @kernels
// CHECK: gpu.func @kernel1_elementwise
// CHECK: IR Dump After TensorMapParamsToPointers (memwall-tensor-map-params-to-pointers)
// CHECK: IR Dump After ConvertNVGPUToNVVMPass (convert-nvgpu-to-nvvm)
// CHECK: IR Dump After SCFToControlFlowPass (convert-scf-to-cf)
// CHECK: IR Dump After ConvertNVVMToLLVMPass (convert-nvvm-to-llvm)
// CHECK: IR Dump After ConvertVectorToLLVMPass (convert-vector-to-llvm)
// CHECK: IR Dump After ConvertGpuOpsToNVVMOps (convert-gpu-to-nvvm)
// CHECK: IR Dump After Canonicalizer (canonicalize)
// CHECK: IR Dump After CSE (cse)
// CHECK: IR Dump After ReconcileUnrealizedCastsPass (reconcile-unrealized-casts)
// CHECK: IR Dump After GpuModuleToBinaryPass (gpu-module-to-binary)
// CHECK: gpu.binary @kernels
// CHECK: IR Dump After PlanArena (memwall-plan-arena)
// CHECK: memwall.arena_bytes =
// CHECK: IR Dump After SerializeBundle (memwall-serialize-bundle)
// RUN: diff -r %t/compile.bundle %t/dump.bundle
