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

int64_t CrossEntropyOp::getFlops() {
  RankedTensorType logits = getLogits().getType();
  int64_t classes = logits.getShape().back();
  CheckedInt positions = numRows(countElements(logits), classes);
  // Per position: log-sum-exp (max V, subtract V, exp V, sum V, log 1, add
  // back the max 1) and the loss lse - logit[label] (1): 4V + 3.
  CheckedInt flops = positions * (CheckedInt(4) * classes + 3);
  switch (getReduction()) {
  case LossReduction::Mean:
    return (flops + positions + 1).saturated(); // sum, then one division
  case LossReduction::Sum:
    return (flops + positions).saturated();
  case LossReduction::None:
    return flops.saturated();
  }
  llvm_unreachable("unknown loss reduction");
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
  CheckedInt positions = numRows(countElements(logits), classes);
  // Softmax recomputed (max, subtract, exp, sum: 4V + 1 per position), then
  // divide, subtract the one-hot and scale by dloss (3V).
  return (positions * (CheckedInt(7) * classes + 1)).saturated();
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
