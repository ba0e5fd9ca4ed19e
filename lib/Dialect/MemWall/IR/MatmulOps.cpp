//===- MatmulOps.cpp - Matmul and dequantize at use -----------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The batched matmul (bf16/f16/fp8/i8 contractions) and the weight-only
// quantized GEMM: a dequantize from i4/i8/fp8 storage whose only readers
// are matmuls runs inside them, so they read the stored bytes and scales.
// Per op: type inference, verifier, VJP, payload, aliasing, reference
// attributes and FLOP/byte counts (formulas in docs/cost-model.md).
//
//===----------------------------------------------------------------------===//

#include "MemWallOpUtils.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"

#include <algorithm>

using namespace mlir;
using namespace memwall;
using namespace memwall::detail;

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

/// Storage a weight-only quantized GEMM dequantizes from.
static bool isQuantizedStorage(Type element) {
  return element.isInteger(4) || element.isInteger(8) ||
         isa<Float8E4M3FNType, Float8E5M2Type>(element);
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

/// Whether every reader of `value` (through fusion inputs) is a dequantize
/// at use or a dequantize kernel reading it as its scales: a
/// double-quantized weight's scales, dequantized where they are read.
static bool isReadOnlyAsAtUseScales(Value value) {
  return llvm::all_of(value.getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    if (auto fusion = dyn_cast<FusionOp>(user))
      return isReadOnlyAsAtUseScales(
          fusion.getBodyBlock().getArgument(use.getOperandNumber()));
    auto dequantize = dyn_cast<DequantizeOp>(user);
    return dequantize && use.get() == dequantize.getScales() &&
           use.get() != dequantize.getZeroPoints() &&
           (dequantize.getMaterialize() || isDequantizeAtUse(dequantize));
  });
}

bool memwall::isDequantizeAtUse(DequantizeOp dequantize) {
  Value result = dequantize.getResult();
  if (dequantize.getMaterialize() || result.use_empty())
    return false;
  SmallVector<MatmulOp> matmuls;
  return collectMatmulUsers(result, matmuls) || isReadOnlyAsAtUseScales(result);
}

DequantizeOp memwall::getDequantizeAtUse(Value value) {
  auto dequantize = value.getDefiningOp<DequantizeOp>();
  return dequantize && isDequantizeAtUse(dequantize) ? dequantize
                                                     : DequantizeOp();
}

llvm::ArrayRef<float> memwall::getNF4Codebook() {
  // bitsandbytes' NF4 table (functional.py, get_4bit_type("nf4")): the
  // quantiles of N(0, 1) scaled to [-1, 1], with an exact zero.
  static const float codebook[] = {-1.0f,
                                   -0.6961928009986877f,
                                   -0.5250730514526367f,
                                   -0.39491748809814453f,
                                   -0.28444138169288635f,
                                   -0.18477343022823334f,
                                   -0.09105003625154495f,
                                   0.0f,
                                   0.07958029955625534f,
                                   0.16093020141124725f,
                                   0.24611230194568634f,
                                   0.33791524171829224f,
                                   0.44070982933044434f,
                                   0.5626170039176941f,
                                   0.7229568362236023f,
                                   1.0f};
  return codebook;
}

bool memwall::isQuantizationMetadata(Value value) {
  if (value.use_empty())
    return false;
  return llvm::all_of(value.getUses(), [](OpOperand &use) {
    auto dequantize = dyn_cast<DequantizeOp>(use.getOwner());
    if (!dequantize)
      return false;
    if (use.get() == dequantize.getScales() ||
        use.get() == dequantize.getZeroPoints())
      return true;
    // The i8 codes of double-quantized scales.
    return isQuantizationMetadata(dequantize.getResult());
  });
}

/// The dequantize at use making `dequantize`'s scales (double
/// quantization), or null.
static DequantizeOp getScalesDequantizedAtUse(DequantizeOp dequantize) {
  auto scales = dequantize.getScales().getDefiningOp<DequantizeOp>();
  return scales && isDequantizeAtUse(scales) ? scales : DequantizeOp();
}

/// Bytes of `dequantize`'s operands as stored: its scales, when a
/// dequantize at use makes them, as their own stored bytes.
static CheckedInt countStoredBytes(DequantizeOp dequantize) {
  CheckedInt bytes = countTensorBytes(dequantize.getInput().getType());
  if (DequantizeOp inner = getScalesDequantizedAtUse(dequantize))
    bytes += countStoredBytes(inner);
  else
    bytes += countTensorBytes(dequantize.getScales().getType());
  if (dequantize.getZeroPoints())
    bytes += countTensorBytes(dequantize.getZeroPoints().getType());
  return bytes;
}

int64_t memwall::getGemmOperandBytes(Value operand) {
  // Inside a fusion, a body argument is the fusion's input.
  if (auto arg = dyn_cast<BlockArgument>(operand))
    if (auto fusion = dyn_cast_or_null<FusionOp>(arg.getOwner()->getParentOp()))
      operand = fusion.getInputs()[arg.getArgNumber()];
  if (auto dequantize = operand.getDefiningOp<DequantizeOp>();
      dequantize && isDequantizeAtUse(dequantize))
    return countStoredBytes(dequantize).saturated();
  auto cast = operand.getDefiningOp<CastOp>();
  if (!cast || !isDequantizeAtUse(cast))
    return getTensorByteSize(operand.getType());
  // A cast's scales are implicit: priced as the scales a quantized weight
  // carries (one per output channel, per group along K for i4).
  RankedTensorType stored = cast.getInput().getType();
  SmallVector<MatmulOp> matmuls;
  collectMatmulUsers(cast.getResult(), matmuls);
  int64_t k = std::max<int64_t>(matmuls.front().getDims().k, 1);
  int64_t channels = getNumElements(stored) / k;
  int64_t groups = stored.getElementType().isInteger(4)
                       ? llvm::divideCeil(k, kInt4GroupSize)
                       : 1;
  return (countTensorBytes(stored) +
          CheckedInt(channels) * groups * kQuantScaleBytes)
      .saturated();
}

double memwall::getDequantizePrologueInstructions(DequantizeOp dequantize) {
  // Counted in the PTX of a 128-thread mma.sync k-step that dequantizes 16
  // elements a thread (bf16 result, [128, 96] weights): its copy, dequantize
  // and multiply segment has 127 instructions for i8, 159 for packed i4 and
  // 510 for NF4, some 20 of them the copies and MMAs. Per element: shared
  // load, convert, multiply by the scale, round, shared store and an
  // address (the scale's index and load are hoisted per thread): 7.
  double instructions = 7;
  // Packed i4: the nibble's shift and mask.
  if (dequantize.getInput().getType().getElementType().isInteger(4))
    instructions += 2;
  // A codebook: the code's bit tests and a tree of 15 selects.
  if (dequantize.getCodebook())
    instructions += 20;
  // Double-quantized scales: the absmax's decode and second multiply.
  if (getScalesDequantizedAtUse(dequantize))
    instructions += 2;
  return instructions;
}

double memwall::getDequantizeKernelInstructions(DequantizeOp dequantize) {
  // Counted in the PTX of DequantizeCodegen's kernel for [4096, 4096]
  // weights written as bf16, eight elements a thread, divided by eight:
  // 96 instructions for i8 with a scale per column (12 an element: the
  // code's load and convert, the scale's index, load and widening, the
  // multiply, the rounding, a share of the 16-byte store and the thread's
  // index), 78 for packed i4 (its eight codes in one 32-bit load), 182 for
  // f8E4M3FN (the integer decode of memwall-expand-fp8-conversions), 138
  // and 129 for i8 and i4 with zero points, 254 for NF4 with bf16 absmax
  // and 266 with double-quantized ones.
  Type stored = dequantize.getInput().getType().getElementType();
  double instructions = stored.isInteger(8)   ? 12
                        : stored.isInteger(4) ? 10
                                              : 23;
  if (dequantize.getZeroPoints())
    instructions += 5;
  // The code's bit tests and a tree of 15 selects.
  if (dequantize.getCodebook())
    instructions += 22;
  // The absmax's convert and second multiply (its load replaces the
  // scale's).
  if (getScalesDequantizedAtUse(dequantize))
    instructions += 2;
  return instructions;
}

double memwall::getDequantizePrologueWork(MatmulOp matmul, int64_t tileRows) {
  auto dequantize = matmul.getRhs().getDefiningOp<DequantizeOp>();
  if (!dequantize || !isDequantizeAtUse(dequantize))
    return 0;
  // The dequantized rhs is one rank-2 weight: the GEMM's rows are the
  // lhs's batch and M together.
  MatmulOp::Dims dims = matmul.getDims();
  double rows = static_cast<double>(dims.batch) * static_cast<double>(dims.m);
  double tilePasses =
      std::ceil(rows / static_cast<double>(std::max<int64_t>(tileRows, 1)));
  return tilePasses * static_cast<double>(dims.k) *
         static_cast<double>(dims.n) *
         getDequantizePrologueInstructions(dequantize);
}

//===----------------------------------------------------------------------===//
// DequantizeOp
//===----------------------------------------------------------------------===//

LogicalResult DequantizeOp::verify() {
  ArrayRef<int64_t> stored = getInput().getType().getShape();
  ArrayRef<int64_t> scales = getScales().getType().getShape();
  if (getResult().getType().getShape() != stored)
    return emitOpError("result shape must be the input's");
  if (getZeroPoints() && getZeroPoints().getType() != getScales().getType())
    return emitOpError("zero points must have the scales' type ")
           << getScales().getType() << ", not " << getZeroPoints().getType();
  if (scales.size() != stored.size())
    return emitOpError("scales must have the input's rank (")
           << stored.size() << "), not " << scales.size();
  for (auto [dim, pair] : llvm::enumerate(llvm::zip_equal(stored, scales))) {
    auto [extent, scaleExtent] = pair;
    if (scaleExtent <= 0 || extent % scaleExtent != 0)
      return emitOpError("scales dim ")
             << dim << " (" << scaleExtent << ") must divide the input's ("
             << extent << ")";
  }
  std::optional<ArrayRef<float>> codebook = getCodebook();
  if (!codebook)
    return success();
  Type element = getInput().getType().getElementType();
  if (!element.isInteger(4) && !element.isInteger(8))
    return emitOpError("a codebook maps i4 or i8 codes, not ") << element;
  size_t entries = size_t{1} << element.getIntOrFloatBitWidth();
  if (codebook->size() != entries)
    return emitOpError("a codebook for ")
           << element << " codes has " << entries << " values, not "
           << codebook->size();
  if (!llvm::all_of(*codebook,
                    [](float value) { return std::isfinite(value); }))
    return emitOpError("codebook values must be finite");
  if (getZeroPoints())
    return emitOpError("a codebook dequantize takes no zero points");
  return success();
}

Value DequantizeOp::getAliasedOperand(unsigned) {
  return isDequantizeAtUse(*this) ? getInput() : Value();
}

// A dequantize at use runs inside the GEMM that reads it (the matmul is
// charged the quantized bytes and scales): no kernel, no traffic, and its
// multiply by the scale is not counted, as the softmax of attention is not.
// Elsewhere it is a kernel of one multiply per element.
int64_t DequantizeOp::getFlops() {
  return isDequantizeAtUse(*this) ? 0 : getNumElements(getResult().getType());
}

int64_t DequantizeOp::getBytesRead() {
  // Scales dequantized where they are read are read as stored.
  return isDequantizeAtUse(*this) ? 0 : countStoredBytes(*this).saturated();
}

int64_t DequantizeOp::getBytesWritten() {
  return isDequantizeAtUse(*this) ? 0 : sumResultBytes(*this);
}

bool DequantizeOp::launchesKernel() { return !isDequantizeAtUse(*this); }

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

int64_t MatmulOp::getFlops() {
  Dims dims = getDims();
  CheckedInt outputs = CheckedInt(dims.batch) * dims.m * dims.n;
  CheckedInt flops = CheckedInt(2) * outputs * dims.k;
  if (getBias())
    flops += outputs;
  return flops.saturated();
}

// Each operand once (a broadcast weight too); a dequantized-at-use weight at
// its quantized size plus scales.
int64_t MatmulOp::getBytesRead() {
  CheckedInt bytes = 0;
  for (Value operand : getOperation()->getOperands())
    bytes += CheckedInt::fromSaturated(getGemmOperandBytes(operand));
  return bytes.saturated();
}

MathPrecision MatmulOp::getMathPrecision() {
  return getContractionPrecision(getLhs().getType().getElementType());
}

KernelWork MatmulOp::getKernelWork(const GPUTarget &) {
  KernelWork work = memwall::detail::defaultKernelWork(*this);
  // Weights dequantized in the main loop and fp8 operands run on memwall's
  // GEMM only (cuBLASLt takes no prologue; memwall runs no fp8 cuBLASLt
  // GEMM).
  auto dequantize = getRhs().getDefiningOp<DequantizeOp>();
  bool fp8 = isa<Float8E4M3FNType, Float8E5M2Type>(
      getLhs().getType().getElementType());
  work.unit = fp8 || (dequantize && isDequantizeAtUse(dequantize))
                  ? ComputeUnit::GeneratedGemm
                  : ComputeUnit::Gemm;
  Dims dims = getDims();
  work.gemmShape = classifyGemm(dims.batch, dims.m, dims.n, dims.k);
  work.cudaCoreInstructions =
      getDequantizePrologueWork(*this, kTypicalGemmTileRows);
  return work;
}
