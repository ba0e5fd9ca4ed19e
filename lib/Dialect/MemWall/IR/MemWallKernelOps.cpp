//===- MemWallKernelOps.cpp - ops inside generated kernels ----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace memwall;

#define GET_OP_CLASSES
#include "memwall/Dialect/MemWall/IR/MemWallKernelOps.cpp.inc"

LogicalResult WarpgroupAccumulateOp::verify() {
  auto type = cast<nvgpu::WarpgroupAccumulatorType>(getResult().getType());
  if (!type.getFragmented().getElementType().isF32())
    return emitOpError("adds f32 accumulators only, got ")
           << type.getFragmented().getElementType();
  return success();
}
