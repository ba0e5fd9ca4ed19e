//===- MemWallOps.cpp - memwall op semantics -----------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Per op: type inference, verifier, vector-Jacobian product
// (AutodiffOpInterface), scalar payload (ElementwiseOpInterface), the buffer
// its results alias and its reference attributes. Costs are in
// MemWallCosts.cpp.
//
// Shape rules live in inferReturnTypes so that builders, the parser and the
// verifier all apply the same ones (InferTypeOpInterface's verifier compares
// the spelled-out result type with them); verifiers check what does not
// determine the result type (attribute ranges, auxiliary operand shapes).
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace memwall;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

int64_t memwall::getElementByteSize(Type elementType) {
  return (elementType.getIntOrFloatBitWidth() + 7) / 8;
}

CheckedInt memwall::countElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  // Not ShapedType::getNumElements: it wraps.
  return CheckedInt::product(tensor.getShape());
}

CheckedInt memwall::countTensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !tensor.getElementType().isIntOrFloat())
    return 0;
  CheckedInt elements = countElements(tensor);
  // Sub-byte elements (i4) are packed: two to a byte. i1 takes a byte.
  unsigned bits = tensor.getElementType().getIntOrFloatBitWidth();
  if (bits > 1 && bits < 8) {
    std::optional<int64_t> count = elements.get();
    if (!count)
      return elements;
    // ceil(count * bits / 8) without the product overflowing first.
    return CheckedInt(*count / 8 * bits) +
           static_cast<int64_t>(llvm::divideCeil(*count % 8 * bits, 8));
  }
  return elements * getElementByteSize(tensor.getElementType());
}

int64_t memwall::getNumElements(Type type) {
  return countElements(type).saturated();
}

int64_t memwall::getTensorByteSize(Type type) {
  return countTensorBytes(type).saturated();
}

/// A count too large for int64, from its factors: "2^64" when it is a power
/// of two, else its value to three digits ("about 1.84e+19").
static std::string describeHugeCount(ArrayRef<double> factors) {
  double log2Count = 0;
  bool powerOfTwo = true;
  for (double factor : factors) {
    int exponent;
    powerOfTwo &= std::frexp(factor, &exponent) == 0.5;
    log2Count += std::log2(factor);
  }
  if (powerOfTwo)
    return "2^" + std::to_string(static_cast<int64_t>(std::llround(log2Count)));
  return llvm::formatv("about {0:e2}", std::exp2(log2Count)).str();
}

LogicalResult
memwall::verifyCountableTensor(Type type,
                               function_ref<InFlightDiagnostic()> emitError) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return success();
  SmallVector<double> factors(tensor.getShape());
  if (countElements(tensor).overflowed())
    return emitError() << type << " has " << describeHugeCount(factors)
                       << " elements, more than memwall can count (int64)";
  if (countTensorBytes(tensor).overflowed()) {
    // As countTensorBytes: i4 packs two to a byte, i1 takes a byte.
    Type element = tensor.getElementType();
    unsigned bits = element.getIntOrFloatBitWidth();
    factors.push_back(bits > 1 && bits < 8 ? bits / 8.0
                                           : getElementByteSize(element));
    return emitError() << type << " takes " << describeHugeCount(factors)
                       << " bytes, more than memwall can count (int64)";
  }
  return success();
}

LogicalResult memwall::detail::verifyCountable(Operation *op) {
  for (TypeRange types :
       {TypeRange(op->getOperandTypes()), TypeRange(op->getResultTypes())})
    for (Type type : types)
      if (failed(
              verifyCountableTensor(type, [&] { return op->emitOpError(); })))
        return failure();
  // Every count is computed with CheckedInt and reports kUncountable when it
  // does not fit.
  auto cost = cast<CostOpInterface>(op);
  CheckedInt read = CheckedInt::fromSaturated(cost.getBytesRead());
  CheckedInt written = CheckedInt::fromSaturated(cost.getBytesWritten());
  for (auto [count, what] :
       {std::pair<CheckedInt, StringRef>{
            CheckedInt::fromSaturated(cost.getFlops()), "FLOPs"},
        {read, "bytes read"},
        {written, "bytes written"},
        {read + written, "bytes moved (read + written)"}})
    if (count.overflowed())
      return op->emitOpError()
             << "its " << what << " are more than memwall can count (int64)";
  return success();
}

/// Storage a weight-only quantized GEMM dequantizes from.
static bool isQuantizedStorage(Type element) {
  return element.isInteger(4) || element.isInteger(8) ||
         isa<Float8E4M3FNType, Float8E5M2Type>(element);
}

/// The matmuls that read `value`, through fusion inputs; false when any
/// other op reads it.
static bool collectMatmulUsers(Value value, SmallVectorImpl<MatmulOp> &out) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (auto matmul = dyn_cast<MatmulOp>(user)) {
      out.push_back(matmul);
      continue;
    }
    auto fusion = dyn_cast<FusionOp>(user);
    if (!fusion ||
        !collectMatmulUsers(
            fusion.getBodyBlock().getArgument(use.getOperandNumber()), out))
      return false;
  }
  return true;
}

bool memwall::isDequantizeAtUse(CastOp cast) {
  Type from = cast.getInput().getType().getElementType();
  Type to = cast.getElementType();
  if (!isQuantizedStorage(from) || !isa<FloatType>(to) ||
      to.getIntOrFloatBitWidth() <= from.getIntOrFloatBitWidth())
    return false;
  SmallVector<MatmulOp> matmuls;
  return !cast.getResult().use_empty() &&
         collectMatmulUsers(cast.getResult(), matmuls);
}

int64_t memwall::getGemmOperandBytes(Value operand) {
  // Inside a fusion, a body argument is the fusion's input.
  if (auto arg = dyn_cast<BlockArgument>(operand))
    if (auto fusion = dyn_cast_or_null<FusionOp>(arg.getOwner()->getParentOp()))
      operand = fusion.getInputs()[arg.getArgNumber()];
  auto cast = operand.getDefiningOp<CastOp>();
  if (!cast || !isDequantizeAtUse(cast))
    return getTensorByteSize(operand.getType());
  RankedTensorType stored = cast.getInput().getType();
  SmallVector<MatmulOp> matmuls;
  collectMatmulUsers(cast.getResult(), matmuls);
  // Scales run along the output channels: elements / K of them, times the
  // groups along K for i4.
  int64_t k = std::max<int64_t>(matmuls.front().getDims().k, 1);
  int64_t channels = getNumElements(stored) / k;
  int64_t groups = stored.getElementType().isInteger(4)
                       ? llvm::divideCeil(k, kInt4GroupSize)
                       : 1;
  return (countTensorBytes(stored) +
          CheckedInt(channels) * groups * kQuantScaleBytes)
      .saturated();
}

ArgKind memwall::getArgKind(FunctionOpInterface function, unsigned index) {
  if (auto kind = function.getArgAttrOfType<ArgKindAttr>(
          index, MemWallDialect::kArgKindAttrName))
    return kind.getValue();
  return ArgKind::Input;
}

std::optional<int64_t> memwall::parseLayerIndex(StringRef name) {
  int64_t layer;
  if (!name.consume_front("layers.") || name.consumeInteger(10, layer) ||
      !(name.empty() || name.front() == '.' || name.front() == '+'))
    return std::nullopt;
  return layer;
}

MathPrecision memwall::getContractionPrecision(Type elementType) {
  if (elementType.isBF16())
    return MathPrecision::BF16;
  if (elementType.isF16())
    return MathPrecision::FP16;
  if (isa<Float8E4M3FNType, Float8E5M2Type>(elementType))
    return MathPrecision::FP8;
  if (elementType.isInteger(8))
    return MathPrecision::INT8;
  return MathPrecision::FP32;
}

/// Bytes of all `types`, kUncountable when they do not fit int64.
static int64_t sumTensorBytes(TypeRange types) {
  CheckedInt bytes = 0;
  for (Type type : types)
    bytes += countTensorBytes(type);
  return bytes.saturated();
}

int64_t memwall::detail::sumOperandBytes(Operation *op) {
  return sumTensorBytes(op->getOperandTypes());
}

int64_t memwall::detail::sumResultBytes(Operation *op) {
  return sumTensorBytes(op->getResultTypes());
}

/// Element type a contraction on `elementType` produces: tensor cores
/// accumulate fp8 and int8 products wider, so those come back as bf16 / i32.
static Type getContractionResultElementType(Type elementType) {
  MLIRContext *ctx = elementType.getContext();
  if (isa<Float8E4M3FNType, Float8E5M2Type>(elementType))
    return BFloat16Type::get(ctx);
  if (elementType.isInteger(8))
    return IntegerType::get(ctx, 32);
  return elementType;
}

/// The operand as a statically shaped ranked tensor, or a diagnostic.
static FailureOr<RankedTensorType>
getStaticTensor(std::optional<Location> loc, Value value, StringRef name) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return emitOptionalError(loc, name, " must be a statically shaped tensor");
  return type;
}

/// Normalizes a possibly negative axis; fails if out of range.
static FailureOr<int64_t> normalizeAxis(std::optional<Location> loc,
                                        int64_t axis, int64_t rank,
                                        StringRef what = "axis") {
  if (axis < -rank || axis >= rank)
    return emitOptionalError(loc, what, " ", axis, " is out of range for rank ",
                             rank);
  return axis < 0 ? axis + rank : axis;
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string result = "[";
  llvm::raw_string_ostream os(result);
  llvm::interleaveComma(shape, os);
  os << "]";
  return result;
}

LogicalResult memwall::detail::verifyInferredResultType(Operation *op) {
  SmallVector<Type> inferred;
  if (failed(cast<InferTypeOpInterface>(op).inferReturnTypes(
          op->getContext(), op->getLoc(), op->getOperands(),
          op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
          op->getRegions(), inferred)))
    return failure();
  if (TypeRange(inferred) != op->getResultTypes())
    return op->emitOpError("result type ")
           << op->getResultTypes() << " does not match the inferred type "
           << inferred;
  return success();
}

/// The type of the single operand named `name`, as the result type.
static LogicalResult inferSameAsOperand(std::optional<Location> loc,
                                        Value operand, StringRef name,
                                        SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> type = getStaticTensor(loc, operand, name);
  if (failed(type))
    return failure();
  results.push_back(*type);
  return success();
}

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

/// `grad * f'(x)` for a pointwise activation `f`.
static Value activationGrad(VJPBuilder &vjp, ActivationKind kind, Value x,
                            Value grad) {
  return ActivationGradOp::create(vjp.getBuilder(), vjp.getLoc(), x.getType(),
                                  kind, x, grad)
      .getResult();
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

/// `x * sigmoid(x)` on a scalar, as `x / (1 + exp(-x))`.
static Value scalarSilu(OpBuilder &b, Location loc, Value x) {
  Value negative = arith::NegFOp::create(b, loc, x);
  Value denominator =
      arith::AddFOp::create(b, loc, floatConstant(b, loc, x.getType(), 1.0),
                            math::ExpOp::create(b, loc, negative));
  return arith::DivFOp::create(b, loc, x, denominator);
}

/// Records `value` of the unit attribute `name` as a boolean, so that the
/// reference graph says false where the attribute is absent.
static void setFlag(NamedAttrList &attrs, StringAttr name, bool value) {
  attrs.set(name, BoolAttr::get(name.getContext(), value));
}

/// Records the enum attribute `name` by its keyword (the IR holds an i32).
template <typename EnumT>
static void setKeyword(NamedAttrList &attrs, StringAttr name, EnumT value) {
  attrs.set(name, StringAttr::get(name.getContext(), stringifyEnum(value)));
}

/// Replaces the integer attribute `name` (an axis) by its value normalized
/// for `rank` (negative axes count from the end).
static void normalizeAxisAttr(NamedAttrList &attrs, StringAttr name,
                              int64_t axis, int64_t rank) {
  auto i64 = IntegerType::get(name.getContext(), 64);
  attrs.set(name, IntegerAttr::get(i64, axis < 0 ? axis + rank : axis));
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

#define MEMWALL_INFER_SAME_AS_INPUT(OP)                                        \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, OP::Adaptor adaptor,         \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferSameAsOperand(loc, adaptor.getInput(), "input", inferred);     \
  }

MEMWALL_INFER_SAME_AS_INPUT(LayerNormOp)
MEMWALL_INFER_SAME_AS_INPUT(RmsNormOp)
MEMWALL_INFER_SAME_AS_INPUT(RopeOp)
#undef MEMWALL_INFER_SAME_AS_INPUT

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

MEMWALL_INFER_BROADCAST(AddOp)
MEMWALL_INFER_BROADCAST(SubOp)
MEMWALL_INFER_BROADCAST(MulOp)
MEMWALL_INFER_BROADCAST(DivOp)
#undef MEMWALL_INFER_BROADCAST

LogicalResult AddOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  Value dy = resultGradients[0];
  vjp.accumulate(getLhs(), vjp.reduceToShape(dy, getLhs()));
  vjp.accumulate(getRhs(), vjp.reduceToShape(dy, getRhs()));
  return success();
}

LogicalResult SubOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  Value dy = resultGradients[0];
  vjp.accumulate(getLhs(), vjp.reduceToShape(dy, getLhs()));
  if (vjp.needsGradient(getRhs()))
    vjp.accumulate(getRhs(), vjp.scale(vjp.reduceToShape(dy, getRhs()), -1.0));
  return success();
}

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

Value AddOp::buildScalarPayload(OpBuilder &b, Location loc, ValueRange operands,
                                Type) {
  return arith::AddFOp::create(b, loc, operands[0], operands[1]);
}

Value SubOp::buildScalarPayload(OpBuilder &b, Location loc, ValueRange operands,
                                Type) {
  return arith::SubFOp::create(b, loc, operands[0], operands[1]);
}

Value MulOp::buildScalarPayload(OpBuilder &b, Location loc, ValueRange operands,
                                Type) {
  return arith::MulFOp::create(b, loc, operands[0], operands[1]);
}

Value DivOp::buildScalarPayload(OpBuilder &b, Location loc, ValueRange operands,
                                Type) {
  return arith::DivFOp::create(b, loc, operands[0], operands[1]);
}

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

Value ScaleOp::buildScalarPayload(OpBuilder &b, Location loc,
                                  ValueRange operands, Type computeType) {
  return arith::MulFOp::create(
      b, loc, operands[0],
      floatConstant(b, loc, computeType, getFactor().convertToDouble()));
}

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
                                 ValueRange operands, Type computeType) {
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

LogicalResult SiluOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  vjp.accumulate(getInput(), activationGrad(vjp, ActivationKind::Silu,
                                            getInput(), resultGradients[0]));
  return success();
}

Value SiluOp::buildScalarPayload(OpBuilder &b, Location loc,
                                 ValueRange operands, Type) {
  return scalarSilu(b, loc, operands[0]);
}

LogicalResult ReluOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  vjp.accumulate(getInput(), activationGrad(vjp, ActivationKind::Relu,
                                            getInput(), resultGradients[0]));
  return success();
}

Value ReluOp::buildScalarPayload(OpBuilder &b, Location loc,
                                 ValueRange operands, Type computeType) {
  return arith::MaximumFOp::create(b, loc, operands[0],
                                   floatConstant(b, loc, computeType, 0.0));
}

LogicalResult TanhOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  vjp.accumulate(getInput(), activationGrad(vjp, ActivationKind::Tanh,
                                            getInput(), resultGradients[0]));
  return success();
}

Value TanhOp::buildScalarPayload(OpBuilder &b, Location loc,
                                 ValueRange operands, Type) {
  return math::TanhOp::create(b, loc, operands[0]);
}

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
                                   ValueRange operands, Type) {
  return arith::MulFOp::create(b, loc, scalarSilu(b, loc, operands[0]),
                               operands[1]);
}

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

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         MatmulOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> lhs =
      getStaticTensor(loc, adaptor.getLhs(), "lhs");
  FailureOr<RankedTensorType> rhs =
      getStaticTensor(loc, adaptor.getRhs(), "rhs");
  if (failed(lhs) || failed(rhs))
    return failure();
  if (lhs->getRank() < 2 || rhs->getRank() < 2)
    return emitOptionalError(loc, "operands must have rank >= 2, got ",
                             lhs->getRank(), " and ", rhs->getRank());
  if (lhs->getElementType() != rhs->getElementType())
    return emitOptionalError(
        loc, "operands must have the same element type, got ",
        lhs->getElementType(), " and ", rhs->getElementType());
  ArrayRef<int64_t> lhsShape = lhs->getShape(), rhsShape = rhs->getShape();
  int64_t lhsRank = lhs->getRank(), rhsRank = rhs->getRank();
  bool transLhs = adaptor.getTransposeLhs(),
       transRhs = adaptor.getTransposeRhs();
  int64_t m = lhsShape[lhsRank - (transLhs ? 1 : 2)];
  int64_t kLhs = lhsShape[lhsRank - (transLhs ? 2 : 1)];
  int64_t kRhs = rhsShape[rhsRank - (transRhs ? 1 : 2)];
  int64_t n = rhsShape[rhsRank - (transRhs ? 2 : 1)];
  if (kLhs != kRhs)
    return emitOptionalError(loc, "contraction dimensions differ: lhs has K = ",
                             kLhs, ", rhs has K = ", kRhs);
  SmallVector<int64_t> batch;
  if (!OpTrait::util::getBroadcastedShape(lhsShape.drop_back(2),
                                          rhsShape.drop_back(2), batch))
    return emitOptionalError(
        loc, "batch dimensions ", shapeString(lhsShape.drop_back(2)), " and ",
        shapeString(rhsShape.drop_back(2)), " do not broadcast");
  if (Value bias = adaptor.getBias()) {
    FailureOr<RankedTensorType> biasType = getStaticTensor(loc, bias, "bias");
    if (failed(biasType))
      return failure();
    if (biasType->getRank() != 1 || biasType->getDimSize(0) != n)
      return emitOptionalError(loc, "bias must have shape [", n, "], got ",
                               shapeString(biasType->getShape()));
  }
  batch.push_back(m);
  batch.push_back(n);
  inferred.push_back(RankedTensorType::get(
      batch, getContractionResultElementType(lhs->getElementType())));
  return success();
}

MatmulOp::Dims MatmulOp::getDims() {
  auto lhs = cast<RankedTensorType>(getLhs().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  ArrayRef<int64_t> lhsShape = lhs.getShape();
  int64_t rank = lhs.getRank();
  Dims dims;
  dims.m = result.getShape()[result.getRank() - 2];
  dims.n = result.getShape().back();
  dims.k = lhsShape[rank - (getTransposeLhs() ? 2 : 1)];
  dims.batch = CheckedInt::product(result.getShape().drop_back(2)).saturated();
  return dims;
}

LogicalResult MatmulOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  OpBuilder &builder = vjp.getBuilder();
  Location loc = vjp.getLoc();
  Value dy = resultGradients[0];
  Value a = getLhs(), b = getRhs();
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(b.getType());
  // fp8 operands are saved in fp8 and widened for the backward GEMMs.
  Value aWide = vjp.castTo(a, VJPBuilder::gradientType(a));
  Value bWide = vjp.castTo(b, VJPBuilder::gradientType(b));
  dy = vjp.castTo(dy, VJPBuilder::gradientType(aWide));
  auto unit = [&](bool set) { return set ? builder.getUnitAttr() : nullptr; };
  auto mm = [&](Value lhs, Value rhs, bool transposeLhs, bool transposeRhs) {
    return MatmulOp::create(builder, loc, lhs, rhs, Value(), unit(transposeLhs),
                            unit(transposeRhs))
        .getResult();
  };
  if (vjp.needsGradient(a)) {
    // dA = dY B^T, or (dY B^T)^T = B dY^T when A is stored transposed.
    Value da = ta ? mm(bWide, dy, tb, true) : mm(dy, bWide, false, !tb);
    vjp.accumulate(a, vjp.reduceToShape(da, a));
  }
  if (vjp.needsGradient(b)) {
    Value db;
    if (bType.getRank() == 2 && aType.getRank() > 2 && !ta) {
      // A linear layer: fold the batch into the rows so that one GEMM sums
      // over it (rather than a batched GEMM and a reduction).
      int64_t k = aType.getShape().back();
      int64_t n = cast<RankedTensorType>(dy.getType()).getShape().back();
      int64_t rows = k == 0 ? 0 : aType.getNumElements() / k;
      Value a2 = ReshapeOp::create(builder, loc, aWide,
                                   builder.getDenseI64ArrayAttr({rows, k}));
      Value dy2 = ReshapeOp::create(builder, loc, dy,
                                    builder.getDenseI64ArrayAttr({rows, n}));
      db = tb ? mm(dy2, a2, true, false) : mm(a2, dy2, true, false);
    } else {
      // dB = A^T dY, or dY^T A when B is stored transposed.
      db = tb ? mm(dy, aWide, true, ta) : mm(aWide, dy, !ta, false);
      db = vjp.reduceToShape(db, b);
    }
    vjp.accumulate(b, db);
  }
  if (Value bias = getBias(); bias && vjp.needsGradient(bias))
    vjp.accumulate(bias, vjp.reduceToShape(dy, bias));
  return success();
}

void MatmulOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getTransposeLhsAttrName(), getTransposeLhs());
  setFlag(attrs, getTransposeRhsAttrName(), getTransposeRhs());
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            AttentionOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> q =
      getStaticTensor(loc, adaptor.getQuery(), "query");
  FailureOr<RankedTensorType> k = getStaticTensor(loc, adaptor.getKey(), "key");
  FailureOr<RankedTensorType> v =
      getStaticTensor(loc, adaptor.getValue(), "value");
  if (failed(q) || failed(k) || failed(v))
    return failure();
  if (q->getRank() != 4 || k->getRank() != 4 || v->getRank() != 4)
    return emitOptionalError(loc, "query, key and value must have rank 4 "
                                  "[B, H, S, D]");
  // An fp8 KV cache is read as it is stored and dequantized in the kernel.
  bool fp8Cache = isa<Float8E4M3FNType, Float8E5M2Type>(k->getElementType()) &&
                  (q->getElementType().isBF16() || q->getElementType().isF16());
  if ((q->getElementType() != k->getElementType() && !fp8Cache) ||
      k->getElementType() != v->getElementType())
    return emitOptionalError(loc, "query, key and value must have the same "
                                  "element type (or key and value an fp8 "
                                  "cache read by bf16/f16 queries)");
  if (q->getDimSize(0) != k->getDimSize(0) ||
      k->getDimSize(0) != v->getDimSize(0))
    return emitOptionalError(loc, "batch sizes differ: query ",
                             q->getDimSize(0), ", key ", k->getDimSize(0),
                             ", value ", v->getDimSize(0));
  if (q->getDimSize(3) != k->getDimSize(3))
    return emitOptionalError(loc, "query head dim ", q->getDimSize(3),
                             " differs from key head dim ", k->getDimSize(3));
  if (k->getDimSize(1) != v->getDimSize(1) ||
      k->getDimSize(2) != v->getDimSize(2))
    return emitOptionalError(loc, "key and value must agree on heads and "
                                  "sequence length");
  inferred.push_back(RankedTensorType::get(
      {q->getDimSize(0), q->getDimSize(1), q->getDimSize(2), v->getDimSize(3)},
      getContractionResultElementType(q->getElementType())));
  return success();
}

static LogicalResult expectType(Operation *op, Type actual, Type expected,
                                StringRef name);

/// The rules attention, its tiled form and their backwards share: head
/// grouping, causal lengths, the scale and the mask's type and shape.
static LogicalResult verifyAttentionRules(Operation *op, Value query, Value key,
                                          Value mask, bool causal,
                                          std::optional<double> scale,
                                          Type resultElementType) {
  auto q = cast<RankedTensorType>(query.getType());
  auto k = cast<RankedTensorType>(key.getType());
  int64_t heads = q.getDimSize(1), kvHeads = k.getDimSize(1);
  if (kvHeads == 0 || heads % kvHeads != 0)
    return op->emitOpError("query heads (")
           << heads << ") must be a multiple of key/value heads (" << kvHeads
           << ")";
  int64_t sq = q.getDimSize(2), sk = k.getDimSize(2);
  if (causal && sq > sk)
    return op->emitOpError("causal attention needs query length <= key "
                           "length, got ")
           << sq << " > " << sk;
  if (scale && (!(*scale > 0) || !std::isfinite(*scale)))
    return op->emitOpError("scale must be a positive finite number, got ")
           << *scale;
  if (mask) {
    auto maskType = cast<RankedTensorType>(mask.getType());
    if (!maskType.getElementType().isInteger(1) &&
        maskType.getElementType() != resultElementType)
      return op->emitOpError("mask must be i1 or have the result element type ")
             << resultElementType;
    SmallVector<int64_t> scoresShape = {q.getDimSize(0), heads, sq, sk};
    SmallVector<int64_t> broadcast;
    if (maskType.getRank() != 4 ||
        !OpTrait::util::getBroadcastedShape(maskType.getShape(), scoresShape,
                                            broadcast) ||
        ArrayRef<int64_t>(broadcast) != ArrayRef<int64_t>(scoresShape))
      return op->emitOpError("mask of shape ")
             << shapeString(maskType.getShape())
             << " does not broadcast to the scores "
             << shapeString(scoresShape);
  }
  return success();
}

/// The backward ops' types: out and grad are the forward's result, each
/// gradient has its input's type. Returns the forward's result type.
template <typename GradOp>
static FailureOr<RankedTensorType> verifyAttentionGradTypes(GradOp op) {
  SmallVector<Type> forward;
  if (failed(AttentionOp::inferReturnTypes(
          op.getContext(), op.getLoc(),
          AttentionOp::Adaptor({op.getQuery(), op.getKey(), op.getValue()}),
          forward)))
    return failure();
  if (failed(expectType(op, op.getOut().getType(), forward[0], "out")) ||
      failed(expectType(op, op.getGrad().getType(), forward[0], "grad")) ||
      failed(expectType(op, op.getQueryGrad().getType(),
                        op.getQuery().getType(), "query gradient")) ||
      failed(expectType(op, op.getKeyGrad().getType(), op.getKey().getType(),
                        "key gradient")) ||
      failed(expectType(op, op.getValueGrad().getType(),
                        op.getValue().getType(), "value gradient")))
    return failure();
  return cast<RankedTensorType>(forward[0]);
}

LogicalResult AttentionOp::verify() {
  // The result type is the inferred one (InferredResultType's check).
  std::optional<double> scale;
  if (std::optional<APFloat> given = getScale())
    scale = given->convertToDouble();
  return verifyAttentionRules(*this, getQuery(), getKey(), getMask(),
                              getCausal(), scale,
                              getResult().getType().getElementType());
}

double AttentionOp::getEffectiveScale() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  auto q = cast<RankedTensorType>(getQuery().getType());
  return 1.0 / std::sqrt(static_cast<double>(q.getDimSize(3)));
}

LogicalResult AttentionOp::buildVJP(VJPBuilder &vjp,
                                    ValueRange resultGradients) {
  // A trained additive mask (a learned bias) gets the score gradient.
  Value mask = getMask();
  bool maskGrad = mask && vjp.needsGradient(mask) &&
                  isa<FloatType>(getElementTypeOrSelf(mask.getType()));
  auto grad = AttentionGradOp::create(vjp.getBuilder(), vjp.getLoc(), *this,
                                      resultGradients[0], maskGrad);
  vjp.accumulate(getQuery(), grad.getQueryGrad());
  vjp.accumulate(getKey(), grad.getKeyGrad());
  vjp.accumulate(getValue(), grad.getValueGrad());
  if (maskGrad)
    vjp.accumulate(mask, grad.getMaskGrad());
  return success();
}

void AttentionOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getCausalAttrName(), getCausal());
  attrs.set(getScaleAttrName(), FloatAttr::get(Float64Type::get(getContext()),
                                               getEffectiveScale()));
}

/// Query i sees keys 0 .. i + (sk - sq) under the bottom-right causal mask:
/// (sk - sq) + i + 1 of them.
static int64_t unmaskedPairs(int64_t sq, int64_t sk, bool causal) {
  if (!causal)
    return (CheckedInt(sq) * sk).saturated();
  // sq (sq + 1) / 2 without overflowing before the halving.
  CheckedInt triangle = sq % 2 == 0 ? CheckedInt(sq / 2) * (sq + 1)
                                    : CheckedInt(sq) * ((sq + 1) / 2);
  return (CheckedInt(sq) * (sk - sq) + triangle).saturated();
}

int64_t AttentionOp::getUnmaskedPairsPerHead() {
  return unmaskedPairs(getQuery().getType().getDimSize(2),
                       getKey().getType().getDimSize(2), getCausal());
}

/// Rows of the largest attention tile: 4096 rows of 16 bf16 elements are
/// 128 KiB, more than half of any GPU's shared memory. The bound keeps the
/// tiled traffic's closed forms short (they repeat per block residue).
static constexpr int64_t kMaxAttentionBlock = 4096;

/// The tile sizes and the log-sum-exp of the tiled forms.
static LogicalResult verifyTiles(Operation *op, Value query, Value lse,
                                 int64_t blockQ, int64_t blockKV) {
  auto q = cast<RankedTensorType>(query.getType());
  if (blockQ <= 0 || blockKV <= 0)
    return op->emitOpError("block sizes must be positive, got block_q ")
           << blockQ << " and block_kv " << blockKV;
  if (blockQ > kMaxAttentionBlock || blockKV > kMaxAttentionBlock)
    return op->emitOpError("block sizes must be at most ")
           << kMaxAttentionBlock << ", got block_q " << blockQ
           << " and block_kv " << blockKV;
  auto expected =
      RankedTensorType::get({q.getDimSize(0), q.getDimSize(1), q.getDimSize(2)},
                            Float32Type::get(op->getContext()));
  if (lse.getType() != expected)
    return op->emitOpError("lse must have type ")
           << expected << ", got " << lse.getType();
  return success();
}

LogicalResult FlashAttentionOp::verify() {
  SmallVector<Type> forward;
  if (failed(AttentionOp::inferReturnTypes(
          getContext(), getLoc(),
          AttentionOp::Adaptor({getQuery(), getKey(), getValue()}), forward)))
    return failure();
  if (getResult().getType() != forward[0])
    return emitOpError("result must have type ")
           << forward[0] << ", got " << getResult().getType();
  if (failed(verifyAttentionRules(*this, getQuery(), getKey(), getMask(),
                                  getCausal(), getScale().convertToDouble(),
                                  getResult().getType().getElementType())) ||
      failed(
          verifyTiles(*this, getQuery(), getLse(), getBlockQ(), getBlockKv())))
    return failure();
  int64_t sk = getKey().getType().getDimSize(2);
  int64_t blocks = (sk + getBlockKv() - 1) / getBlockKv();
  auto splits = static_cast<int64_t>(getNumSplits());
  if (splits < 1 || splits > std::max<int64_t>(blocks, 1))
    return emitOpError("splits must be between 1 and the ")
           << blocks << " key blocks, got " << splits;
  return success();
}

void FlashAttentionOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getCausalAttrName(), getCausal());
}

int64_t FlashAttentionOp::getUnmaskedPairsPerHead() {
  return unmaskedPairs(getQuery().getType().getDimSize(2),
                       getKey().getType().getDimSize(2), getCausal());
}

/// sum over i in [0, n) of floor((a i + b) / m), for n, a, b >= 0 and
/// m > 0, in O(log m) steps (the Euclidean-like reduction of AtCoder's
/// floor_sum). Overflowed when the sum does not fit int64; every term is
/// non-negative, so a partial sum that does not fit means the sum does not.
static CheckedInt sumFloorsOfLine(int64_t n, int64_t m, int64_t a, int64_t b) {
  CheckedInt sum = 0;
  while (n > 0) {
    if (a >= m) {
      CheckedInt pairs = n % 2 == 0 ? CheckedInt(n / 2) * (n - 1)
                                    : CheckedInt(n) * ((n - 1) / 2);
      sum += pairs * (a / m);
      a %= m;
    }
    if (b >= m) {
      sum += CheckedInt(n) * (b / m);
      b %= m;
    }
    if (sum.overflowed())
      return sum;
    // a, b < m < 2^63 and n < 2^63: the line's last value fits 128 bits,
    // and the next n (at most the current one) fits int64.
    unsigned __int128 last = static_cast<unsigned __int128>(a) * n + b;
    if (last < static_cast<unsigned __int128>(m))
      break;
    n = static_cast<int64_t>(last / m);
    b = static_cast<int64_t>(last % m);
    std::swap(m, a);
  }
  return sum;
}

int64_t FlashAttentionOp::getVisibleKeyBlocksPerKVHead() {
  // Blocks of bq rows over the rows = group x Sq query rows of one KV head;
  // row r is query r mod Sq of head r / Sq. A block sees the key blocks up
  // to the diagonal of its largest query, maxQuery: Sq - 1 when it holds
  // the last query of a head, else its last row's query. Closed forms per
  // head keep this O(1) in the shape (a loop over blocks took Sq / bq steps).
  int64_t sq = getQuery().getType().getDimSize(2);
  int64_t sk = getKey().getType().getDimSize(2);
  int64_t kvHeads = getKey().getType().getDimSize(1);
  int64_t bq = getBlockQ(), bkv = getBlockKv();
  if (kvHeads <= 0 || sq <= 0 || bq <= 0 || bkv <= 0)
    return 0;
  int64_t group = getQuery().getType().getDimSize(1) / kvHeads;
  std::optional<int64_t> rows = (CheckedInt(group) * sq).get();
  if (!rows)
    return kUncountable;
  int64_t blocks = llvm::divideCeil(*rows, bq);
  int64_t allKeyBlocks = llvm::divideCeil(sk, bkv);
  if (!getCausal() || bq >= sq)
    // Every block holds a head's last query (a block of bq >= Sq rows holds
    // every query; the last block ends at a head's end).
    return (CheckedInt(blocks) * allKeyBlocks).saturated();
  // Key blocks query i sees: keys up to i + (Sk - Sq).
  int64_t offset = sk - sq;
  auto keyBlocks = [&](int64_t maxQuery) {
    return (maxQuery + offset) / bkv + 1;
  };
  // bq < Sq: a block holds at most one head's last query. The blocks ending
  // in a head whose first row is `start` rows past a block boundary end at
  // queries first, first + bq, ... where first = bq - 1 - start; the first
  // of them holds the previous head's last query when start > 0. The sum
  // over the ends is a floor sum.
  auto blocksOfHead = [&](int64_t start, int64_t ends) {
    int64_t first = bq - 1 - start;
    CheckedInt total =
        sumFloorsOfLine(ends, bkv, bq, first + offset) + CheckedInt(ends);
    if (start != 0 && ends > 0)
      total += keyBlocks(sq - 1) - keyBlocks(first);
    return total;
  };
  // Heads but the last: their ends fall on [0, Sq). Head h starts
  // (h Sq) mod bq past a boundary, which repeats every bq / gcd(Sq, bq)
  // heads (block sizes are bounded, so this loop is short).
  int64_t period = bq / std::gcd(sq, bq);
  CheckedInt total = 0;
  for (int64_t head = 0; head < std::min(period, group - 1); ++head) {
    int64_t start =
        static_cast<int64_t>(static_cast<unsigned __int128>(head) * sq % bq);
    int64_t ends = (sq - 1 - (bq - 1 - start)) / bq + 1;
    int64_t repeats = (group - 2 - head) / period + 1;
    total += CheckedInt(repeats) * blocksOfHead(start, ends);
  }
  // The last head: ends before its last row, then the final block, which
  // ends on the last query.
  int64_t start =
      static_cast<int64_t>(static_cast<unsigned __int128>(group - 1) * sq % bq);
  int64_t first = bq - 1 - start;
  int64_t ends = first <= sq - 2 ? (sq - 2 - first) / bq + 1 : 0;
  total += blocksOfHead(start, ends) + keyBlocks(sq - 1);
  return total.saturated();
}

LogicalResult FlashAttentionGradOp::verify() {
  FailureOr<RankedTensorType> forward = verifyAttentionGradTypes(*this);
  if (failed(forward))
    return failure();
  return failure(
      failed(verifyAttentionRules(*this, getQuery(), getKey(), getMask(),
                                  getCausal(), getScale().convertToDouble(),
                                  forward->getElementType())) ||
      failed(
          verifyTiles(*this, getQuery(), getLse(), getBlockQ(), getBlockKv())));
}

void FlashAttentionGradOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getCausalAttrName(), getCausal());
}

int64_t FlashAttentionGradOp::getUnmaskedPairsPerHead() {
  return unmaskedPairs(getQuery().getType().getDimSize(2),
                       getKey().getType().getDimSize(2), getCausal());
}

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// RopeOp, EmbeddingOp, KVCacheAppendOp, CrossEntropyOp
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType positions = getPositions().getType();
  if (input.getRank() != 4)
    return emitOpError("input must have rank 4 [B, H, S, D], got rank ")
           << input.getRank();
  int64_t batch = input.getDimSize(0), seq = input.getDimSize(2);
  if (input.getDimSize(3) % 2 != 0)
    return emitOpError("head dimension must be even, got ")
           << input.getDimSize(3);
  bool perSequence = positions.getRank() == 1 && positions.getDimSize(0) == seq;
  bool perBatch = positions.getRank() == 2 &&
                  positions.getDimSize(0) == batch &&
                  positions.getDimSize(1) == seq;
  if (!perSequence && !perBatch)
    return emitOpError("positions must have shape [")
           << seq << "] or [" << batch << ", " << seq << "], got "
           << shapeString(positions.getShape());
  double theta = getTheta().convertToDouble();
  if (!(theta > 0) || !std::isfinite(theta))
    return emitOpError("theta must be a positive finite number, got ") << theta;
  return success();
}

LogicalResult RopeOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  OpBuilder &builder = vjp.getBuilder();
  vjp.accumulate(
      getInput(),
      RopeOp::create(builder, vjp.getLoc(), resultGradients[0], getPositions(),
                     getThetaAttr(),
                     getInverse() ? nullptr : builder.getUnitAttr()));
  return success();
}

void RopeOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getInverseAttrName(), getInverse());
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            EmbeddingOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> table =
      getStaticTensor(loc, adaptor.getTable(), "table");
  FailureOr<RankedTensorType> indices =
      getStaticTensor(loc, adaptor.getIndices(), "indices");
  if (failed(table) || failed(indices))
    return failure();
  if (table->getRank() != 2)
    return emitOptionalError(loc, "table must have rank 2 [V, D], got rank ",
                             table->getRank());
  SmallVector<int64_t> shape(indices->getShape());
  shape.push_back(table->getDimSize(1));
  inferred.push_back(RankedTensorType::get(shape, table->getElementType()));
  return success();
}

LogicalResult EmbeddingOp::buildVJP(VJPBuilder &vjp,
                                    ValueRange resultGradients) {
  Value table = getTable();
  if (!vjp.needsGradient(table))
    return success();
  auto tableType = cast<RankedTensorType>(table.getType());
  if (!isa<FloatType>(tableType.getElementType()) ||
      isa<Float8E4M3FNType, Float8E5M2Type>(tableType.getElementType()))
    return VJPBuilder::notDifferentiable(
        *this, "quantized embedding tables are not trained");
  vjp.accumulate(
      table, EmbeddingGradOp::create(vjp.getBuilder(), vjp.getLoc(), tableType,
                                     vjp.castTo(resultGradients[0], tableType),
                                     getIndices()));
  return success();
}

LogicalResult
KVCacheAppendOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  KVCacheAppendOp::Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> cache =
      getStaticTensor(loc, adaptor.getCache(), "cache");
  FailureOr<RankedTensorType> update =
      getStaticTensor(loc, adaptor.getUpdate(), "update");
  if (failed(cache) || failed(update))
    return failure();
  if (cache->getRank() != 4 || update->getRank() != 4)
    return emitOptionalError(loc, "cache and update must have rank 4 "
                                  "[B, Hkv, S, D]");
  if (cache->getElementType() != update->getElementType())
    return emitOptionalError(loc, "cache and update must have the same element "
                                  "type");
  for (int64_t dim : {0, 1, 3})
    if (cache->getDimSize(dim) != update->getDimSize(dim))
      return emitOptionalError(loc, "cache ", shapeString(cache->getShape()),
                               " and update ", shapeString(update->getShape()),
                               " must agree on every dimension but 2");
  SmallVector<int64_t> shape(cache->getShape());
  std::optional<int64_t> length =
      (CheckedInt(shape[2]) + update->getDimSize(2)).get();
  if (!length)
    return emitOptionalError(loc, "cache and update lengths add up to more "
                                  "than int64");
  shape[2] = *length;
  inferred.push_back(RankedTensorType::get(shape, cache->getElementType()));
  return success();
}

LogicalResult KVCacheAppendOp::buildVJP(VJPBuilder &, ValueRange) {
  return VJPBuilder::notDifferentiable(
      *this, "training graphs do not append to a KV cache");
}

Value KVCacheAppendOp::getAliasedOperand(unsigned) {
  return getCache(); // written in place into a preallocated cache
}

LogicalResult
CrossEntropyOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                 CrossEntropyOp::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> logits =
      getStaticTensor(loc, adaptor.getLogits(), "logits");
  FailureOr<RankedTensorType> labels =
      getStaticTensor(loc, adaptor.getLabels(), "labels");
  if (failed(logits) || failed(labels))
    return failure();
  if (logits->getRank() < 1 ||
      logits->getShape().drop_back() != labels->getShape())
    return emitOptionalError(
        loc, "labels shape ", shapeString(labels->getShape()),
        " must equal the logits shape without its class dimension ",
        shapeString(
            logits->getShape().drop_back(logits->getRank() > 0 ? 1 : 0)));
  Type f32 = Float32Type::get(ctx);
  if (adaptor.getReduction() == LossReduction::None)
    inferred.push_back(RankedTensorType::get(labels->getShape(), f32));
  else
    inferred.push_back(RankedTensorType::get({}, f32));
  return success();
}

void CrossEntropyOp::getReferenceAttrs(NamedAttrList &attrs) {
  setKeyword(attrs, getReductionAttrName(), getReduction());
}

LogicalResult CrossEntropyOp::buildVJP(VJPBuilder &vjp,
                                       ValueRange resultGradients) {
  vjp.accumulate(getLogits(),
                 CrossEntropyGradOp::create(vjp.getBuilder(), vjp.getLoc(),
                                            *this, resultGradients[0]));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
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
  vjp.accumulate(getInput(),
                 TransposeOp::create(builder, vjp.getLoc(), resultGradients[0],
                                     builder.getDenseI64ArrayAttr(inverse)));
  return success();
}

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
                                 ValueRange operands, Type computeType) {
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

#define GET_OP_CLASSES
#include "memwall/Dialect/MemWall/IR/MemWallOps.cpp.inc"

#include "memwall/Dialect/MemWall/IR/MemWallInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Training ops
//===----------------------------------------------------------------------===//

/// Checks that `actual` is `expected`, naming the value in the diagnostic.
static LogicalResult expectType(Operation *op, Type actual, Type expected,
                                StringRef name) {
  if (actual == expected)
    return success();
  return op->emitOpError() << name << " must have type " << expected << ", got "
                           << actual;
}

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

void AttentionGradOp::build(OpBuilder &builder, OperationState &state,
                            AttentionOp forward, Value grad,
                            bool withMaskGrad) {
  Type maskGrad;
  if (withMaskGrad)
    maskGrad = forward.getMask().getType();
  build(builder, state, forward.getQuery().getType(),
        forward.getKey().getType(), forward.getValue().getType(), maskGrad,
        forward.getQuery(), forward.getKey(), forward.getValue(),
        forward.getResult(), grad, forward.getMask(),
        forward.getCausal() ? builder.getUnitAttr() : nullptr,
        builder.getF64FloatAttr(forward.getEffectiveScale()));
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyAttentionGradTypes(*this)))
    return failure();
  if (Value maskGrad = getMaskGrad()) {
    if (!getMask() || !isa<FloatType>(getMask().getType().getElementType()))
      return emitOpError("has a mask gradient but no floating-point mask");
    if (failed(expectType(*this, maskGrad.getType(), getMask().getType(),
                          "mask gradient")))
      return failure();
  }
  return verifyAttentionRules(*this, getQuery(), getKey(), getMask(),
                              getCausal(), getScale().convertToDouble(),
                              getOut().getType().getElementType());
}

void ActivationGradOp::getReferenceAttrs(NamedAttrList &attrs) {
  setKeyword(attrs, getActivationAttrName(), getActivation());
}

void CrossEntropyGradOp::getReferenceAttrs(NamedAttrList &attrs) {
  setKeyword(attrs, getReductionAttrName(), getReduction());
}

void AttentionGradOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getCausalAttrName(), getCausal());
}

int64_t AttentionGradOp::getUnmaskedPairsPerHead() {
  return unmaskedPairs(getQuery().getType().getDimSize(2),
                       getKey().getType().getDimSize(2), getCausal());
}

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType grad = getGrad().getType();
  RankedTensorType indices = getIndices().getType();
  RankedTensorType table = getResult().getType();
  SmallVector<int64_t> rows(indices.getShape());
  if (table.getRank() != 2)
    return emitOpError("result must be a [V, D] table");
  rows.push_back(table.getDimSize(1));
  if (ArrayRef<int64_t>(rows) != grad.getShape())
    return emitOpError("grad must have shape ")
           << shapeString(rows) << " (indices shape then D), got "
           << shapeString(grad.getShape());
  if (grad.getElementType() != table.getElementType())
    return emitOpError("grad and table gradient must share an element type");
  return success();
}

void CrossEntropyGradOp::build(OpBuilder &builder, OperationState &state,
                               CrossEntropyOp forward, Value grad) {
  build(builder, state, forward.getLogits().getType(), forward.getLogits(),
        forward.getLabels(), grad,
        LossReductionAttr::get(builder.getContext(), forward.getReduction()),
        forward.getIgnoreIndexAttr());
}

LogicalResult CrossEntropyGradOp::verify() {
  RankedTensorType logits = getLogits().getType();
  RankedTensorType labels = getLabels().getType();
  if (logits.getRank() < 1 ||
      logits.getShape().drop_back() != labels.getShape())
    return emitOpError("labels must have the logits' shape without the class "
                       "dimension");
  // The loss gradient is shaped like the loss the forward returned.
  auto f32 = Float32Type::get(getContext());
  Type loss = getReduction() == LossReduction::None
                  ? RankedTensorType::get(labels.getShape(), f32)
                  : RankedTensorType::get({}, f32);
  return expectType(*this, getGrad().getType(), loss, "grad");
}

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

void AdamWOp::build(OpBuilder &builder, OperationState &state, Value param,
                    Value grad, Value expAvg, Value expAvgSq, Value master,
                    double lr) {
  build(builder, state, param.getType(), expAvg.getType(), expAvgSq.getType(),
        master ? master.getType() : Type(), param, grad, expAvg, expAvgSq,
        master, builder.getF64FloatAttr(lr), nullptr, nullptr, nullptr, nullptr,
        nullptr);
}

LogicalResult AdamWOp::verify() {
  auto shapeOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  for (auto [value, name] : {std::pair<Value, StringRef>{getGrad(), "grad"},
                             {getExpAvg(), "exp_avg"},
                             {getExpAvgSq(), "exp_avg_sq"},
                             {getMaster(), "master"}})
    if (value && shapeOf(value) != shapeOf(getParam()))
      return emitOpError() << name << " must have the param's shape "
                           << shapeString(shapeOf(getParam())) << ", got "
                           << shapeString(shapeOf(value));
  if (failed(expectType(*this, getNewParam().getType(), getParam().getType(),
                        "new param")) ||
      failed(expectType(*this, getNewExpAvg().getType(), getExpAvg().getType(),
                        "new exp_avg")) ||
      failed(expectType(*this, getNewExpAvgSq().getType(),
                        getExpAvgSq().getType(), "new exp_avg_sq")))
    return failure();
  if (static_cast<bool>(getMaster()) != static_cast<bool>(getNewMaster()))
    return emitOpError("has a new master result exactly when master is given");
  if (getMaster() && failed(expectType(*this, getNewMaster().getType(),
                                       getMaster().getType(), "new master")))
    return failure();
  double lr = getLr().convertToDouble(), eps = getEpsilon().convertToDouble();
  double beta1 = getBeta1().convertToDouble();
  double beta2 = getBeta2().convertToDouble();
  if (!(lr >= 0) || !std::isfinite(lr))
    return emitOpError("lr must be a finite number >= 0, got ") << lr;
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    return emitOpError("betas must be in [0, 1), got ")
           << beta1 << " and " << beta2;
  if (!(eps > 0) || !std::isfinite(eps))
    return emitOpError("eps must be a positive finite number, got ") << eps;
  double weightDecay = getWeightDecay().convertToDouble();
  if (!std::isfinite(weightDecay))
    return emitOpError("weight_decay must be a finite number, got ")
           << weightDecay;
  if (getStep() < 1)
    return emitOpError("step must be >= 1, got ") << getStep();
  return success();
}

/// The update is in place: each result reuses its operand's buffer.
Value AdamWOp::getAliasedOperand(unsigned resultNumber) {
  switch (resultNumber) {
  case 0:
    return getParam();
  case 1:
    return getExpAvg();
  case 2:
    return getExpAvgSq();
  default:
    return getMaster();
  }
}
