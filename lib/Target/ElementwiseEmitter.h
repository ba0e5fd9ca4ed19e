//===- ElementwiseEmitter.h - elementwise ops on vectors of lanes -*- C++
//-*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// How every generated kernel evaluates a kernel's elementwise ops at one
// vector of its iteration space: inputs are read at a flat iteration index
// according to their AccessPattern and widened to f32, each op's scalar
// payload (ElementwiseOpInterface) runs per lane in f32, and outputs are
// narrowed and written with one vector store. The elementwise and row
// kernels (KernelCodegen.cpp) and the GEMM epilogue (GemmCodegen.cpp) share
// it.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_ELEMENTWISEEMITTER_H
#define MEMWALL_LIB_TARGET_ELEMENTWISEEMITTER_H

#include "memwall/Analysis/FusionCost.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/DenseMap.h"

namespace memwall {

/// Per-element values of one vector of the iteration space: `width` f32
/// scalars per value.
using Lanes = llvm::SmallVector<mlir::Value, 8>;

class ElementwiseEmitter {
public:
  /// Emits with `b` (at its insertion point) vectors of `width` elements of
  /// the iteration space, reading `inputs`.
  ElementwiseEmitter(mlir::ImplicitLocOpBuilder &b,
                     llvm::ArrayRef<KernelInput> inputs, int64_t width)
      : b(b), inputs(inputs), width(width) {}

  /// The kernel parameter (flat memref) holding tensor `value`.
  void setMemRef(mlir::Value value, mlir::Value memref) {
    memrefs[value] = memref;
  }
  mlir::Value getMemRef(mlir::Value value) const {
    return memrefs.lookup(value);
  }
  int64_t getWidth() const { return width; }

  mlir::Value toF32(mlir::Value scalar);
  mlir::Value fromF32(mlir::Value scalar, mlir::Type type);

  /// The `width` elements of `input` at flat iteration index `flat` (a
  /// multiple of the vector width), widened to f32.
  Lanes loadInput(const KernelInput &input, mlir::Value flat);

  /// Narrows `lanes` to `output`'s element type and stores them at `flat`.
  void storeOutput(mlir::Value output, const Lanes &lanes, mlir::Value flat);

  /// Evaluates `ops` at one vector of the iteration space, reading inputs
  /// on first use; `lanes` holds the values already known.
  void evaluate(llvm::ArrayRef<mlir::Operation *> ops, mlir::Value flat,
                llvm::DenseMap<mlir::Value, Lanes> &lanes);

  /// `value`'s lanes: computed, or an input read now.
  Lanes lanesOf(mlir::Value value, mlir::Value flat,
                llvm::DenseMap<mlir::Value, Lanes> &lanes);

private:
  mlir::ImplicitLocOpBuilder &b;
  llvm::ArrayRef<KernelInput> inputs;
  int64_t width;
  llvm::DenseMap<mlir::Value, mlir::Value> memrefs;
};

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_ELEMENTWISEEMITTER_H
