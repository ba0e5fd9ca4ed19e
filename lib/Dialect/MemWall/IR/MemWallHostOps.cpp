//===- MemWallHostOps.cpp - bundle steps on buffers -----------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
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
  if (source.getLayout().isIdentity() && result.getLayout().isIdentity()) {
    if (source.getNumElements() != result.getNumElements())
      return emitOpError("of a dense buffer must keep its element count");
    return success();
  }
  // A window of a dense buffer: a run of its elements at a static offset,
  // dense (`strided<[row-major strides], offset: k>`), e.g. a chunk of a
  // weight's rows.
  if (source.getLayout().isIdentity()) {
    auto layout = dyn_cast<StridedLayoutAttr>(result.getLayout());
    if (!layout || ShapedType::isDynamic(layout.getOffset()) ||
        layout.getStrides() != ArrayRef(computeStrides(result.getShape())))
      return emitOpError("must give a dense buffer");
    if (layout.getOffset() + result.getNumElements() > source.getNumElements())
      return emitOpError("of a dense buffer must lie inside it");
    return success();
  }
  if (!result.getLayout().isIdentity())
    return emitOpError("must give a dense buffer");
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

int64_t StackViewOp::getPitch(MemRefType type) {
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  int64_t alignment = MemWallDialect::kArenaAlignment;
  int64_t bytes =
      llvm::alignTo(type.getNumElements() * elementBytes, alignment);
  return bytes / elementBytes;
}

MemRefType StackViewOp::getStackedType(MemRefType type, int64_t count) {
  SmallVector<int64_t> shape{count}, strides{getPitch(type)};
  llvm::append_range(shape, type.getShape());
  llvm::append_range(strides, type.getStridesAndOffset().first);
  // Sources whose size is a whole number of alignments stack densely.
  if (strides.front() == type.getNumElements())
    return MemRefType::get(shape, type.getElementType());
  return MemRefType::get(
      shape, type.getElementType(),
      StridedLayoutAttr::get(type.getContext(), /*offset=*/0, strides));
}

LogicalResult StackViewOp::verify() {
  ValueRange sources = getSources();
  if (sources.size() < 2)
    return emitOpError("stacks at least two buffers");
  auto type = cast<MemRefType>(sources.front().getType());
  if (!type.getLayout().isIdentity() || type.getElementTypeBitWidth() % 8 != 0)
    return emitOpError("stacks dense buffers of whole-byte elements");
  llvm::SmallPtrSet<Value, 4> seen;
  for (Value source : sources) {
    if (source.getType() != type)
      return emitOpError("stacks buffers of one type, got ")
             << type << " and " << source.getType();
    if (!seen.insert(source).second)
      return emitOpError("stacks a buffer twice");
    // The arena places these side by side: they are buffers of their own.
    if (!isa<BlockArgument>(source) && !source.getDefiningOp<memref::AllocOp>())
      return emitOpError("stacks function arguments and memref.alloc "
                         "buffers only");
  }
  MemRefType expected = getStackedType(type, sources.size());
  if (getType() != expected)
    return emitOpError("must give ") << expected << ", got " << getType();
  return success();
}
