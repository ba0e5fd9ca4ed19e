//===- ElementwiseOps.cpp - Elementwise ops -------------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Pointwise ops: NumPy-broadcasting arithmetic, activations, dropout, cast
// (including a weight-only dequantize that runs inside its GEMM) and the
// activation gradient. Each has its scalar payload (ElementwiseOpInterface),
// which the fusion lowering inlines into one loop body.
// Per op: type inference, verifier, VJP, payload, aliasing, reference
// attributes and FLOP/byte counts (formulas in docs/cost-model.md).
//
//===----------------------------------------------------------------------===//

#include "MemWallOpUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace memwall;
using namespace memwall::detail;

/// NumPy broadcasting of two operands of one element type.
static LogicalResult inferBroadcast(std::optional<Location> loc, Value lhs,
                                    Value rhs,
                                    SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> lhsType = getStaticTensor(loc, lhs, "lhs");
  FailureOr<RankedTensorType> rhsType = getStaticTensor(loc, rhs, "rhs");
  if (failed(lhsType) || failed(rhsType))
    return failure();
  if (lhsType->getElementType() != rhsType->getElementType())
    return emitOptionalError(loc,
                             "operands must have the same element type, "
                             "got ",
                             lhsType->getElementType(), " and ",
                             rhsType->getElementType());
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(lhsType->getShape(),
                                          rhsType->getShape(), shape))
    return emitOptionalError(loc, "shapes ", shapeString(lhsType->getShape()),
                             " and ", shapeString(rhsType->getShape()),
                             " do not broadcast");
  inferred.push_back(RankedTensorType::get(shape, lhsType->getElementType()));
  return success();
}

#define MEMWALL_INFER_BROADCAST(OP)                                            \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, OP::Adaptor adaptor,         \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferBroadcast(loc, adaptor.getLhs(), adaptor.getRhs(), inferred);  \
  }

//===----------------------------------------------------------------------===//
// AddOp
//===----------------------------------------------------------------------===//

MEMWALL_INFER_BROADCAST(AddOp)

LogicalResult AddOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  Value dy = resultGradients[0];
  vjp.accumulate(getLhs(), vjp.reduceToShape(dy, getLhs()));
  vjp.accumulate(getRhs(), vjp.reduceToShape(dy, getRhs()));
  return success();
}

Value AddOp::buildScalarPayload(OpBuilder &b, Location loc, ValueRange operands,
                                Type, Value) {
  return arith::AddFOp::create(b, loc, operands[0], operands[1]);
}

/// `perElement` FLOPs for each element of the op's result.
static int64_t flopsPerResultElement(Operation *op, int64_t perElement) {
  return (CheckedInt(perElement) * resultElements(op)).saturated();
}

// One add / subtract / multiply / divide / compare per element.
int64_t AddOp::getFlops() { return flopsPerResultElement(*this, 1); }

//===----------------------------------------------------------------------===//
// SubOp
//===----------------------------------------------------------------------===//

MEMWALL_INFER_BROADCAST(SubOp)

LogicalResult SubOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  Value dy = resultGradients[0];
  vjp.accumulate(getLhs(), vjp.reduceToShape(dy, getLhs()));
  if (vjp.needsGradient(getRhs()))
    vjp.accumulate(getRhs(), vjp.scale(vjp.reduceToShape(dy, getRhs()), -1.0));
  return success();
}

Value SubOp::buildScalarPayload(OpBuilder &b, Location loc, ValueRange operands,
                                Type, Value) {
  return arith::SubFOp::create(b, loc, operands[0], operands[1]);
}

int64_t SubOp::getFlops() { return flopsPerResultElement(*this, 1); }

//===----------------------------------------------------------------------===//
// MulOp
//===----------------------------------------------------------------------===//

MEMWALL_INFER_BROADCAST(MulOp)

LogicalResult MulOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  Value dy = resultGradients[0];
  OpBuilder &b = vjp.getBuilder();
  Location loc = vjp.getLoc();
  if (vjp.needsGradient(getLhs()))
    vjp.accumulate(
        getLhs(),
        vjp.reduceToShape(MulOp::create(b, loc, dy, getRhs()), getLhs()));
  if (vjp.needsGradient(getRhs()))
    vjp.accumulate(
        getRhs(),
        vjp.reduceToShape(MulOp::create(b, loc, dy, getLhs()), getRhs()));
  return success();
}

Value MulOp::buildScalarPayload(OpBuilder &b, Location loc, ValueRange operands,
                                Type, Value) {
  return arith::MulFOp::create(b, loc, operands[0], operands[1]);
}

int64_t MulOp::getFlops() { return flopsPerResultElement(*this, 1); }

//===----------------------------------------------------------------------===//
// DivOp
//===----------------------------------------------------------------------===//

MEMWALL_INFER_BROADCAST(DivOp)

#undef MEMWALL_INFER_BROADCAST

LogicalResult DivOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  Value dy = resultGradients[0];
  OpBuilder &b = vjp.getBuilder();
  Location loc = vjp.getLoc();
  if (vjp.needsGradient(getLhs()))
    vjp.accumulate(
        getLhs(),
        vjp.reduceToShape(DivOp::create(b, loc, dy, getRhs()), getLhs()));
  if (vjp.needsGradient(getRhs())) {
    // d(a/b)/db = -(a/b)/b = -y/b.
    Value t = MulOp::create(b, loc, dy, getResult());
    t = DivOp::create(b, loc, t, getRhs());
    vjp.accumulate(getRhs(), vjp.scale(vjp.reduceToShape(t, getRhs()), -1.0));
  }
  return success();
}

Value DivOp::buildScalarPayload(OpBuilder &b, Location loc, ValueRange operands,
                                Type, Value) {
  return arith::DivFOp::create(b, loc, operands[0], operands[1]);
}

int64_t DivOp::getFlops() { return flopsPerResultElement(*this, 1); }

//===----------------------------------------------------------------------===//
// ScaleOp
//===----------------------------------------------------------------------===//

LogicalResult ScaleOp::verify() {
  double factor = getFactor().convertToDouble();
  if (!std::isfinite(factor))
    return emitOpError("factor must be a finite number, got ") << factor;
  return success();
}

LogicalResult ScaleOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  vjp.accumulate(getInput(),
                 vjp.scale(resultGradients[0], getFactor().convertToDouble()));
  return success();
}

/// `value` as a constant of the scalar float type `type`.
static Value floatConstant(OpBuilder &builder, Location loc, Type type,
                           double value) {
  auto floatType = cast<FloatType>(type);
  APFloat rounded(value);
  bool losesInfo;
  rounded.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                  &losesInfo);
  return arith::ConstantFloatOp::create(builder, loc, floatType, rounded);
}

Value ScaleOp::buildScalarPayload(OpBuilder &b, Location loc,
                                  ValueRange operands, Type computeType,
                                  Value) {
  return arith::MulFOp::create(
      b, loc, operands[0],
      floatConstant(b, loc, computeType, getFactor().convertToDouble()));
}

int64_t ScaleOp::getFlops() { return flopsPerResultElement(*this, 1); }

/// `grad * f'(x)` for a pointwise activation `f`.
static Value activationGrad(VJPBuilder &vjp, ActivationKind kind, Value x,
                            Value grad) {
  return ActivationGradOp::create(vjp.getBuilder(), vjp.getLoc(), x.getType(),
                                  kind, x, grad)
      .getResult();
}

//===----------------------------------------------------------------------===//
// GeluOp
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  vjp.accumulate(getInput(),
                 activationGrad(vjp,
                                getApproximation() == GeluApproximation::Tanh
                                    ? ActivationKind::GeluTanh
                                    : ActivationKind::GeluErf,
                                getInput(), resultGradients[0]));
  return success();
}

void GeluOp::getReferenceAttrs(NamedAttrList &attrs) {
  setKeyword(attrs, getApproximationAttrName(), getApproximation());
}

Value GeluOp::buildScalarPayload(OpBuilder &b, Location loc,
                                 ValueRange operands, Type computeType, Value) {
  auto constant = [&](double value) {
    return floatConstant(b, loc, computeType, value);
  };
  Value x = operands[0];
  Value inner;
  if (getApproximation() == GeluApproximation::Tanh) {
    Value cube =
        arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
    Value sum = arith::AddFOp::create(
        b, loc, x, arith::MulFOp::create(b, loc, constant(0.044715), cube));
    inner = math::TanhOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, constant(std::sqrt(2.0 / M_PI)), sum));
  } else {
    inner = math::ErfOp::create(
        b, loc, arith::MulFOp::create(b, loc, x, constant(M_SQRT1_2)));
  }
  Value half = arith::MulFOp::create(b, loc, constant(0.5), x);
  return arith::MulFOp::create(
      b, loc, half, arith::AddFOp::create(b, loc, constant(1.0), inner));
}

int64_t GeluOp::getFlops() {
  // erf:  0.5 * x * (1 + erf(x * 1/sqrt(2)))       -> mul, erf, add, mul, mul
  // tanh: 0.5 * x * (1 + tanh(k * (x + c * x^3)))  -> 2 mul (x^3), mul c,
  //       add x, mul k, tanh, add 1, mul x, mul 0.5
  int64_t perElement = getApproximation() == GeluApproximation::Tanh ? 9 : 5;
  return flopsPerResultElement(*this, perElement);
}

//===----------------------------------------------------------------------===//
// SiluOp
//===----------------------------------------------------------------------===//

LogicalResult SiluOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  vjp.accumulate(getInput(), activationGrad(vjp, ActivationKind::Silu,
                                            getInput(), resultGradients[0]));
  return success();
}

/// `x * sigmoid(x)` on a scalar, as `x / (1 + exp(-x))`.
static Value scalarSilu(OpBuilder &b, Location loc, Value x) {
  Value negative = arith::NegFOp::create(b, loc, x);
  Value denominator =
      arith::AddFOp::create(b, loc, floatConstant(b, loc, x.getType(), 1.0),
                            math::ExpOp::create(b, loc, negative));
  return arith::DivFOp::create(b, loc, x, denominator);
}

Value SiluOp::buildScalarPayload(OpBuilder &b, Location loc,
                                 ValueRange operands, Type, Value) {
  return scalarSilu(b, loc, operands[0]);
}

// x / (1 + exp(-x)): negate, exp, add, divide.
static constexpr int64_t kSiluFlopsPerElement = 4;

int64_t SiluOp::getFlops() {
  return flopsPerResultElement(*this, kSiluFlopsPerElement);
}

//===----------------------------------------------------------------------===//
// SigmoidOp
//===----------------------------------------------------------------------===//

// d sigmoid(x) = s (1 - s) dx, from the result s: dy * (s - s * s).
LogicalResult SigmoidOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  OpBuilder &b = vjp.getBuilder();
  Location loc = vjp.getLoc();
  Value s = getResult();
  Value slope = SubOp::create(b, loc, s, MulOp::create(b, loc, s, s));
  vjp.accumulate(getInput(), MulOp::create(b, loc, resultGradients[0], slope));
  return success();
}

Value SigmoidOp::buildScalarPayload(OpBuilder &b, Location loc,
                                    ValueRange operands, Type computeType,
                                    Value) {
  Value x = operands[0];
  Value denominator = arith::AddFOp::create(
      b, loc, floatConstant(b, loc, computeType, 1.0),
      math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x)));
  return arith::DivFOp::create(b, loc, floatConstant(b, loc, computeType, 1.0),
                               denominator);
}

// 1 / (1 + exp(-x)): negate, exp, add, divide.
int64_t SigmoidOp::getFlops() { return flopsPerResultElement(*this, 4); }

//===----------------------------------------------------------------------===//
// ReluOp
//===----------------------------------------------------------------------===//

LogicalResult ReluOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  vjp.accumulate(getInput(), activationGrad(vjp, ActivationKind::Relu,
                                            getInput(), resultGradients[0]));
  return success();
}

Value ReluOp::buildScalarPayload(OpBuilder &b, Location loc,
                                 ValueRange operands, Type computeType, Value) {
  return arith::MaximumFOp::create(b, loc, operands[0],
                                   floatConstant(b, loc, computeType, 0.0));
}

int64_t ReluOp::getFlops() { return flopsPerResultElement(*this, 1); }

//===----------------------------------------------------------------------===//
// TanhOp
//===----------------------------------------------------------------------===//

LogicalResult TanhOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  vjp.accumulate(getInput(), activationGrad(vjp, ActivationKind::Tanh,
                                            getInput(), resultGradients[0]));
  return success();
}

Value TanhOp::buildScalarPayload(OpBuilder &b, Location loc,
                                 ValueRange operands, Type, Value) {
  return math::TanhOp::create(b, loc, operands[0]);
}

// tanh counts as one transcendental.
int64_t TanhOp::getFlops() { return flopsPerResultElement(*this, 1); }

//===----------------------------------------------------------------------===//
// SwigluOp
//===----------------------------------------------------------------------===//

LogicalResult SwigluOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  // y = silu(g) * u.
  Value dy = resultGradients[0];
  OpBuilder &b = vjp.getBuilder();
  Location loc = vjp.getLoc();
  Value g = getGate(), u = getUp();
  if (vjp.needsGradient(g))
    vjp.accumulate(g, activationGrad(vjp, ActivationKind::Silu, g,
                                     MulOp::create(b, loc, dy, u)));
  if (vjp.needsGradient(u))
    vjp.accumulate(u, MulOp::create(b, loc, dy, SiluOp::create(b, loc, g)));
  return success();
}

Value SwigluOp::buildScalarPayload(OpBuilder &b, Location loc,
                                   ValueRange operands, Type, Value) {
  return arith::MulFOp::create(b, loc, scalarSilu(b, loc, operands[0]),
                               operands[1]);
}

// silu(gate) * up.
int64_t SwigluOp::getFlops() {
  return flopsPerResultElement(*this, kSiluFlopsPerElement + 1);
}

//===----------------------------------------------------------------------===//
// DropoutOp
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0 && rate < 1))
    return emitOpError("rate must be in [0, 1), got ") << rate;
  return success();
}

LogicalResult DropoutOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  // The mask is regenerated from the same seed.
  vjp.accumulate(getInput(), DropoutOp::create(vjp.getBuilder(), vjp.getLoc(),
                                               resultGradients[0],
                                               getRateAttr(), getSeedAttr()));
  return success();
}

/// Word 0 of Philox4x32-10 of counter {lo32(index), hi32(index), 0, 0} and
/// key {lo32(seed), hi32(seed)}, built in i32 (the key schedule folds into
/// constants).
static Value buildPhiloxWord(OpBuilder &b, Location loc, Value index,
                             uint64_t seed) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto constant = [&](uint32_t value) -> Value {
    return arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(i32, static_cast<int32_t>(value)));
  };
  Value shift = arith::ConstantOp::create(b, loc, b.getIntegerAttr(i64, 32));
  // The low and high 32-bit words of an i64.
  auto split = [&](Value wide) -> std::pair<Value, Value> {
    return {arith::TruncIOp::create(b, loc, i32, wide),
            arith::TruncIOp::create(
                b, loc, i32, arith::ShRUIOp::create(b, loc, wide, shift))};
  };
  // The 64-bit product of a 32-bit constant and `x`, split (what
  // arith.mului_extended lowers to, in ops every kernel interpreter runs).
  auto multiply = [&](uint32_t factor, Value x) {
    return split(arith::MulIOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, i64, x),
        arith::ConstantOp::create(b, loc, b.getIntegerAttr(i64, factor))));
  };
  auto [indexLow, indexHigh] =
      split(arith::IndexCastUIOp::create(b, loc, i64, index));
  std::array<Value, 4> counter = {indexLow, indexHigh, constant(0),
                                  constant(0)};
  uint32_t key0 = static_cast<uint32_t>(seed),
           key1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    auto [low0, high0] = multiply(0xD2511F53u, counter[0]);
    auto [low1, high1] = multiply(0xCD9E8D57u, counter[2]);
    counter = {arith::XOrIOp::create(
                   b, loc, high1,
                   arith::XOrIOp::create(b, loc, counter[1], constant(key0))),
               low1,
               arith::XOrIOp::create(
                   b, loc, high0,
                   arith::XOrIOp::create(b, loc, counter[3], constant(key1))),
               low0};
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  return counter[0];
}

Value DropoutOp::buildScalarPayload(OpBuilder &b, Location loc,
                                    ValueRange operands, Type computeType,
                                    Value index) {
  double rate = getRate().convertToDouble();
  if (rate == 0)
    return operands[0];
  // Drop below floor(rate · 2^32) (rate < 1, so the threshold fits).
  auto threshold = static_cast<uint32_t>(std::floor(rate * 4294967296.0));
  Value word = buildPhiloxWord(b, loc, index, getSeed());
  Value keep = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::uge, word,
      arith::ConstantOp::create(
          b, loc,
          b.getIntegerAttr(b.getI32Type(), static_cast<int32_t>(threshold))));
  // The scale as the reference rounds it: 1 / (1 - rate) in f32.
  Value scaled = arith::MulFOp::create(
      b, loc, operands[0],
      floatConstant(b, loc, computeType,
                    static_cast<float>(1.0 / (1.0 - rate))));
  return arith::SelectOp::create(b, loc, keep, scaled,
                                 floatConstant(b, loc, computeType, 0.0));
}

// Compare against the threshold, select, rescale by 1/(1-rate). The
// counter-based random bits are integer work and not counted.
int64_t DropoutOp::getFlops() { return flopsPerResultElement(*this, 3); }

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

LogicalResult CastOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       CastOp::Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input =
      getStaticTensor(loc, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  inferred.push_back(input->clone(adaptor.getElementType()));
  return success();
}

LogicalResult CastOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  vjp.accumulate(getInput(), vjp.castTo(resultGradients[0],
                                        VJPBuilder::gradientType(getInput())));
  return success();
}

bool CastOp::isFusibleElementwise() {
  // A dequantize at use belongs to its GEMM's mainloop, not to a kernel of
  // its own.
  return !isDequantizeAtUse(*this) &&
         isa<FloatType>(getElementTypeOrSelf(getInput().getType())) &&
         isa<FloatType>(getElementType());
}

Value CastOp::buildScalarPayload(OpBuilder &b, Location loc,
                                 ValueRange operands, Type computeType, Value) {
  // Round to the target type, as the stored tensor would be.
  Type target = getElementType();
  if (target == computeType)
    return operands[0];
  Value rounded = arith::TruncFOp::create(b, loc, target, operands[0]);
  return arith::ExtFOp::create(b, loc, computeType, rounded);
}

/// A dequantize at use runs inside its GEMM: it reads the quantized buffer.
Value CastOp::getAliasedOperand(unsigned) {
  return isDequantizeAtUse(*this) ? getInput() : Value();
}

// Conversion: one per element. A dequantize at use runs inside the GEMM
// that reads it (the matmul is charged the quantized bytes): no kernel, no
// traffic, and its multiply by the scale is not counted, as the softmax of
// attention is not.
int64_t CastOp::getFlops() {
  return isDequantizeAtUse(*this) ? 0 : flopsPerResultElement(*this, 1);
}

int64_t CastOp::getBytesRead() {
  return isDequantizeAtUse(*this) ? 0 : memwall::detail::sumOperandBytes(*this);
}

int64_t CastOp::getBytesWritten() {
  return isDequantizeAtUse(*this) ? 0 : memwall::detail::sumResultBytes(*this);
}

bool CastOp::launchesKernel() { return !isDequantizeAtUse(*this); }

//===----------------------------------------------------------------------===//
// ActivationGradOp
//===----------------------------------------------------------------------===//

void ActivationGradOp::getReferenceAttrs(NamedAttrList &attrs) {
  setKeyword(attrs, getActivationAttrName(), getActivation());
}

// f'(x) * dy in the compute type, the formulas of the reference
// interpreter's activation derivatives.
Value ActivationGradOp::buildScalarPayload(OpBuilder &b, Location loc,
                                           ValueRange operands,
                                           Type computeType, Value) {
  auto constant = [&](double value) {
    return floatConstant(b, loc, computeType, value);
  };
  auto mul = [&](Value lhs, Value rhs) {
    return arith::MulFOp::create(b, loc, lhs, rhs).getResult();
  };
  auto add = [&](Value lhs, Value rhs) {
    return arith::AddFOp::create(b, loc, lhs, rhs).getResult();
  };
  auto sub = [&](Value lhs, Value rhs) {
    return arith::SubFOp::create(b, loc, lhs, rhs).getResult();
  };
  Value x = operands[0], dy = operands[1], one = constant(1.0);
  Value derivative;
  switch (getActivation()) {
  case ActivationKind::GeluErf: {
    // Phi(x) + x phi(x).
    Value cdf =
        mul(constant(0.5),
            add(one, math::ErfOp::create(b, loc, mul(x, constant(M_SQRT1_2)))));
    Value pdf =
        mul(constant(0.5 * M_2_SQRTPI * M_SQRT1_2),
            math::ExpOp::create(b, loc, mul(constant(-0.5), mul(x, x))));
    derivative = add(cdf, mul(x, pdf));
    break;
  }
  case ActivationKind::GeluTanh: {
    // 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2), t = tanh(k (x + c x^3)).
    Value k = constant(std::sqrt(2.0 / M_PI)), c = constant(0.044715);
    Value square = mul(x, x);
    Value t =
        math::TanhOp::create(b, loc, mul(k, add(x, mul(c, mul(square, x)))));
    Value slope = mul(mul(mul(constant(0.5), x), sub(one, mul(t, t))),
                      mul(k, add(one, mul(constant(3 * 0.044715), square))));
    derivative = add(mul(constant(0.5), add(one, t)), slope);
    break;
  }
  case ActivationKind::Silu: {
    // s (1 + x (1 - s)), s = sigmoid(x).
    Value s = arith::DivFOp::create(
        b, loc, one,
        add(one,
            math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x))));
    derivative = mul(s, add(one, mul(x, sub(one, s))));
    break;
  }
  case ActivationKind::Relu: {
    Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x,
                                           constant(0.0));
    derivative = arith::SelectOp::create(b, loc, positive, one, constant(0.0));
    break;
  }
  case ActivationKind::Tanh: {
    Value t = math::TanhOp::create(b, loc, x);
    derivative = sub(one, mul(t, t));
    break;
  }
  }
  return mul(dy, derivative);
}

int64_t ActivationGradOp::getFlops() {
  // dy * f'(x). f'(x) per element: gelu erf = Phi(x) + x * phi(x) (erf, exp
  // and 7 mul/add); gelu tanh = the forward's 9 plus the sech^2 chain (7);
  // silu = sigma (3) and sigma * (1 + x * (1 - sigma)) (4); relu = compare
  // and select; tanh = tanh, square, subtract. Plus the multiply by dy.
  int64_t perElement = 0;
  switch (getActivation()) {
  case ActivationKind::GeluErf:
    perElement = 9;
    break;
  case ActivationKind::GeluTanh:
    perElement = 16;
    break;
  case ActivationKind::Silu:
    perElement = 7;
    break;
  case ActivationKind::Relu:
    perElement = 2;
    break;
  case ActivationKind::Tanh:
    perElement = 3;
    break;
  }
  return flopsPerResultElement(*this, perElement + 1);
}
