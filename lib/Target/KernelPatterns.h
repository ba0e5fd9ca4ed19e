//===- KernelPatterns.h - configured ops to kernels and steps ---*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One conversion pattern per kernel family (elementwise, row reduction,
// gemm, attention, layout, view): each builds its gpu.func with the
// family's generator (KernelCodegen, AttentionCodegen, LayoutCodegen) and
// replaces the op by bundle steps on buffers (MemWallHostOps.td).
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_KERNELPATTERNS_H
#define MEMWALL_LIB_TARGET_KERNELPATTERNS_H

#include "memwall/Hardware/GPUTarget.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/DialectConversion.h"

#include <string>

namespace memwall {

/// What the patterns share: where kernels go, the target they are planned
/// for, and the bundle names of the values steps write.
struct KernelLoweringState {
  mlir::gpu::GPUModuleOp kernels;
  const GPUTarget &target;
  const llvm::DenseMap<mlir::Value, std::string> &bufferNames;
};

/// Tensors become memrefs of the same shape (the buffers of the bundle).
void populateBufferTypeConversion(mlir::TypeConverter &converter);

/// Adds the kernel-family patterns. `state` must outlive their application.
void populateKernelLoweringPatterns(const mlir::TypeConverter &converter,
                                    mlir::RewritePatternSet &patterns,
                                    const KernelLoweringState &state);

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_KERNELPATTERNS_H
