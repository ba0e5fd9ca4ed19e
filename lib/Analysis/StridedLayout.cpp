//===- StridedLayout.cpp - Layout ops as strided views --------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/StridedLayout.h"

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"

using namespace mlir;
using namespace memwall;

StridedLayout StridedLayout::contiguous(ArrayRef<int64_t> shape) {
  StridedLayout layout;
  layout.shape.assign(shape.begin(), shape.end());
  SmallVector<int64_t> strides = computeStrides(shape);
  layout.strides.assign(strides.begin(), strides.end());
  return layout;
}

bool StridedLayout::isContiguous() const {
  StridedLayout plain = contiguous(shape);
  if (offset != 0)
    return false;
  // The stride of a dimension of size 1 is never used.
  for (auto [size, stride, plainStride] :
       llvm::zip_equal(shape, strides, plain.strides))
    if (size != 1 && stride != plainStride)
      return false;
  return true;
}

StridedLayout StridedLayout::transposed(ArrayRef<int64_t> permutation) const {
  StridedLayout result;
  result.offset = offset;
  for (int64_t from : permutation) {
    result.shape.push_back(shape[from]);
    result.strides.push_back(strides[from]);
  }
  return result;
}

StridedLayout StridedLayout::untransposed(ArrayRef<int64_t> permutation) const {
  StridedLayout result;
  result.offset = offset;
  result.shape.assign(shape.size(), 0);
  result.strides.assign(shape.size(), 0);
  for (auto [i, from] : llvm::enumerate(permutation)) {
    result.shape[from] = shape[i];
    result.strides[from] = strides[i];
  }
  return result;
}

StridedLayout StridedLayout::sliced(ArrayRef<int64_t> offsets,
                                    ArrayRef<int64_t> sizes,
                                    ArrayRef<int64_t> steps) const {
  StridedLayout result;
  result.offset = offset;
  for (auto [d, size] : llvm::enumerate(sizes)) {
    int64_t step = steps.empty() ? 1 : steps[d];
    result.offset += offsets[d] * strides[d];
    result.shape.push_back(size);
    result.strides.push_back(strides[d] * step);
  }
  return result;
}

std::optional<StridedLayout>
StridedLayout::reshaped(ArrayRef<int64_t> newShape) const {
  // Numpy's no-copy reshape: match runs of old and new dims of equal
  // product; the old dims of a run must be evenly spaced (each stride the
  // next one's times its size), and the new dims then split that spacing.
  // Dims of size 1 carry no stride.
  SmallVector<int64_t, 4> oldShape, oldStrides;
  for (auto [size, stride] : llvm::zip_equal(shape, strides)) {
    if (size == 0)
      return std::nullopt;
    if (size != 1) {
      oldShape.push_back(size);
      oldStrides.push_back(stride);
    }
  }
  StridedLayout result;
  result.offset = offset;
  result.shape.assign(newShape.begin(), newShape.end());
  result.strides.assign(newShape.size(), 1);
  size_t oldBegin = 0, newBegin = 0;
  while (newBegin < newShape.size() && oldBegin < oldShape.size()) {
    size_t oldEnd = oldBegin + 1, newEnd = newBegin + 1;
    int64_t oldProduct = oldShape[oldBegin], newProduct = newShape[newBegin];
    if (newProduct == 0)
      return std::nullopt;
    while (oldProduct != newProduct) {
      if (newProduct < oldProduct) {
        if (newEnd == newShape.size())
          return std::nullopt;
        newProduct *= newShape[newEnd++];
      } else {
        if (oldEnd == oldShape.size())
          return std::nullopt;
        oldProduct *= oldShape[oldEnd++];
      }
    }
    for (size_t k = oldBegin; k + 1 < oldEnd; ++k)
      if (oldStrides[k] != oldShape[k + 1] * oldStrides[k + 1])
        return std::nullopt;
    result.strides[newEnd - 1] = oldStrides[oldEnd - 1];
    for (size_t k = newEnd - 1; k > newBegin; --k)
      result.strides[k - 1] = result.strides[k] * newShape[k];
    oldBegin = oldEnd;
    newBegin = newEnd;
  }
  // Whatever is left on either side has size 1 (the element counts agree).
  for (size_t k = newBegin; k < newShape.size(); ++k)
    if (newShape[k] != 1)
      return std::nullopt;
  if (oldBegin != oldShape.size())
    return std::nullopt;
  return result;
}

std::optional<StridedLayout> StridedLayout::through(Operation *viewOp) const {
  if (auto reshape = dyn_cast<ReshapeOp>(viewOp))
    return reshaped(reshape.getType().getShape());
  if (auto transpose = dyn_cast<TransposeOp>(viewOp))
    return transposed(transpose.getPermutation());
  if (auto slice = dyn_cast<SliceOp>(viewOp))
    return sliced(slice.getOffsets(), slice.getSizes(),
                  slice.getStrides().value_or(ArrayRef<int64_t>{}));
  return std::nullopt;
}

std::optional<StridedLayout> StridedLayout::before(Operation *viewOp,
                                                   unsigned operand) const {
  if (auto reshape = dyn_cast<ReshapeOp>(viewOp))
    return reshaped(
        cast<RankedTensorType>(reshape.getInput().getType()).getShape());
  if (auto transpose = dyn_cast<TransposeOp>(viewOp))
    return untransposed(transpose.getPermutation());
  if (auto append = dyn_cast<KVCacheAppendOp>(viewOp)) {
    // The update is rows [L, L + T) of each head of the appended cache.
    if (operand != 1)
      return std::nullopt;
    ArrayRef<int64_t> update = append.getUpdate().getType().getShape();
    return sliced({0, 0, append.getCache().getType().getDimSize(2), 0}, update,
                  {});
  }
  if (auto concat = dyn_cast<ConcatOp>(viewOp)) {
    // The operand is the slice of the result from the sizes of those before.
    int64_t rank = shape.size();
    auto axis = static_cast<int64_t>(concat.getAxis());
    if (axis < 0)
      axis += rank;
    SmallVector<int64_t, 4> offsets(rank, 0);
    for (Value before : concat.getInputs().take_front(operand))
      offsets[axis] +=
          cast<RankedTensorType>(before.getType()).getDimSize(axis);
    return sliced(offsets,
                  cast<RankedTensorType>(concat.getInputs()[operand].getType())
                      .getShape(),
                  {});
  }
  return std::nullopt;
}

int64_t StridedLayout::offsetOf(ArrayRef<int64_t> index) const {
  return offset + linearize(index, strides);
}

bool memwall::isViewOp(Operation *op) {
  return isa<ReshapeOp, TransposeOp, SliceOp>(op);
}
