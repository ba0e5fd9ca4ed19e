//===- EmbeddingLossOps.cpp - Embedding and loss ops ----------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Token embedding, cross-entropy over the vocabulary and their gradients.
// Per op: type inference, verifier, VJP, payload, aliasing, reference
// attributes and FLOP/byte counts (formulas in docs/cost-model.md).
//
//===----------------------------------------------------------------------===//

#include "MemWallOpUtils.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace memwall;
using namespace memwall::detail;

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

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

// A gather computes nothing and reads only the rows it selects.
int64_t EmbeddingOp::getFlops() { return 0; }

int64_t EmbeddingOp::getBytesRead() {
  return (countTensorBytes(getIndices().getType()) +
          countTensorBytes(getResult().getType()))
      .saturated();
}

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

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

/// FLOPs of the loss over `positions` rows of `classes` logits.
static CheckedInt crossEntropyFlops(CheckedInt positions, int64_t classes,
                                    LossReduction reduction) {
  // Per position: log-sum-exp (max V, subtract V, exp V, sum V, log 1, add
  // back the max 1) and the loss lse - logit[label] (1): 4V + 3.
  CheckedInt flops = positions * (CheckedInt(4) * classes + 3);
  switch (reduction) {
  case LossReduction::Mean:
    return flops + positions + 1; // sum, then one division
  case LossReduction::Sum:
    return flops + positions;
  case LossReduction::None:
    return flops;
  }
  llvm_unreachable("unknown loss reduction");
}

/// FLOPs of the logits' gradient over `positions` rows of `classes`.
static CheckedInt crossEntropyGradFlops(CheckedInt positions, int64_t classes) {
  // Softmax recomputed (max, subtract, exp, sum: 4V + 1 per position), then
  // divide, subtract the one-hot and scale by dloss (3V).
  return positions * (CheckedInt(7) * classes + 1);
}

int64_t CrossEntropyOp::getFlops() {
  RankedTensorType logits = getLogits().getType();
  int64_t classes = logits.getShape().back();
  return crossEntropyFlops(numRows(countElements(logits), classes), classes,
                           getReduction())
      .saturated();
}

//===----------------------------------------------------------------------===//
// CrossEntropyGradOp
//===----------------------------------------------------------------------===//

void CrossEntropyGradOp::getReferenceAttrs(NamedAttrList &attrs) {
  setKeyword(attrs, getReductionAttrName(), getReduction());
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

int64_t CrossEntropyGradOp::getFlops() {
  RankedTensorType logits = getLogits().getType();
  int64_t classes = logits.getShape().back();
  return crossEntropyGradFlops(numRows(countElements(logits), classes), classes)
      .saturated();
}

//===----------------------------------------------------------------------===//
// LinearCrossEntropyOp
//===----------------------------------------------------------------------===//
//
// How the chunked op runs, which its counts follow (docs/cost-model.md):
// per chunk of C = getChunkColumns() vocabulary columns, a GEMM writes the
// chunk's [N, C] logits and a row kernel reads them (forward); the backward
// recomputes the chunk's logits, turns them into their gradient in place,
// and two GEMMs read that: dW's rows of the chunk (one GEMM over all N
// positions) and dH, accumulated in an fp32 [N, D] buffer across chunks.

/// Checks `hidden` [..., D] against `weight` [V, D] (`transposed`) or
/// [D, V].
static LogicalResult checkLinearHead(std::optional<Location> loc,
                                     RankedTensorType hidden,
                                     RankedTensorType weight, bool transposed) {
  if (hidden.getElementType() != weight.getElementType())
    return emitOptionalError(loc,
                             "hidden and weight must share an element "
                             "type, got ",
                             hidden.getElementType(), " and ",
                             weight.getElementType());
  if (hidden.getRank() < 1)
    return emitOptionalError(loc, "hidden must have rank >= 1 ([..., D])");
  if (weight.getRank() != 2)
    return emitOptionalError(loc,
                             "weight must have rank 2 ([V, D] with "
                             "transpose_weight, else [D, V]), got rank ",
                             weight.getRank());
  int64_t d = hidden.getShape().back();
  if (weight.getDimSize(transposed ? 1 : 0) != d)
    return emitOptionalError(loc, "weight ", shapeString(weight.getShape()),
                             " does not contract with hidden size ", d,
                             transposed ? " (transpose_weight: [V, D])"
                                        : " ([D, V])");
  return success();
}

/// `labels` shaped like `hidden` without its last dimension.
static LogicalResult checkLabels(std::optional<Location> loc,
                                 RankedTensorType hidden,
                                 RankedTensorType labels) {
  if (hidden.getShape().drop_back() != labels.getShape())
    return emitOptionalError(
        loc, "labels shape ", shapeString(labels.getShape()),
        " must equal the hidden shape without its last dimension ",
        shapeString(hidden.getShape().drop_back()));
  return success();
}

LogicalResult LinearCrossEntropyOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc,
    LinearCrossEntropyOp::Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> hidden =
      getStaticTensor(loc, adaptor.getHidden(), "hidden");
  FailureOr<RankedTensorType> weight =
      getStaticTensor(loc, adaptor.getWeight(), "weight");
  FailureOr<RankedTensorType> labels =
      getStaticTensor(loc, adaptor.getLabels(), "labels");
  if (failed(hidden) || failed(weight) || failed(labels) ||
      failed(checkLinearHead(loc, *hidden, *weight,
                             adaptor.getTransposeWeight())) ||
      failed(checkLabels(loc, *hidden, *labels)))
    return failure();
  Type f32 = Float32Type::get(ctx);
  if (adaptor.getReduction() == LossReduction::None)
    inferred.push_back(RankedTensorType::get(labels->getShape(), f32));
  else
    inferred.push_back(RankedTensorType::get({}, f32));
  inferred.push_back(RankedTensorType::get(labels->getShape(), f32));
  return success();
}

LinearHeadDims LinearHeadDims::get(RankedTensorType hidden,
                                   RankedTensorType weight,
                                   bool transposeWeight) {
  int64_t d = hidden.getShape().back();
  return {numRows(countElements(hidden), d).saturated(),
          weight.getDimSize(transposeWeight ? 0 : 1), d};
}

int64_t LinearHeadDims::getChunkColumns() const {
  int64_t tiles = llvm::divideCeil(llvm::divideCeil(vocab, kVocabChunks), 128);
  return std::min(vocab, std::max<int64_t>(tiles, 1) * 128);
}

int64_t LinearHeadDims::getChunks() const {
  int64_t columns = getChunkColumns();
  return columns > 0 ? llvm::divideCeil(vocab, columns) : 0;
}

void LinearCrossEntropyOp::getReferenceAttrs(NamedAttrList &attrs) {
  setKeyword(attrs, getReductionAttrName(), getReduction());
  setFlag(attrs, getTransposeWeightAttrName(), getTransposeWeight());
}

LogicalResult LinearCrossEntropyOp::buildVJP(VJPBuilder &vjp,
                                             ValueRange resultGradients) {
  if (resultGradients.size() > 1 && resultGradients[1])
    return VJPBuilder::notDifferentiable(
        *this, "its log-sum-exp result is not differentiable");
  if (!resultGradients[0])
    return success();
  auto grad = LinearCrossEntropyGradOp::create(vjp.getBuilder(), vjp.getLoc(),
                                               *this, resultGradients[0]);
  vjp.accumulate(getHidden(), grad.getHiddenGrad());
  vjp.accumulate(getWeight(), grad.getWeightGrad());
  return success();
}

int64_t LinearCrossEntropyOp::getFlops() {
  LinearHeadDims dims = getDims();
  CheckedInt gemm = CheckedInt(2) * dims.tokens * dims.hidden * dims.vocab;
  return (gemm + crossEntropyFlops(dims.tokens, dims.vocab, getReduction()))
      .saturated();
}

MathPrecision LinearCrossEntropyOp::getMathPrecision() {
  return getContractionPrecision(getHidden().getType().getElementType());
}

/// Bytes of `tokens` x `columns` elements of `type`.
static CheckedInt matrixBytes(int64_t tokens, int64_t columns, Type type) {
  return CheckedInt(tokens) * columns * getElementByteSize(type);
}

int64_t LinearCrossEntropyOp::getBytesRead() {
  LinearHeadDims dims = getDims();
  Type element = getHidden().getType().getElementType();
  int64_t chunks = dims.getChunks();
  // The hidden states once per chunk, the weight and labels once, and the
  // logits (each chunk's, as its GEMM wrote them) by the loss kernel.
  return (CheckedInt(chunks) * countTensorBytes(getHidden().getType()) +
          countTensorBytes(getWeight().getType()) +
          countTensorBytes(getLabels().getType()) +
          matrixBytes(dims.tokens, dims.vocab, element))
      .saturated();
}

int64_t LinearCrossEntropyOp::getBytesWritten() {
  LinearHeadDims dims = getDims();
  Type element = getHidden().getType().getElementType();
  return (matrixBytes(dims.tokens, dims.vocab, element) +
          memwall::detail::sumResultBytes(*this))
      .saturated();
}

/// A chunked loss: GEMMs on tensor cores, a loss kernel per chunk.
static KernelWork chunkedLossWork(Operation *op, int64_t launches) {
  KernelWork work = memwall::detail::defaultKernelWork(op);
  work.unit = ComputeUnit::Gemm;
  work.extraLaunches = std::max<int64_t>(launches - 1, 0);
  return work;
}

KernelWork LinearCrossEntropyOp::getKernelWork(const GPUTarget &) {
  // A GEMM and a loss kernel per chunk.
  return chunkedLossWork(*this, 2 * getDims().getChunks());
}

// One chunk's logits.
int64_t LinearCrossEntropyOp::getWorkspaceBytes() {
  LinearHeadDims dims = getDims();
  return matrixBytes(dims.tokens, dims.getChunkColumns(),
                     getHidden().getType().getElementType())
      .saturated();
}

//===----------------------------------------------------------------------===//
// LinearCrossEntropyGradOp
//===----------------------------------------------------------------------===//

void LinearCrossEntropyGradOp::build(OpBuilder &builder, OperationState &state,
                                     LinearCrossEntropyOp forward, Value grad) {
  build(builder, state, forward.getHidden().getType(),
        forward.getWeight().getType(), forward.getHidden(), forward.getWeight(),
        forward.getLabels(), forward.getLse(), grad,
        LossReductionAttr::get(builder.getContext(), forward.getReduction()),
        forward.getIgnoreIndexAttr(), forward.getTransposeWeightAttr());
}

LogicalResult LinearCrossEntropyGradOp::verify() {
  RankedTensorType hidden = getHidden().getType();
  RankedTensorType labels = getLabels().getType();
  if (failed(checkLinearHead(getLoc(), hidden, getWeight().getType(),
                             getTransposeWeight())) ||
      failed(checkLabels(getLoc(), hidden, labels)))
    return failure();
  auto f32 = Float32Type::get(getContext());
  if (failed(expectType(*this, getLse().getType(),
                        RankedTensorType::get(labels.getShape(), f32), "lse")))
    return failure();
  // The loss gradient is shaped like the loss the forward returned.
  Type loss = getReduction() == LossReduction::None
                  ? RankedTensorType::get(labels.getShape(), f32)
                  : RankedTensorType::get({}, f32);
  return expectType(*this, getGrad().getType(), loss, "grad");
}

void LinearCrossEntropyGradOp::getReferenceAttrs(NamedAttrList &attrs) {
  setKeyword(attrs, getReductionAttrName(), getReduction());
  setFlag(attrs, getTransposeWeightAttrName(), getTransposeWeight());
}

int64_t LinearCrossEntropyGradOp::getFlops() {
  LinearHeadDims dims = getDims();
  CheckedInt gemm = CheckedInt(2) * dims.tokens * dims.hidden * dims.vocab;
  // Three GEMMs (the logits again, dH, dW); per logit subtract the lse,
  // exp and scale, per position subtract the one-hot; the fp32 dH adds of
  // every chunk after the first.
  CheckedInt softmax =
      CheckedInt(dims.tokens) * (CheckedInt(3) * dims.vocab + 1);
  CheckedInt accumulate =
      CheckedInt(std::max<int64_t>(dims.getChunks() - 1, 0)) * dims.tokens *
      dims.hidden;
  return (CheckedInt(3) * gemm + softmax + accumulate).saturated();
}

MathPrecision LinearCrossEntropyGradOp::getMathPrecision() {
  return getContractionPrecision(getHidden().getType().getElementType());
}

int64_t LinearCrossEntropyGradOp::getBytesRead() {
  LinearHeadDims dims = getDims();
  Type element = getHidden().getType().getElementType();
  CheckedInt chunks = dims.getChunks();
  Type f32 = Float32Type::get(getContext());
  // Per chunk the hidden states twice (the logits' GEMM, dW's), the labels
  // and lse; the weight twice (the logits' GEMM, dH's); the logits once
  // (made their gradient in place) and their gradient twice (dH, dW); the
  // fp32 dH accumulator by every chunk's GEMM after the first and by the
  // final cast.
  return (chunks * 2 * countTensorBytes(getHidden().getType()) +
          chunks * (countTensorBytes(getLabels().getType()) +
                    countTensorBytes(getLse().getType())) +
          CheckedInt(2) * countTensorBytes(getWeight().getType()) +
          countTensorBytes(getGrad().getType()) +
          CheckedInt(3) * matrixBytes(dims.tokens, dims.vocab, element) +
          chunks * matrixBytes(dims.tokens, dims.hidden, f32))
      .saturated();
}

int64_t LinearCrossEntropyGradOp::getBytesWritten() {
  LinearHeadDims dims = getDims();
  Type element = getHidden().getType().getElementType();
  Type f32 = Float32Type::get(getContext());
  // The logits and their gradient, the fp32 dH accumulator per chunk, and
  // the results.
  return (CheckedInt(2) * matrixBytes(dims.tokens, dims.vocab, element) +
          CheckedInt(dims.getChunks()) *
              matrixBytes(dims.tokens, dims.hidden, f32) +
          memwall::detail::sumResultBytes(*this))
      .saturated();
}

KernelWork LinearCrossEntropyGradOp::getKernelWork(const GPUTarget &) {
  // Per chunk the logits' GEMM, the gradient kernel, dH's and dW's GEMMs;
  // then dH's cast from fp32.
  return chunkedLossWork(*this, 4 * getDims().getChunks() + 1);
}

// One chunk's logits and the fp32 dH accumulator.
int64_t LinearCrossEntropyGradOp::getWorkspaceBytes() {
  LinearHeadDims dims = getDims();
  return (matrixBytes(dims.tokens, dims.getChunkColumns(),
                      getHidden().getType().getElementType()) +
          matrixBytes(dims.tokens, dims.hidden, Float32Type::get(getContext())))
      .saturated();
}

//===----------------------------------------------------------------------===//
// EmbeddingGradOp
//===----------------------------------------------------------------------===//

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

// One add per gradient element scattered into the table.
int64_t EmbeddingGradOp::getFlops() {
  return getNumElements(getGrad().getType());
}
