//===- KernelCodegen.h - GPU kernels for elementwise and row kernels -*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Builds one gpu.func per kernel from a KernelAnalysis, with memwall's own
// thread mapping (docs/codegen.md):
//  - elementwise: each thread handles vectorsPerThread 128-bit vectors of
//    the flattened iteration space;
//  - row reduction: one block per row, each thread holds vectorsPerThread
//    vectors of the row in registers, warp shuffles then shared memory
//    combine partial sums.
// Every kernel parameter is a 1-D memref (a bare pointer after lowering);
// math runs in f32 and values are converted at loads and stores.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_KERNELCODEGEN_H
#define MEMWALL_LIB_TARGET_KERNELCODEGEN_H

#include "memwall/Analysis/FusionCost.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace memwall {

/// Appends a kernel named `name` to `gpuModule`. Parameters: the analysis'
/// inputs in order, then `outputs` (each a value the analysis computes).
mlir::FailureOr<mlir::gpu::GPUFuncOp>
emitKernel(mlir::gpu::GPUModuleOp gpuModule, llvm::StringRef name,
           const KernelAnalysis &analysis, llvm::ArrayRef<mlir::Value> outputs);

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_KERNELCODEGEN_H
