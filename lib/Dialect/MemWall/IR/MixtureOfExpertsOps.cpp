//===- MixtureOfExpertsOps.cpp - Routing and the experts' grouped GEMM ----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A mixture of experts as memwall builds it (docs/moe.md): moe_gating picks
// each token's experts and weights, expert_matmul runs each token slot
// through its expert's weight (dispatch and un-permutation folded in), and
// the weighted sum over slots combines them. Per op: type inference, VJP,
// reference attributes and FLOP/byte counts (docs/cost-model.md).
//
//===----------------------------------------------------------------------===//

#include "MemWallOpUtils.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace memwall;
using namespace memwall::detail;

/// `shape` with its last dimension replaced by `last`.
static SmallVector<int64_t> withLastDim(ArrayRef<int64_t> shape, int64_t last) {
  SmallVector<int64_t> result(shape);
  result.back() = last;
  return result;
}

//===----------------------------------------------------------------------===//
// MoeGatingOp
//===----------------------------------------------------------------------===//

LogicalResult MoeGatingOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            MoeGatingOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> logits =
      getStaticTensor(loc, adaptor.getLogits(), "logits");
  if (failed(logits))
    return failure();
  if (logits->getRank() < 1)
    return emitOptionalError(loc, "logits must have rank >= 1 ([..., E])");
  int64_t experts = logits->getShape().back();
  int64_t k = static_cast<int64_t>(adaptor.getExpertsPerToken());
  if (k < 1 || k > experts)
    return emitOptionalError(loc, "experts_per_token (", k,
                             ") must be between 1 and the ", experts,
                             " experts");
  SmallVector<int64_t> shape = withLastDim(logits->getShape(), k);
  inferred.push_back(RankedTensorType::get(shape, logits->getElementType()));
  inferred.push_back(
      RankedTensorType::get(shape, IntegerType::get(context, 32)));
  return success();
}

LogicalResult MoeGatingOp::buildVJP(VJPBuilder &vjp,
                                    ValueRange resultGradients) {
  // The indices are integers: only the weights carry a gradient.
  if (!resultGradients[0] || !vjp.needsGradient(getLogits()))
    return success();
  Value dlogits = MoeGatingGradOp::create(vjp.getBuilder(), vjp.getLoc(),
                                          resultGradients[0], getLogits(),
                                          getIndices(), getNormalizeAttr());
  vjp.accumulate(getLogits(), dlogits);
  return success();
}

void MoeGatingOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getNormalizeAttrName(), getNormalize());
}

// Per row of E logits: the softmax (5E + 1, as memwall.softmax), k passes
// of E comparisons for the top k, and under `normalize` a sum and a
// division per chosen weight (2k).
int64_t MoeGatingOp::getFlops() {
  RankedTensorType logits = getLogits().getType();
  int64_t experts = logits.getShape().back();
  int64_t k = static_cast<int64_t>(getExpertsPerToken());
  CheckedInt rows = numRows(countElements(logits), experts);
  CheckedInt perRow = CheckedInt(5) * experts + 1 + CheckedInt(k) * experts;
  if (getNormalize())
    perRow += CheckedInt(2) * k;
  return (rows * perRow).saturated();
}

//===----------------------------------------------------------------------===//
// MoeGatingGradOp
//===----------------------------------------------------------------------===//

LogicalResult
MoeGatingGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  MoeGatingGradOp::Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> grad =
      getStaticTensor(loc, adaptor.getGrad(), "grad");
  FailureOr<RankedTensorType> logits =
      getStaticTensor(loc, adaptor.getLogits(), "logits");
  FailureOr<RankedTensorType> indices =
      getStaticTensor(loc, adaptor.getIndices(), "indices");
  if (failed(grad) || failed(logits) || failed(indices))
    return failure();
  if (logits->getRank() < 1)
    return emitOptionalError(loc, "logits must have rank >= 1 ([..., E])");
  if (grad->getShape() != indices->getShape())
    return emitOptionalError(loc, "grad ", shapeString(grad->getShape()),
                             " and indices ", shapeString(indices->getShape()),
                             " must have one shape [..., k]");
  int64_t k = indices->getShape().back();
  if (grad->getShape() != ArrayRef<int64_t>(withLastDim(logits->getShape(), k)))
    return emitOptionalError(
        loc, "grad ", shapeString(grad->getShape()), " must be the logits' ",
        shapeString(logits->getShape()), " with ", k, " experts per token");
  if (k > logits->getShape().back())
    return emitOptionalError(loc, "more experts per token (", k,
                             ") than experts (", logits->getShape().back(),
                             ")");
  if (grad->getElementType() != logits->getElementType())
    return emitOptionalError(loc,
                             "grad and logits must have one element "
                             "type, got ",
                             grad->getElementType(), " and ",
                             logits->getElementType());
  inferred.push_back(*logits);
  return success();
}

void MoeGatingGradOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getNormalizeAttrName(), getNormalize());
}

// Per row: the softmax again (5E + 1), the dot of the chosen weights with
// their gradients (2k), and one multiply-subtract per logit (2E).
int64_t MoeGatingGradOp::getFlops() {
  RankedTensorType logits = getLogits().getType();
  int64_t experts = logits.getShape().back();
  int64_t k = getIndices().getType().getShape().back();
  CheckedInt rows = numRows(countElements(logits), experts);
  return (rows * (CheckedInt(7) * experts + 1 + CheckedInt(2) * k)).saturated();
}

//===----------------------------------------------------------------------===//
// ExpertMatmulOp and its weight gradient
//===----------------------------------------------------------------------===//

/// Checks that `input` is `[..., K]` (shared by the slots) or `[..., k, K]`
/// (one row per slot) for `indices` `[..., k]`; returns K.
static FailureOr<int64_t> checkExpertInput(std::optional<Location> loc,
                                           RankedTensorType input,
                                           RankedTensorType indices) {
  if (indices.getRank() < 1)
    return emitOptionalError(loc, "indices must have rank >= 1 ([..., k])");
  ArrayRef<int64_t> slots = indices.getShape();
  ArrayRef<int64_t> rows = input.getShape().drop_back();
  if (input.getRank() < 1 || (rows != slots.drop_back() && rows != slots))
    return emitOptionalError(
        loc, "input ", shapeString(input.getShape()),
        " must be one row per token ", shapeString(slots.drop_back()),
        " + [K] or one per slot ", shapeString(slots), " + [K]");
  return input.getShape().back();
}

LogicalResult
ExpertMatmulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                 ExpertMatmulOp::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input =
      getStaticTensor(loc, adaptor.getInput(), "input");
  FailureOr<RankedTensorType> weight =
      getStaticTensor(loc, adaptor.getWeight(), "weight");
  FailureOr<RankedTensorType> indices =
      getStaticTensor(loc, adaptor.getIndices(), "indices");
  if (failed(input) || failed(weight) || failed(indices))
    return failure();
  FailureOr<int64_t> k = checkExpertInput(loc, *input, *indices);
  if (failed(k))
    return failure();
  if (weight->getRank() != 3)
    return emitOptionalError(loc, "weight must be [E, K, N] (rank 3), got ",
                             shapeString(weight->getShape()));
  bool transpose = adaptor.getTransposeWeight();
  int64_t weightK = weight->getDimSize(transpose ? 2 : 1);
  int64_t n = weight->getDimSize(transpose ? 1 : 2);
  if (weightK != *k)
    return emitOptionalError(loc,
                             "contraction dimensions differ: input has "
                             "K = ",
                             *k, ", each expert's weight has K = ", weightK);
  if (input->getElementType() != weight->getElementType())
    return emitOptionalError(
        loc, "input and weight must have one element type, got ",
        input->getElementType(), " and ", weight->getElementType());
  SmallVector<int64_t> shape(indices->getShape());
  shape.push_back(n);
  inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

bool ExpertMatmulOp::hasSharedInput() {
  return getInput().getType().getRank() == getIndices().getType().getRank();
}

ExpertMatmulOp::Dims ExpertMatmulOp::getDims() {
  RankedTensorType indices = getIndices().getType();
  RankedTensorType weight = getWeight().getType();
  Dims dims;
  dims.slots = indices.getShape().back();
  dims.tokens = numRows(countElements(indices), dims.slots).saturated();
  dims.experts = weight.getDimSize(0);
  dims.k = getInput().getType().getShape().back();
  dims.n = getResult().getType().getShape().back();
  return dims;
}

double ExpertMatmulOp::getExpectedExpertsRead() {
  Dims dims = getDims();
  if (dims.experts == 0 || dims.tokens == 0)
    return 0;
  // A token's k distinct experts miss a given one with probability
  // 1 - k / E; T tokens route independently.
  double missed = 1.0 - static_cast<double>(dims.slots) / dims.experts;
  return dims.experts *
         (1.0 - std::pow(missed, static_cast<double>(dims.tokens)));
}

int64_t ExpertMatmulOp::getWorstCaseExpertsRead() {
  Dims dims = getDims();
  return std::min<int64_t>(dims.experts,
                           (CheckedInt(dims.tokens) * dims.slots).saturated());
}

int64_t ExpertMatmulOp::getExpertWeightBytes() {
  Dims dims = getDims();
  CheckedInt bytes = countTensorBytes(getWeight().getType());
  return dims.experts == 0 ? 0 : bytes.saturated() / dims.experts;
}

LogicalResult ExpertMatmulOp::buildVJP(VJPBuilder &vjp,
                                       ValueRange resultGradients) {
  OpBuilder &builder = vjp.getBuilder();
  Location loc = vjp.getLoc();
  Value dy = resultGradients[0];
  Value input = getInput(), weight = getWeight(), indices = getIndices();
  bool transpose = getTransposeWeight();
  if (vjp.needsGradient(input)) {
    // Each slot's dx is dy times its expert's weight transposed; a shared
    // row sums its slots'.
    Value dx =
        ExpertMatmulOp::create(builder, loc, dy, weight, indices,
                               !transpose ? builder.getUnitAttr() : nullptr);
    if (hasSharedInput())
      dx = ReduceOp::create(builder, loc, ReduceKind::Sum, dx,
                            ArrayRef<int64_t>{-2}, /*keep_dims=*/false);
    vjp.accumulate(input, dx);
  }
  if (vjp.needsGradient(weight)) {
    Value dw = ExpertMatmulWeightGradOp::create(
        builder, loc, input, dy, indices,
        builder.getI64IntegerAttr(getDims().experts), getTransposeWeightAttr());
    vjp.accumulate(weight, dw);
  }
  return success();
}

void ExpertMatmulOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getTransposeWeightAttrName(), getTransposeWeight());
}

/// 2 T k K N: one [1, K] x [K, N] product per token slot.
static int64_t countExpertGemmFlops(int64_t slotElements, int64_t k,
                                    int64_t n) {
  return (CheckedInt(2) * slotElements * k * n).saturated();
}

int64_t ExpertMatmulOp::getFlops() {
  Dims dims = getDims();
  return countExpertGemmFlops(getNumElements(getIndices().getType()), dims.k,
                              dims.n);
}

// The input and indices once and the weights of the experts the tokens hit,
// in expectation under uniform routing (the time model's figure; the
// worst case is getWorstCaseExpertsRead).
int64_t ExpertMatmulOp::getBytesRead() {
  double expertBytes =
      static_cast<double>(getExpertWeightBytes()) * getExpectedExpertsRead();
  CheckedInt bytes = countTensorBytes(getInput().getType()) +
                     countTensorBytes(getIndices().getType());
  return (bytes + static_cast<int64_t>(std::llround(expertBytes))).saturated();
}

MathPrecision ExpertMatmulOp::getMathPrecision() {
  return getContractionPrecision(getInput().getType().getElementType());
}

// A grouped GEMM: each hit expert multiplies its share of the T k slots.
KernelWork ExpertMatmulOp::getKernelWork(const GPUTarget &) {
  KernelWork work = memwall::detail::defaultKernelWork(*this);
  work.unit = ComputeUnit::GeneratedGemm;
  Dims dims = getDims();
  double hit = std::max(getExpectedExpertsRead(), 1.0);
  int64_t rowsPerExpert = static_cast<int64_t>(
      std::ceil(static_cast<double>(dims.tokens) * dims.slots / hit));
  work.gemmShape = classifyGemm(static_cast<int64_t>(std::llround(hit)),
                                rowsPerExpert, dims.n, dims.k);
  return work;
}

LogicalResult ExpertMatmulWeightGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc,
    ExpertMatmulWeightGradOp::Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input =
      getStaticTensor(loc, adaptor.getInput(), "input");
  FailureOr<RankedTensorType> grad =
      getStaticTensor(loc, adaptor.getGrad(), "grad");
  FailureOr<RankedTensorType> indices =
      getStaticTensor(loc, adaptor.getIndices(), "indices");
  if (failed(input) || failed(grad) || failed(indices))
    return failure();
  FailureOr<int64_t> k = checkExpertInput(loc, *input, *indices);
  if (failed(k))
    return failure();
  if (grad->getRank() != indices->getRank() + 1 ||
      grad->getShape().drop_back() != indices->getShape())
    return emitOptionalError(loc, "grad ", shapeString(grad->getShape()),
                             " must be the indices' ",
                             shapeString(indices->getShape()), " + [N]");
  if (input->getElementType() != grad->getElementType())
    return emitOptionalError(loc,
                             "input and grad must have one element "
                             "type, got ",
                             input->getElementType(), " and ",
                             grad->getElementType());
  int64_t experts = static_cast<int64_t>(adaptor.getExperts());
  if (experts < 1)
    return emitOptionalError(loc, "experts (", experts, ") must be >= 1");
  int64_t n = grad->getShape().back();
  SmallVector<int64_t> shape = {experts, *k, n};
  if (adaptor.getTransposeWeight())
    std::swap(shape[1], shape[2]);
  inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

void ExpertMatmulWeightGradOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getTransposeWeightAttrName(), getTransposeWeight());
}

int64_t ExpertMatmulWeightGradOp::getFlops() {
  return countExpertGemmFlops(getNumElements(getIndices().getType()),
                              getInput().getType().getShape().back(),
                              getGrad().getType().getShape().back());
}

MathPrecision ExpertMatmulWeightGradOp::getMathPrecision() {
  return getContractionPrecision(getInput().getType().getElementType());
}

// Per expert, the [K, N] sum of its slots' outer products: a grouped GEMM
// contracting over each expert's share of the slots.
KernelWork ExpertMatmulWeightGradOp::getKernelWork(const GPUTarget &) {
  KernelWork work = memwall::detail::defaultKernelWork(*this);
  work.unit = ComputeUnit::GeneratedGemm;
  RankedTensorType result = getResult().getType();
  int64_t experts = result.getDimSize(0);
  int64_t slots = getNumElements(getIndices().getType());
  work.gemmShape =
      classifyGemm(experts, result.getDimSize(1), result.getDimSize(2),
                   llvm::divideCeil(slots, experts));
  return work;
}
