//===- DataMovementOps.cpp - Layout ops -----------------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reshape (a view), transpose, slice, concat, broadcast and pad: no FLOPs,
// only the bytes they move.
// Per op: type inference, verifier, VJP, payload, aliasing, reference
// attributes and FLOP/byte counts (formulas in docs/cost-model.md).
//
//===----------------------------------------------------------------------===//

#include "MemWallOpUtils.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallBitVector.h"

#include <numeric>

using namespace mlir;
using namespace memwall;
using namespace memwall::detail;

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          ReshapeOp::Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input =
      getStaticTensor(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  for (int64_t dim : adaptor.getShape())
    if (dim < 0)
      return emitOptionalError(loc, "shape ", shapeString(adaptor.getShape()),
                               " has a negative dimension");
  auto describe = [](CheckedInt elements) {
    std::optional<int64_t> count = elements.get();
    return count ? std::to_string(*count) : "more than 2^63";
  };
  CheckedInt inputElements = countElements(*input);
  CheckedInt elements = CheckedInt::product(adaptor.getShape());
  if (elements.overflowed() || inputElements.overflowed() ||
      elements != inputElements)
    return emitOptionalError(loc, "cannot reshape ",
                             shapeString(input->getShape()), " (",
                             describe(inputElements), " elements) to ",
                             shapeString(adaptor.getShape()), " (",
                             describe(elements), " elements)");
  inferred.push_back(
      RankedTensorType::get(adaptor.getShape(), input->getElementType()));
  return success();
}

LogicalResult ReshapeOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  OpBuilder &builder = vjp.getBuilder();
  vjp.accumulate(
      getInput(),
      ReshapeOp::create(builder, vjp.getLoc(), resultGradients[0],
                        builder.getDenseI64ArrayAttr(inputType.getShape())));
  return success();
}

Value ReshapeOp::getAliasedOperand(unsigned) { return getInput(); }

// A reshape of a contiguous tensor is a view: no kernel, no traffic.
int64_t ReshapeOp::getFlops() { return 0; }

int64_t ReshapeOp::getBytesRead() { return 0; }

int64_t ReshapeOp::getBytesWritten() { return 0; }

bool ReshapeOp::launchesKernel() { return false; }

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            TransposeOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input =
      getStaticTensor(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = input->getRank();
  llvm::SmallBitVector seen(rank);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t dim : perm) {
    if (!valid || dim < 0 || dim >= rank || seen.test(dim)) {
      valid = false;
      break;
    }
    seen.set(dim);
  }
  if (!valid)
    return emitOptionalError(loc, "permutation ", shapeString(perm),
                             " is not a permutation of the ", rank,
                             " input dimensions");
  SmallVector<int64_t> shape;
  for (int64_t dim : perm)
    shape.push_back(input->getDimSize(dim));
  inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

LogicalResult TransposeOp::buildVJP(VJPBuilder &vjp,
                                    ValueRange resultGradients) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  OpBuilder &builder = vjp.getBuilder();
  Value gradient = resultGradients[0];
  // The gradient of a matrix transpose, when it is a product nothing else
  // reads: (op(L) op(R))^T = op(R)^T op(L)^T, the product with its operands
  // swapped, so no transpose kernel runs (a K-major fp8 weight copy's
  // gradient comes out in the weight's layout).
  auto product = gradient.getDefiningOp<MatmulOp>();
  if (perm.size() == 2 && perm[0] == 1 && product && !product.getBias() &&
      product->use_empty() && product.getLhs().getType().getRank() == 2 &&
      product.getRhs().getType().getRank() == 2) {
    auto unit = [&](bool set) { return set ? builder.getUnitAttr() : nullptr; };
    // Where the product was: the backward reaches a weight copy's transpose
    // last, and its operands would stay live until then.
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(product);
    Value swapped = MatmulOp::create(
        builder, product.getLoc(), product.getRhs(), product.getLhs(), Value(),
        unit(!product.getTransposeRhs()), unit(!product.getTransposeLhs()));
    swapped.getDefiningOp()->setAttrs(product->getDiscardableAttrDictionary());
    product.erase();
    vjp.accumulate(getInput(), swapped);
    return success();
  }
  vjp.accumulate(getInput(),
                 TransposeOp::create(builder, vjp.getLoc(), gradient,
                                     builder.getDenseI64ArrayAttr(inverse)));
  return success();
}

int64_t TransposeOp::getFlops() { return 0; }

namespace {
/// A transpose that keeps the order of the dims larger than 1 (e.g. a
/// decode step's heads split, [1, 1, H, D] to [1, H, 1, D]) moves no element:
/// it is a reshape, which costs no kernel.
struct TransposeMovingNoElement : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    ArrayRef<int64_t> inputShape = op.getInput().getType().getShape();
    int64_t previous = -1;
    for (int64_t from : op.getPermutation()) {
      if (inputShape[from] == 1)
        continue;
      if (from < previous)
        return rewriter.notifyMatchFailure(op, "moves elements");
      previous = from;
    }
    rewriter.replaceOpWithNewOp<ReshapeOp>(
        op, op.getType(), op.getInput(),
        rewriter.getDenseI64ArrayAttr(op.getType().getShape()));
    return success();
  }
};
} // namespace

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<TransposeMovingNoElement>(context);
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        SliceOp::Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input =
      getStaticTensor(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  int64_t rank = input->getRank();
  ArrayRef<int64_t> offsets = adaptor.getOffsets(), sizes = adaptor.getSizes();
  SmallVector<int64_t> strides(rank, 1);
  if (std::optional<ArrayRef<int64_t>> given = adaptor.getStrides())
    strides.assign(given->begin(), given->end());
  if (static_cast<int64_t>(offsets.size()) != rank ||
      static_cast<int64_t>(sizes.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return emitOptionalError(loc, "offsets, sizes and strides must each have ",
                             rank, " entries (the input rank)");
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (offsets[dim] < 0 || sizes[dim] < 1 || strides[dim] < 1)
      return emitOptionalError(loc, "dimension ", dim,
                               ": offset must be >= 0, size and stride >= 1");
    // Overflow means the index is far beyond any static dimension.
    int64_t step, last;
    if (llvm::MulOverflow(sizes[dim] - 1, strides[dim], step) ||
        llvm::AddOverflow(offsets[dim], step, last))
      last = std::numeric_limits<int64_t>::max();
    if (last >= input->getDimSize(dim))
      return emitOptionalError(loc, "dimension ", dim, ": slice reaches index ",
                               last, " of a dimension of size ",
                               input->getDimSize(dim));
  }
  inferred.push_back(RankedTensorType::get(sizes, input->getElementType()));
  return success();
}

LogicalResult SliceOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  if (std::optional<ArrayRef<int64_t>> strides = getStrides();
      strides && llvm::any_of(*strides, [](int64_t s) { return s != 1; }))
    return VJPBuilder::notDifferentiable(
        *this, "strided slices are not differentiated");
  auto inputType = cast<RankedTensorType>(getInput().getType());
  SmallVector<int64_t> high;
  for (auto [dim, offset, size] :
       llvm::zip_equal(inputType.getShape(), getOffsets(), getSizes()))
    high.push_back(dim - offset - size);
  OpBuilder &builder = vjp.getBuilder();
  vjp.accumulate(getInput(), PadOp::create(builder, vjp.getLoc(),
                                           resultGradients[0], getOffsetsAttr(),
                                           builder.getDenseI64ArrayAttr(high)));
  return success();
}

void SliceOp::getReferenceAttrs(NamedAttrList &attrs) {
  if (!getStrides())
    attrs.set(getStridesAttrName(),
              DenseI64ArrayAttr::get(
                  getContext(), SmallVector<int64_t>(getOffsets().size(), 1)));
}

// A slice reads only the elements it selects.
int64_t SliceOp::getFlops() { return 0; }

int64_t SliceOp::getBytesRead() {
  return getTensorByteSize(getResult().getType());
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         ConcatOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "needs at least one input");
  FailureOr<RankedTensorType> first =
      getStaticTensor(loc, adaptor.getInputs().front(), "input #0");
  if (failed(first))
    return failure();
  FailureOr<int64_t> axis =
      normalizeAxis(loc, adaptor.getAxis(), first->getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first->getShape());
  for (auto [index, value] :
       llvm::enumerate(adaptor.getInputs().drop_front())) {
    FailureOr<RankedTensorType> type = getStaticTensor(loc, value, "input");
    if (failed(type))
      return failure();
    if (type->getElementType() != first->getElementType() ||
        type->getRank() != first->getRank())
      return emitOptionalError(loc, "input #", index + 1,
                               " differs in element type or rank from input "
                               "#0");
    for (int64_t dim = 0; dim < first->getRank(); ++dim)
      if (dim != *axis && type->getDimSize(dim) != first->getDimSize(dim))
        return emitOptionalError(
            loc, "input #", index + 1, " has shape ",
            shapeString(type->getShape()), ", which differs from ",
            shapeString(first->getShape()), " outside axis ", *axis);
    std::optional<int64_t> joined =
        (CheckedInt(shape[*axis]) + type->getDimSize(*axis)).get();
    if (!joined)
      return emitOptionalError(loc, "the inputs' axis-", *axis,
                               " sizes add up to more than int64");
    shape[*axis] = *joined;
  }
  inferred.push_back(RankedTensorType::get(shape, first->getElementType()));
  return success();
}

LogicalResult ConcatOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  OpBuilder &builder = vjp.getBuilder();
  Location loc = vjp.getLoc();
  auto resultType = cast<RankedTensorType>(getType());
  int64_t axis = getAxis();
  if (axis < 0)
    axis += resultType.getRank();
  int64_t offset = 0;
  for (Value input : getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    if (vjp.needsGradient(input)) {
      SmallVector<int64_t> offsets(type.getRank(), 0);
      offsets[axis] = offset;
      vjp.accumulate(
          input, SliceOp::create(builder, loc, resultGradients[0],
                                 builder.getDenseI64ArrayAttr(offsets),
                                 builder.getDenseI64ArrayAttr(type.getShape()),
                                 nullptr));
    }
    offset += type.getDimSize(axis);
  }
  return success();
}

void ConcatOp::getReferenceAttrs(NamedAttrList &attrs) {
  normalizeAxisAttr(attrs, getAxisAttrName(), getAxis(), getType().getRank());
}

int64_t ConcatOp::getFlops() { return 0; }

//===----------------------------------------------------------------------===//
// BroadcastOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            BroadcastOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input =
      getStaticTensor(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> target = adaptor.getShape();
  SmallVector<int64_t> broadcast;
  if (llvm::any_of(target, [](int64_t d) { return d < 0; }) ||
      !OpTrait::util::getBroadcastedShape(input->getShape(), target,
                                          broadcast) ||
      ArrayRef<int64_t>(broadcast) != target)
    return emitOptionalError(loc, "input of shape ",
                             shapeString(input->getShape()),
                             " does not broadcast to ", shapeString(target));
  inferred.push_back(RankedTensorType::get(target, input->getElementType()));
  return success();
}

// Pure data movement.
int64_t BroadcastOp::getFlops() { return 0; }

// Each element is its input's element: the kernel reads the input in its
// broadcast pattern.
Value BroadcastOp::buildScalarPayload(OpBuilder &, Location,
                                      ValueRange operands, Type, Value) {
  return operands[0];
}

//===----------------------------------------------------------------------===//
// PadOp
//===----------------------------------------------------------------------===//

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      PadOp::Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input =
      getStaticTensor(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh();
  if (static_cast<int64_t>(low.size()) != input->getRank() ||
      static_cast<int64_t>(high.size()) != input->getRank())
    return emitOptionalError(loc,
                             "low and high need one entry per dimension "
                             "(rank ",
                             input->getRank(), ")");
  SmallVector<int64_t> shape;
  for (auto [size, before, after] :
       llvm::zip_equal(input->getShape(), low, high)) {
    if (before < 0 || after < 0)
      return emitOptionalError(loc, "padding must be >= 0, got low ",
                               shapeString(low), " high ", shapeString(high));
    std::optional<int64_t> padded = (CheckedInt(size) + before + after).get();
    if (!padded)
      return emitOptionalError(loc, "padding ", shapeString(low), " and ",
                               shapeString(high), " of ",
                               shapeString(input->getShape()),
                               " gives a dimension larger than int64");
    shape.push_back(*padded);
  }
  inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

int64_t PadOp::getFlops() { return 0; }
