//===- InferenceAnalysis.cpp - why an inference step is memory-bound ------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A decode step multiplies every weight matrix by a handful of token rows:
// each weight byte is read once per step for 2·tokens FLOPs per element, so
// the weight-streaming GEMMs sit far below the ridge of their roof and the
// step runs at DRAM bandwidth. This analysis measures that from the graph's
// own costs (docs/memory.md, "Why decoding is memory-bound").
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/InferenceAnalysis.h"

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include <cmath>

using namespace mlir;
using namespace memwall;

namespace {
/// The matmul of a top-level op: the op itself or the anchor of a fusion.
MatmulOp matmulOf(Operation *op) {
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return matmul;
  MatmulOp anchor;
  if (auto fusion = dyn_cast<FusionOp>(op))
    fusion.getBodyBlock().walk([&](MatmulOp matmul) { anchor = matmul; });
  return anchor;
}
} // namespace

BlockArgument memwall::getRootArgument(Value value) {
  while (true) {
    if (Operation *op = value.getDefiningOp()) {
      // A fusion's result is the value its body yields (a GEMM writing into
      // a KV cache in place yields the appended cache).
      if (auto fusion = dyn_cast<FusionOp>(op)) {
        value = fusion.getBodyBlock().getTerminator()->getOperand(
            cast<OpResult>(value).getResultNumber());
        continue;
      }
      if (!isa<CastOp, DequantizeOp, TransposeOp, ReshapeOp, KVCacheAppendOp>(
              op))
        return nullptr;
      value = op->getOperand(0);
      continue;
    }
    auto arg = cast<BlockArgument>(value);
    auto fusion = dyn_cast<FusionOp>(arg.getOwner()->getParentOp());
    if (!fusion)
      return arg;
    value = fusion.getInputs()[arg.getArgNumber()];
  }
}

std::optional<InferenceSummary>
memwall::analyzeInference(func::FuncOp function, const GPUTarget &target) {
  Block &body = function.getBody().front();
  for (Operation &op : body)
    if (op.hasAttr(MemWallDialect::kPhaseAttrName))
      return std::nullopt; // a training step
  InferenceSummary summary;
  double stepSeconds = 0, memoryBoundSeconds = 0, gemmSeconds = 0,
         gemmBytes = 0;
  // Byte sums are checked (kUncountable past int64, never wrapped).
  CheckedInt stepBytes = 0, weightBytesPerStep = 0, kvCacheBytes = 0;
  std::optional<MathPrecision> gemmPrecision;
  for (Operation &op : body.without_terminator()) {
    auto cost = dyn_cast<CostOpInterface>(&op);
    if (!cost)
      continue;
    // The traffic of the op's kernel on this target, as the report counts.
    KernelWork work = getOpKernelWork(cost, target);
    RooflineEstimate estimate = estimateKernelTime(work, target);
    double bytes = totalBytes(work);
    stepSeconds += estimate.timeSeconds;
    stepBytes += CheckedInt::fromDouble(bytes);
    if (estimate.memoryBound)
      memoryBoundSeconds += estimate.timeSeconds;

    // A GEMM with a weight operand streams that weight.
    CheckedInt weightBytes = 0;
    for (Value operand : op.getOperands())
      if (BlockArgument arg = getRootArgument(operand);
          arg && arg.getParentBlock() == &body &&
          getArgKind(function, arg.getArgNumber()) == ArgKind::Weight &&
          cast<RankedTensorType>(operand.getType()).getRank() >= 2)
        weightBytes += CheckedInt::fromSaturated(getGemmOperandBytes(operand));
    MatmulOp matmul = matmulOf(&op);
    if (matmul && weightBytes != CheckedInt(0)) {
      weightBytesPerStep += weightBytes;
      summary.weightGemmFlops += static_cast<double>(cost.getFlops());
      gemmBytes += bytes;
      gemmSeconds += estimate.timeSeconds;
      RankedTensorType result = matmul.getType();
      int64_t columns = result.getDimSize(result.getRank() - 1);
      summary.tokensPerStep =
          std::max(summary.tokensPerStep,
                   columns > 0 ? getNumElements(result) / columns : int64_t(0));
      if (!gemmPrecision)
        gemmPrecision = cost.getMathPrecision();
    }
    // Attention, untiled or tiled (and wherever fusion put it), reads the
    // whole cache at its stored type (the appended token included).
    op.walk([&](Operation *inner) {
      Value key, value;
      if (auto attention = dyn_cast<AttentionOp>(inner)) {
        key = attention.getKey();
        value = attention.getValue();
      } else if (auto flash = dyn_cast<FlashAttentionOp>(inner)) {
        key = flash.getKey();
        value = flash.getValue();
      } else {
        return;
      }
      for (Value operand : {key, value})
        if (BlockArgument arg = getRootArgument(operand);
            arg && arg.getParentBlock() == &body &&
            getArgKind(function, arg.getArgNumber()) == ArgKind::KVCache)
          kvCacheBytes += countTensorBytes(operand.getType());
    });
  }
  summary.totalBytes = stepBytes.saturated();
  summary.weightBytes = weightBytesPerStep.saturated();
  summary.kvCacheBytes = kvCacheBytes.saturated();
  if (summary.weightBytes == 0 || stepSeconds <= 0)
    return std::nullopt;
  summary.weightGemmIntensity =
      gemmBytes > 0 ? summary.weightGemmFlops / gemmBytes : 0;
  summary.mathPrecision = stringifyMathPrecision(*gemmPrecision).str();
  summary.ridge = target.ridgeFor(*gemmPrecision);
  summary.weightGemmTimeFraction = gemmSeconds / stepSeconds;
  summary.memoryBoundTimeFraction = memoryBoundSeconds / stepSeconds;
  if (summary.weightGemmIntensity > 0)
    summary.tokensAtRidge =
        CheckedInt::fromDouble(std::ceil(summary.tokensPerStep * summary.ridge /
                                         summary.weightGemmIntensity))
            .saturated();
  // At the bandwidth a copy kernel reaches, not the datasheet's.
  summary.bandwidthFloorSeconds =
      (static_cast<double>(summary.weightBytes) + summary.kvCacheBytes) /
      target.achievable.memoryBandwidth;
  summary.stepSeconds = stepSeconds;
  summary.tokensPerSecond = summary.tokensPerStep / stepSeconds;
  return summary;
}
