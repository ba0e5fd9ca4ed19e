//===- MemWallHostOps.cpp - bundle steps on buffers -----------------------===//
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
#include "memwall/Dialect/MemWall/IR/MemWallHostOps.cpp.inc"

LogicalResult ViewOp::verify() {
  MemRefType source = getSource().getType(), result = getResult().getType();
  if (source.getElementType() != result.getElementType())
    return emitOpError("changes the element type");
  if (!result.getLayout().isIdentity())
    return emitOpError("must give a dense buffer");
  if (source.getLayout().isIdentity()) {
    if (source.getNumElements() != result.getNumElements())
      return emitOpError("of a dense buffer must keep its element count");
    return success();
  }
  // The buffer a strided window lies in.
  auto [strides, offset] = source.getStridesAndOffset();
  bool holds = offset == 0 && source.getRank() == result.getRank() &&
               strides == result.getStridesAndOffset().first;
  for (auto [window, whole] :
       llvm::zip_equal(source.getShape(), result.getShape()))
    holds = holds && window <= whole;
  if (!holds)
    return emitOpError("of a strided buffer must be the dense buffer it is a "
                       "window of (same rank and strides, no smaller "
                       "dimension)");
  return success();
}
