//===- MemWallOpUtils.h - Helpers shared by the op families -----*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Dialect/MemWall/IR: the shape, diagnostic, reference-export
// and counting helpers that more than one op family uses. A helper one family
// uses stays static in that family's file. Defined in MemWallOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_DIALECT_MEMWALL_IR_MEMWALLOPUTILS_H
#define MEMWALL_LIB_DIALECT_MEMWALL_IR_MEMWALLOPUTILS_H

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include <optional>
#include <string>

namespace memwall {
namespace detail {

//===----------------------------------------------------------------------===//
// Shapes and diagnostics
//===----------------------------------------------------------------------===//

/// The operand as a statically shaped ranked tensor, or a diagnostic.
mlir::FailureOr<mlir::RankedTensorType>
getStaticTensor(std::optional<mlir::Location> loc, mlir::Value value,
                llvm::StringRef name);

/// Normalizes a possibly negative axis; fails if out of range.
mlir::FailureOr<int64_t> normalizeAxis(std::optional<mlir::Location> loc,
                                       int64_t axis, int64_t rank,
                                       llvm::StringRef what = "axis");

/// `[d0, d1, ...]`, for diagnostics.
std::string shapeString(llvm::ArrayRef<int64_t> shape);

/// The type of the single operand named `name`, as the result type.
mlir::LogicalResult
inferSameAsOperand(std::optional<mlir::Location> loc, mlir::Value operand,
                   llvm::StringRef name,
                   llvm::SmallVectorImpl<mlir::Type> &results);

/// Checks that `actual` is `expected`, naming the value in the diagnostic.
mlir::LogicalResult expectType(mlir::Operation *op, mlir::Type actual,
                               mlir::Type expected, llvm::StringRef name);

/// Element type a contraction on `elementType` produces: tensor cores
/// accumulate fp8 and int8 products wider, so those come back as bf16 / i32.
mlir::Type getContractionResultElementType(mlir::Type elementType);

/// `OP::inferReturnTypes` for an op whose result has its `input`'s type.
#define MEMWALL_INFER_SAME_AS_INPUT(OP)                                        \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, OP::Adaptor adaptor,         \
      SmallVectorImpl<Type> &inferred) {                                       \
    return ::memwall::detail::inferSameAsOperand(loc, adaptor.getInput(),      \
                                                 "input", inferred);           \
  }

//===----------------------------------------------------------------------===//
// Reference attributes (ReferenceAttrsOpInterface)
//===----------------------------------------------------------------------===//

/// Records `value` of the unit attribute `name` as a boolean, so that the
/// reference graph says false where the attribute is absent.
void setFlag(mlir::NamedAttrList &attrs, mlir::StringAttr name, bool value);

/// Records the enum attribute `name` by its keyword (the IR holds an i32).
template <typename EnumT>
void setKeyword(mlir::NamedAttrList &attrs, mlir::StringAttr name,
                EnumT value) {
  attrs.set(name,
            mlir::StringAttr::get(name.getContext(), stringifyEnum(value)));
}

/// Replaces the integer attribute `name` (an axis) by its value normalized
/// for `rank` (negative axes count from the end).
void normalizeAxisAttr(mlir::NamedAttrList &attrs, mlir::StringAttr name,
                       int64_t axis, int64_t rank);

//===----------------------------------------------------------------------===//
// Counts (CostOpInterface)
//===----------------------------------------------------------------------===//
//
// Counts are CheckedInt until they are returned: kUncountable when they do
// not fit int64 (the op verifiers reject those), never a wrapped number.

/// Elements of the op's (single) result.
CheckedInt resultElements(mlir::Operation *op);

/// Rows of length `rowLength` in a tensor of `elements` elements (none when
/// the rows are empty).
CheckedInt numRows(CheckedInt elements, int64_t rowLength);

} // namespace detail
} // namespace memwall

#endif // MEMWALL_LIB_DIALECT_MEMWALL_IR_MEMWALLOPUTILS_H
