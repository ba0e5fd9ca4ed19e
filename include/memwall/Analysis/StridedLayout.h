//===- StridedLayout.h - Layout ops as strided views -------------*- C++
//-*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Where the elements of a value produced by reshapes, transposes and slices
// lie in the buffer the chain starts from: an offset and a stride per
// dimension, as a strided memref describes them. A kernel that indexes its
// operand through such a layout reads the source buffer directly, so the
// layout ops cost no kernel and no traffic (Inductor's views, XLA's layout
// assignment).
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_STRIDEDLAYOUT_H
#define MEMWALL_ANALYSIS_STRIDEDLAYOUT_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace memwall {

/// Element (i0, .., in) of a value lies at `offset + sum(ik * strides[k])`
/// elements into its source buffer.
struct StridedLayout {
  int64_t offset = 0;
  llvm::SmallVector<int64_t, 4> shape;
  llvm::SmallVector<int64_t, 4> strides;

  /// A row-major buffer of `shape`.
  static StridedLayout contiguous(llvm::ArrayRef<int64_t> shape);

  /// Whether the layout is the row-major buffer of its shape from offset 0.
  bool isContiguous() const;

  /// Result dimension i is dimension permutation[i] (memwall.transpose).
  StridedLayout transposed(llvm::ArrayRef<int64_t> permutation) const;

  /// The layout of a transpose's input when its result is laid out as this:
  /// dimension permutation[i] is result dimension i.
  StridedLayout untransposed(llvm::ArrayRef<int64_t> permutation) const;

  /// sizes[i] elements of dimension i from offsets[i] every steps[i]
  /// (memwall.slice; empty steps are 1).
  StridedLayout sliced(llvm::ArrayRef<int64_t> offsets,
                       llvm::ArrayRef<int64_t> sizes,
                       llvm::ArrayRef<int64_t> steps) const;

  /// The same elements in row-major order under `newShape`
  /// (memwall.reshape); nullopt when they are not a strided view of the
  /// buffer (merging dimensions whose elements are not evenly spaced, e.g.
  /// the heads and sequence dims of a transposed value).
  std::optional<StridedLayout> reshaped(llvm::ArrayRef<int64_t> newShape) const;

  /// The layout of a reshape, transpose or slice of a value laid out as
  /// this; nullopt for any other op or a reshape reshaped() refuses.
  std::optional<StridedLayout> through(mlir::Operation *viewOp) const;

  /// The layout of operand `operand` of `viewOp` when its result is laid
  /// out as this (a reshape, transpose, concat or the update of a KV-cache
  /// append run backwards: how a kernel writes a value that a consumer sees
  /// through them); nullopt for a slice, any other op or a reshape
  /// reshaped() refuses.
  std::optional<StridedLayout> before(mlir::Operation *viewOp,
                                      unsigned operand = 0) const;

  /// The buffer offset of element `index`.
  int64_t offsetOf(llvm::ArrayRef<int64_t> index) const;
};

/// Whether `op` is a reshape, transpose or slice: an op a consumer may read
/// through as a strided view instead of running it.
bool isViewOp(mlir::Operation *op);

} // namespace memwall

#endif // MEMWALL_ANALYSIS_STRIDEDLAYOUT_H
