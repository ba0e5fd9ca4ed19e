//===- MemWallOps.cpp - memwall ops: generated classes, shared helpers ----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The ODS-generated op classes and what every op family shares: element and
// byte counting, the countability and inferred-type verifiers, argument kinds
// and the helpers of MemWallOpUtils.h. Each op's own meaning (type inference,
// verifier, VJP, payload, aliasing, reference attributes, FLOP and byte
// counts) is in its family's file:
//
//   ElementwiseOps.cpp    add sub mul div scale gelu silu relu tanh swiglu
//                         dropout cast activation_grad
//   NormalizationOps.cpp  layer_norm rms_norm softmax reduce and the norm
//                         gradients
//   MatmulOps.cpp         matmul, weight-only dequantize at use
//   AttentionOps.cpp      attention flash_attention(_grad) attention_grad
//                         rope kv_cache_append
//   EmbeddingLossOps.cpp  embedding cross_entropy and their gradients
//   DataMovementOps.cpp   reshape transpose slice concat broadcast pad
//   OptimizerOps.cpp      adamw
//
// Shape rules live in inferReturnTypes so that builders, the parser and the
// verifier all apply the same ones (InferTypeOpInterface's verifier compares
// the spelled-out result type with them); verifiers check what does not
// determine the result type (attribute ranges, auxiliary operand shapes).
//
//===----------------------------------------------------------------------===//

#include "MemWallOpUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace memwall;

//===----------------------------------------------------------------------===//
// Counting
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

bool memwall::isPackedSubByte(Type elementType) {
  unsigned bits =
      elementType.isIntOrFloat() ? elementType.getIntOrFloatBitWidth() : 8;
  return bits > 1 && bits < 8;
}

CheckedInt memwall::countTensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !tensor.getElementType().isIntOrFloat())
    return 0;
  CheckedInt elements = countElements(tensor);
  // Sub-byte elements (i4) are packed: two to a byte. i1 takes a byte.
  unsigned bits = tensor.getElementType().getIntOrFloatBitWidth();
  if (isPackedSubByte(tensor.getElementType())) {
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
    factors.push_back(isPackedSubByte(element)
                          ? element.getIntOrFloatBitWidth() / 8.0
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

ArgKind memwall::getArgKind(FunctionOpInterface function, unsigned index) {
  if (auto kind = function.getArgAttrOfType<ArgKindAttr>(
          index, MemWallDialect::kArgKindAttrName))
    return kind.getValue();
  return ArgKind::Input;
}

bool memwall::isTrainableWeight(FunctionOpInterface function, unsigned index) {
  return getArgKind(function, index) == ArgKind::Weight &&
         !function.getArgAttr(index, MemWallDialect::kFrozenAttrName);
}

std::optional<int64_t> memwall::parseLayerIndex(StringRef name) {
  int64_t layer;
  if (!name.consume_front("layers.") || name.consumeInteger(10, layer) ||
      !(name.empty() || name.front() == '.' || name.front() == '+'))
    return std::nullopt;
  return layer;
}

StringRef memwall::getPhaseOf(Operation *op) {
  for (; op; op = op->getParentOp()) {
    if (auto phase =
            op->getAttrOfType<StringAttr>(MemWallDialect::kPhaseAttrName))
      return phase.getValue();
    if (isa_and_nonnull<FunctionOpInterface>(op->getParentOp()))
      break;
  }
  return "forward";
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

KernelWork memwall::detail::defaultKernelWork(Operation *op) {
  auto cost = cast<CostOpInterface>(op);
  KernelWork work;
  work.flops = static_cast<double>(cost.getFlops());
  work.bytesRead = static_cast<double>(cost.getBytesRead());
  work.bytesWritten = static_cast<double>(cost.getBytesWritten());
  work.precision = cost.getMathPrecision();
  work.launchesKernel = cost.launchesKernel();
  return work;
}

//===----------------------------------------------------------------------===//
// Helpers shared by the op families (MemWallOpUtils.h)
//===----------------------------------------------------------------------===//

Type memwall::detail::getContractionResultElementType(Type elementType) {
  MLIRContext *ctx = elementType.getContext();
  if (isa<Float8E4M3FNType, Float8E5M2Type>(elementType))
    return BFloat16Type::get(ctx);
  if (elementType.isInteger(8))
    return IntegerType::get(ctx, 32);
  return elementType;
}

FailureOr<RankedTensorType>
memwall::detail::getStaticTensor(std::optional<Location> loc, Value value,
                                 StringRef name) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return emitOptionalError(loc, name, " must be a statically shaped tensor");
  return type;
}

FailureOr<int64_t> memwall::detail::normalizeAxis(std::optional<Location> loc,
                                                  int64_t axis, int64_t rank,
                                                  StringRef what) {
  if (axis < -rank || axis >= rank)
    return emitOptionalError(loc, what, " ", axis, " is out of range for rank ",
                             rank);
  return axis < 0 ? axis + rank : axis;
}

std::string memwall::detail::shapeString(ArrayRef<int64_t> shape) {
  std::string result = "[";
  llvm::raw_string_ostream os(result);
  llvm::interleaveComma(shape, os);
  os << "]";
  return result;
}

LogicalResult
memwall::detail::inferSameAsOperand(std::optional<Location> loc, Value operand,
                                    StringRef name,
                                    SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> type = getStaticTensor(loc, operand, name);
  if (failed(type))
    return failure();
  results.push_back(*type);
  return success();
}

void memwall::detail::setFlag(NamedAttrList &attrs, StringAttr name,
                              bool value) {
  attrs.set(name, BoolAttr::get(name.getContext(), value));
}

void memwall::detail::normalizeAxisAttr(NamedAttrList &attrs, StringAttr name,
                                        int64_t axis, int64_t rank) {
  auto i64 = IntegerType::get(name.getContext(), 64);
  attrs.set(name, IntegerAttr::get(i64, axis < 0 ? axis + rank : axis));
}

LogicalResult memwall::detail::expectType(Operation *op, Type actual,
                                          Type expected, StringRef name) {
  if (actual == expected)
    return success();
  return op->emitOpError() << name << " must have type " << expected << ", got "
                           << actual;
}

CheckedInt memwall::detail::resultElements(Operation *op) {
  return countElements(op->getResult(0).getType());
}

CheckedInt memwall::detail::numRows(CheckedInt elements, int64_t rowLength) {
  std::optional<int64_t> count = elements.get();
  if (!count)
    return elements;
  return rowLength <= 0 ? 0 : *count / rowLength;
}

//===----------------------------------------------------------------------===//
// Generated op classes
//===----------------------------------------------------------------------===//

#define GET_OP_CLASSES
#include "memwall/Dialect/MemWall/IR/MemWallOps.cpp.inc"

#include "memwall/Dialect/MemWall/IR/MemWallInterfaces.cpp.inc"
