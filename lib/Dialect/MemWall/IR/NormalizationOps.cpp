//===- NormalizationOps.cpp - Normalizations and reductions ---------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Row ops over the last dimension (LayerNorm, RMSNorm, softmax; reduce on
// any axis) and the norm gradients. The row reductions say so through
// RowReductionOpInterface, which fusion uses to end a group.
// Per op: type inference, verifier, VJP, payload, aliasing, reference
// attributes and FLOP/byte counts (formulas in docs/cost-model.md).
//
//===----------------------------------------------------------------------===//

#include "MemWallOpUtils.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace memwall;
using namespace memwall::detail;

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

MEMWALL_INFER_SAME_AS_INPUT(LayerNormOp)

/// Checks that `param` (a norm's weight or bias) has shape [D] for the last
/// dimension D of `input`.
static LogicalResult verifyFeatureVector(Operation *op, Value param,
                                         StringRef name, Value input) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto paramType = cast<RankedTensorType>(param.getType());
  if (inputType.getRank() < 1)
    return op->emitOpError("input must have rank >= 1");
  int64_t features = inputType.getShape().back();
  if (paramType.getRank() != 1 || paramType.getDimSize(0) != features)
    return op->emitOpError() << name << " must have shape [" << features
                             << "] (the last dimension of the input), got "
                             << shapeString(paramType.getShape());
  return success();
}

static LogicalResult verifyPositiveEpsilon(Operation *op, double epsilon) {
  if (!(epsilon > 0) || !std::isfinite(epsilon))
    return op->emitOpError("epsilon must be a positive finite number, got ")
           << epsilon;
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyFeatureVector(*this, getWeight(), "weight", getInput())))
    return failure();
  if (getBias() &&
      failed(verifyFeatureVector(*this, getBias(), "bias", getInput())))
    return failure();
  return verifyPositiveEpsilon(*this, getEpsilon().convertToDouble());
}

LogicalResult LayerNormOp::buildVJP(VJPBuilder &vjp,
                                    ValueRange resultGradients) {
  auto grad = LayerNormGradOp::create(
      vjp.getBuilder(), vjp.getLoc(), getInput(), getWeight(),
      resultGradients[0], getEpsilon().convertToDouble(),
      static_cast<bool>(getBias()));
  vjp.accumulate(getInput(), grad.getInputGrad());
  vjp.accumulate(getWeight(), grad.getWeightGrad());
  if (getBias())
    vjp.accumulate(getBias(), grad.getBiasGrad());
  return success();
}

/// FLOPs of a row op: `perElement` per element and `perRow` per row of the
/// last dimension of `input`.
static int64_t rowOpFlops(Value input, int64_t perElement, int64_t perRow) {
  auto type = cast<RankedTensorType>(input.getType());
  CheckedInt elements = countElements(type);
  CheckedInt rows =
      numRows(elements, type.getRank() > 0 ? type.getShape().back() : 1);
  return (CheckedInt(perElement) * elements + CheckedInt(perRow) * rows)
      .saturated();
}

int64_t LayerNormOp::getFlops() {
  // Per row of D: mean (D adds + 1 div), center (D subs), variance (D squares
  // + D adds + 1 div), rstd (add eps + rsqrt = 2), normalize (D muls),
  // weight (D muls), bias (D adds): 6D + 4, plus D with bias.
  return rowOpFlops(getInput(), getBias() ? 7 : 6, 4);
}

//===----------------------------------------------------------------------===//
// RmsNormOp
//===----------------------------------------------------------------------===//

MEMWALL_INFER_SAME_AS_INPUT(RmsNormOp)

LogicalResult RmsNormOp::verify() {
  if (failed(verifyFeatureVector(*this, getWeight(), "weight", getInput())))
    return failure();
  return verifyPositiveEpsilon(*this, getEpsilon().convertToDouble());
}

LogicalResult RmsNormOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  auto grad = RmsNormGradOp::create(vjp.getBuilder(), vjp.getLoc(), getInput(),
                                    getWeight(), resultGradients[0],
                                    getEpsilon().convertToDouble());
  vjp.accumulate(getInput(), grad.getInputGrad());
  vjp.accumulate(getWeight(), grad.getWeightGrad());
  return success();
}

int64_t RmsNormOp::getFlops() {
  // Per row of D: squares (D), sum (D), div (1), add eps (1), rsqrt (1),
  // normalize (D), weight (D): 4D + 3.
  return rowOpFlops(getInput(), 4, 3);
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  return normalizeAxis(getLoc(), getAxis(), getInput().getType().getRank());
}

LogicalResult SoftmaxOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  // dx = y * (dy - sum(dy * y, axis)).
  OpBuilder &builder = vjp.getBuilder();
  Location loc = vjp.getLoc();
  Value y = getResult(), dy = resultGradients[0];
  int64_t rank = cast<RankedTensorType>(y.getType()).getRank();
  int64_t axis = getAxis();
  if (axis < 0)
    axis += rank;
  Value dyy = MulOp::create(builder, loc, dy, y);
  Value sum = ReduceOp::create(builder, loc, ReduceKind::Sum, dyy,
                               ArrayRef<int64_t>{axis}, /*keep_dims=*/true);
  Value centered = SubOp::create(builder, loc, dy, sum);
  vjp.accumulate(getInput(), MulOp::create(builder, loc, y, centered));
  return success();
}

bool SoftmaxOp::isRowReduction() {
  int64_t rank = getInput().getType().getRank();
  int64_t axis = static_cast<int64_t>(getAxis());
  return rank > 0 && (axis == -1 || axis == rank - 1);
}

void SoftmaxOp::getReferenceAttrs(NamedAttrList &attrs) {
  normalizeAxisAttr(attrs, getAxisAttrName(), getAxis(), getType().getRank());
}

int64_t SoftmaxOp::getFlops() {
  RankedTensorType type = getInput().getType();
  // I64Attr getters return uint64_t: reinterpret before normalizing.
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0)
    axis += type.getRank();
  CheckedInt elements = countElements(type);
  CheckedInt rows = numRows(elements, type.getDimSize(axis));
  // Per row of L: max (L), subtract (L), exp (L), sum (L), one reciprocal,
  // scale (L): 5L + 1.
  return (CheckedInt(5) * elements + rows).saturated();
}

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         ReduceOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input =
      getStaticTensor(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  int64_t rank = input->getRank();
  if (adaptor.getAxes().empty())
    return emitOptionalError(loc, "axes must not be empty");
  llvm::SmallBitVector reduced(rank);
  for (int64_t axis : adaptor.getAxes()) {
    FailureOr<int64_t> normalized = normalizeAxis(loc, axis, rank);
    if (failed(normalized))
      return failure();
    if (reduced.test(*normalized))
      return emitOptionalError(loc, "axis ", axis, " is reduced twice");
    reduced.set(*normalized);
  }
  SmallVector<int64_t> shape;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (!reduced.test(dim))
      shape.push_back(input->getDimSize(dim));
    else if (adaptor.getKeepDims())
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

LogicalResult ReduceOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  if (getKind() == ReduceKind::Max)
    return VJPBuilder::notDifferentiable(
        *this, "reduce max is not differentiated (its gradient needs the "
               "argmax)");
  OpBuilder &builder = vjp.getBuilder();
  Location loc = vjp.getLoc();
  auto inputType = cast<RankedTensorType>(getInput().getType());
  SmallVector<int64_t> kept(inputType.getShape());
  int64_t count = 1;
  for (int64_t axis : getAxes()) {
    int64_t a = axis < 0 ? axis + inputType.getRank() : axis;
    count *= kept[a];
    kept[a] = 1;
  }
  Value g = ReshapeOp::create(builder, loc, resultGradients[0],
                              builder.getDenseI64ArrayAttr(kept));
  g = BroadcastOp::create(builder, loc, g,
                          builder.getDenseI64ArrayAttr(inputType.getShape()));
  if (getKind() == ReduceKind::Mean)
    g = vjp.scale(g, 1.0 / static_cast<double>(count));
  vjp.accumulate(getInput(), g);
  return success();
}

bool ReduceOp::isRowReduction() {
  int64_t rank = getInput().getType().getRank();
  ArrayRef<int64_t> axes = getAxes();
  return rank > 0 && axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

void ReduceOp::getReferenceAttrs(NamedAttrList &attrs) {
  setKeyword(attrs, getKindAttrName(), getKind());
  int64_t rank = getInput().getType().getRank();
  SmallVector<int64_t> axes;
  for (int64_t axis : getAxes())
    axes.push_back(axis < 0 ? axis + rank : axis);
  attrs.set(getAxesAttrName(), DenseI64ArrayAttr::get(getContext(), axes));
  setFlag(attrs, getKeepDimsAttrName(), getKeepDims());
}

int64_t ReduceOp::getFlops() {
  CheckedInt inputElements = countElements(getInput().getType());
  // One combine per input element; mean adds a division per output.
  if (getKind() == ReduceKind::Mean)
    return (inputElements + resultElements(*this)).saturated();
  return inputElements.saturated();
}

//===----------------------------------------------------------------------===//
// LayerNormGradOp
//===----------------------------------------------------------------------===//

void LayerNormGradOp::build(OpBuilder &builder, OperationState &state,
                            Value input, Value weight, Value grad,
                            double epsilon, bool hasBias) {
  Type biasType = hasBias ? weight.getType() : Type();
  build(builder, state, input.getType(), weight.getType(), biasType, input,
        weight, grad, builder.getF64FloatAttr(epsilon),
        hasBias ? builder.getUnitAttr() : nullptr);
}

/// The shared checks of the norm gradients: weight is [D], grad and the
/// input gradient are typed like the input, the weight gradient like the
/// weight.
static LogicalResult verifyNormGrad(Operation *op, Value input, Value weight,
                                    Value grad, Value inputGrad,
                                    Value weightGrad, double epsilon) {
  if (failed(verifyFeatureVector(op, weight, "weight", input)) ||
      failed(expectType(op, grad.getType(), input.getType(), "grad")) ||
      failed(expectType(op, inputGrad.getType(), input.getType(),
                        "input gradient")) ||
      failed(expectType(op, weightGrad.getType(), weight.getType(),
                        "weight gradient")))
    return failure();
  return verifyPositiveEpsilon(op, epsilon);
}

LogicalResult LayerNormGradOp::verify() {
  if (failed(verifyNormGrad(*this, getInput(), getWeight(), getGrad(),
                            getInputGrad(), getWeightGrad(),
                            getEpsilon().convertToDouble())))
    return failure();
  if (getHasBias() != static_cast<bool>(getBiasGrad()))
    return emitOpError("has a bias gradient result exactly when has_bias is "
                       "set");
  if (getBiasGrad())
    return expectType(*this, getBiasGrad().getType(), getWeight().getType(),
                      "bias gradient");
  return success();
}

void LayerNormGradOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getHasBiasAttrName(), getHasBias());
}

int64_t LayerNormGradOp::getFlops() {
  // Recompute mean/rstd and xhat (4 per element + 4 per row), g = dy * w
  // (1), the two row means of g and g * xhat (3), dx = rstd * (g - mean(g) -
  // xhat * mean(g xhat)) (4), dweight += dy * xhat (2), dbias += dy (1).
  return rowOpFlops(getInput(), getHasBias() ? 14 : 13, 6);
}

//===----------------------------------------------------------------------===//
// RmsNormGradOp
//===----------------------------------------------------------------------===//

void RmsNormGradOp::build(OpBuilder &builder, OperationState &state,
                          Value input, Value weight, Value grad,
                          double epsilon) {
  build(builder, state, input.getType(), weight.getType(), input, weight, grad,
        builder.getF64FloatAttr(epsilon));
}

LogicalResult RmsNormGradOp::verify() {
  return verifyNormGrad(*this, getInput(), getWeight(), getGrad(),
                        getInputGrad(), getWeightGrad(),
                        getEpsilon().convertToDouble());
}

int64_t RmsNormGradOp::getFlops() {
  // Recompute r (2 per element + 3 per row), g = dy * w (1), mean(g * x)
  // (2), dx = r * g - x * r^3 * mean (3), dweight += dy * x * r (3).
  return rowOpFlops(getInput(), 11, 5);
}
