//===- LayoutCodegen.h - data-movement kernels -------------------*- C++
//-*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Kernels for the ops that move data rather than compute on it: transpose,
// slice, embedding (a row gather) and rope (a rotation of feature pairs).
// One thread per `width` consecutive output elements: 16-byte vectors when
// the innermost dimension is contiguous in the input and stays aligned,
// else single elements. docs/codegen.md, "Data-movement kernels".
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_LAYOUTCODEGEN_H
#define MEMWALL_LIB_TARGET_LAYOUTCODEGEN_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <array>

namespace memwall {

/// True for the ops emitLayoutKernel handles.
bool isLayoutOp(mlir::Operation *op);

struct LayoutKernelPlan {
  /// Output elements per thread (one vector).
  int64_t width = 1;
  int64_t threads = 256;
  std::array<int64_t, 3> grid{1, 1, 1};
};

LayoutKernelPlan planLayoutKernel(mlir::Operation *op);

/// Appends the kernel `name` for `op` to `gpuModule`. Parameters (flat
/// memrefs): the op's operands in order, then its result.
mlir::gpu::GPUFuncOp emitLayoutKernel(mlir::gpu::GPUModuleOp gpuModule,
                                      llvm::StringRef name, mlir::Operation *op,
                                      const LayoutKernelPlan &plan);

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_LAYOUTCODEGEN_H
