//===- InferenceFixes.cpp - what to change when inference does not fit ----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Serving answers to "it does not fit": fewer sequences per step, a shorter
// context, an fp8 KV cache, weight-only quantization. Training fixes
// (gradient accumulation, ZeRO, checkpointing) mean nothing to a decode step,
// so inference graphs get these instead of planBudget's.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/InferenceFixes.h"

#include "memwall/Support/Units.h"

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/InferenceAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Hardware/Roofline.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace memwall;

namespace {

/// Whether only GEMMs read `value` (directly, through a dequantize at use,
/// or inside a fusion): the weights weight-only quantization shrinks.
bool readOnlyByGemms(Value value) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (isa<MatmulOp>(user))
      continue;
    if (auto widen = dyn_cast<CastOp>(user); widen && isDequantizeAtUse(widen))
      continue;
    if (auto dequantize = dyn_cast<DequantizeOp>(user);
        dequantize && isDequantizeAtUse(dequantize))
      continue;
    if (auto fusion = dyn_cast<FusionOp>(user);
        fusion && readOnlyByGemms(fusion.getBodyBlock().getArgument(
                      use.getOperandNumber())))
      continue;
    return false;
  }
  return !value.use_empty();
}

bool readsAttentionCache(Operation *op) {
  bool found = false;
  op->walk([&](Operation *inner) {
    found |= isa<AttentionOp, FlashAttentionOp>(inner);
  });
  return found;
}

/// Weight bytes as stored: all of them, and those only GEMMs read.
struct WeightBytes {
  int64_t total = 0;
  int64_t gemm = 0;
  int64_t gemmElements = 0;
  int64_t gemmChannels = 0; // output channels: elements / K
};

WeightBytes getWeightBytes(func::FuncOp function) {
  // Checked sums: kUncountable past int64, never wrapped.
  CheckedInt total = 0, gemm = 0, gemmElements = 0, gemmChannels = 0;
  for (BlockArgument arg : function.getArguments()) {
    if (getArgKind(function, arg.getArgNumber()) != ArgKind::Weight)
      continue;
    CheckedInt size = countTensorBytes(arg.getType());
    total += size;
    auto type = cast<RankedTensorType>(arg.getType());
    if (type.getRank() < 2 || !readOnlyByGemms(arg))
      continue;
    gemm += size;
    int64_t elements = getNumElements(type);
    gemmElements += CheckedInt::fromSaturated(elements);
    // Linear weights are stored [K, N] (as memwall-gen writes them).
    int64_t k = std::max<int64_t>(type.getDimSize(type.getRank() - 2), 1);
    gemmChannels += elements == kUncountable ? CheckedInt::overflow()
                                             : CheckedInt(elements / k);
  }
  return {total.saturated(), gemm.saturated(), gemmElements.saturated(),
          gemmChannels.saturated()};
}

/// Bytes of the GEMM weights quantized to `bits` with getGemmOperandBytes'
/// scales (one per output channel for 8 bits, per group of kInt4GroupSize
/// along K for 4).
double quantizedGemmBytes(const WeightBytes &weights, int bits) {
  double groupsPerChannel = 1;
  if (bits == 4 && weights.gemmChannels > 0)
    groupsPerChannel = std::ceil(static_cast<double>(weights.gemmElements) /
                                 weights.gemmChannels / kInt4GroupSize);
  return weights.gemmElements * bits / 8.0 +
         weights.gemmChannels * groupsPerChannel * kQuantScaleBytes;
}

int64_t kvElementBytes(func::FuncOp function) {
  for (BlockArgument arg : function.getArguments())
    if (getArgKind(function, arg.getArgNumber()) == ArgKind::KVCache)
      return getElementByteSize(
          cast<RankedTensorType>(arg.getType()).getElementType());
  return 0;
}

} // namespace

InferenceShape memwall::getInferenceShape(func::FuncOp function) {
  InferenceShape shape;
  for (BlockArgument arg : function.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (type && type.getRank() >= 2 && type.getElementType().isInteger() &&
        getArgKind(function, arg.getArgNumber()) == ArgKind::Input) {
      shape.batch = type.getDimSize(0);
      shape.newTokens =
          getNumElements(type) / std::max<int64_t>(type.getDimSize(0), 1);
      break;
    }
  }
  // Attention reads the cache with the new tokens appended.
  function.walk([&](Operation *op) {
    Value key;
    if (auto attention = dyn_cast<AttentionOp>(op))
      key = attention.getKey();
    else if (auto flash = dyn_cast<FlashAttentionOp>(op))
      key = flash.getKey();
    if (!key || shape.context)
      return;
    if (BlockArgument arg = getRootArgument(key);
        arg && getArgKind(function, arg.getArgNumber()) == ArgKind::KVCache)
      shape.context = cast<RankedTensorType>(key.getType()).getDimSize(2);
  });
  return shape;
}

double memwall::predictInferenceStepSeconds(func::FuncOp function,
                                            const GPUTarget &target,
                                            const InferenceChange &change) {
  double seconds = 0;
  Block &body = function.getBody().front();
  for (Operation &op : body.without_terminator()) {
    auto cost = dyn_cast<CostOpInterface>(&op);
    if (!cost)
      continue;
    KernelWork work = getOpKernelWork(cost, target);
    RooflineEstimate base = estimateKernelTime(work, target);
    double total = totalBytes(work);
    double gemmWeight = 0, otherWeight = 0, kv = 0;
    bool attention = readsAttentionCache(&op);
    for (Value operand : op.getOperands()) {
      BlockArgument arg = getRootArgument(operand);
      if (!arg || arg.getParentBlock() != &body)
        continue;
      ArgKind kind = getArgKind(function, arg.getArgNumber());
      // A gather reads the rows it selects, which scale with the batch.
      if (kind == ArgKind::Weight && !isa<EmbeddingOp>(op)) {
        if (readOnlyByGemms(arg))
          gemmWeight += getGemmOperandBytes(operand);
        else
          otherWeight += getTensorByteSize(operand.getType());
      } else if (kind == ArgKind::KVCache && attention) {
        kv += getTensorByteSize(operand.getType());
      }
    }
    double fixed = gemmWeight + otherWeight + kv;
    if (fixed > total && fixed > 0) {
      double shrink = total / fixed;
      gemmWeight *= shrink;
      otherWeight *= shrink;
      kv *= shrink;
    }
    double activations = std::max(0.0, total - gemmWeight - otherWeight - kv);
    double byteScale =
        total > 0
            ? (gemmWeight * change.gemmWeightBytes + otherWeight +
               kv * change.kvBytesPerElement * change.batch * change.context +
               activations * change.batch) /
                  total
            : 1;
    // GEMM FLOPs grow with the token rows; attention's also with the keys.
    double flopScale = change.batch * (attention ? change.context : 1);
    seconds += softRooflineSeconds(base.computeSeconds * flopScale,
                                   base.memorySeconds * byteScale) +
               base.launchSeconds;
  }
  return seconds;
}

int64_t memwall::predictInferencePeakBytes(func::FuncOp function,
                                           const ShardingOptions &sharding,
                                           const InferenceChange &change) {
  MemoryScaling scaling;
  auto set = [&](MemoryBucket bucket, double factor) {
    scaling.factor[static_cast<unsigned>(bucket)] = factor;
  };
  set(MemoryBucket::Activations, change.batch);
  set(MemoryBucket::Workspace, change.batch);
  set(MemoryBucket::KVCache,
      change.batch * change.context * change.kvBytesPerElement);
  scaling.attentionWorkspace = change.context;
  if (change.gemmWeightBytes != 1) {
    WeightBytes weights = getWeightBytes(function);
    if (weights.total > 0)
      set(MemoryBucket::Weights, (weights.total - weights.gemm +
                                  weights.gemm * change.gemmWeightBytes) /
                                     static_cast<double>(weights.total));
  }
  return simulateMemory(function, sharding, scaling).peakBytes;
}

BudgetSummary memwall::planInferenceBudget(func::FuncOp function,
                                           const MemorySummary &memory,
                                           int64_t budgetBytes,
                                           const ShardingOptions &sharding,
                                           const GPUTarget &target) {
  BudgetSummary budget = compareWithBudget(memory, budgetBytes);
  if (budget.fits)
    return budget;

  InferenceShape shape = getInferenceShape(function);
  double baseSeconds = predictInferenceStepSeconds(function, target, {});
  auto tokensPerSecond = [&](const InferenceChange &change, double seconds) {
    return seconds > 0 ? shape.batch * change.batch * shape.newTokens / seconds
                       : 0;
  };
  double baseTokens = tokensPerSecond({}, baseSeconds);
  double kvAtPeak = memory.atPeak[static_cast<unsigned>(MemoryBucket::KVCache)];
  auto add = [&](StringRef name, const std::string &what,
                 const InferenceChange &change) {
    MemoryFix fix;
    fix.name = name.str();
    fix.peakBytes = predictInferencePeakBytes(function, sharding, change);
    fix.timeSeconds = predictInferenceStepSeconds(function, target, change);
    fix.timeFactor = baseSeconds > 0 ? fix.timeSeconds / baseSeconds : 1;
    fix.tokensPerSecond = tokensPerSecond(change, fix.timeSeconds);
    fix.fits = fix.peakBytes <= budgetBytes;
    fix.description = llvm::formatv("{0}: {1:f1} tokens/s (was {2:f1})", what,
                                    fix.tokensPerSecond, baseTokens)
                          .str();
    budget.fixes.push_back(std::move(fix));
  };

  // Halves `size` until the step fits (or it reaches 1); `scale` is the
  // change's factor for it.
  auto halveUntilFits = [&](int64_t size, double InferenceChange::*scale) {
    int64_t halved = size;
    InferenceChange change;
    do {
      halved /= 2;
      change.*scale = static_cast<double>(halved) / size;
    } while (halved > 1 && predictInferencePeakBytes(function, sharding,
                                                     change) > budgetBytes);
    return std::make_pair(halved, change);
  };
  // Fewer sequences per step.
  if (shape.batch > 1) {
    auto [batch, change] = halveUntilFits(shape.batch, &InferenceChange::batch);
    add("smaller-batch",
        llvm::formatv("batch {0} -> {1} (KV cache {2} -> {3})", shape.batch,
                      batch, formatSI(kvAtPeak, "B"),
                      formatSI(kvAtPeak * change.batch, "B"))
            .str(),
        change);
  }
  // A shorter context: fewer cached tokens.
  if (shape.context > 1) {
    auto [context, change] =
        halveUntilFits(shape.context, &InferenceChange::context);
    add("shorter-context",
        llvm::formatv("context {0} -> {1} tokens (KV cache {2} -> {3})",
                      shape.context, context, formatSI(kvAtPeak, "B"),
                      formatSI(kvAtPeak * change.context, "B"))
            .str(),
        change);
  }
  // An fp8 KV cache (attention dequantizes it as it reads).
  if (int64_t bytes = kvElementBytes(function); bytes > 1) {
    InferenceChange change;
    change.kvBytesPerElement = 1.0 / bytes;
    add("kv-cache-fp8",
        llvm::formatv("fp8 KV cache (--kv-cache-dtype=f8E4M3FN): KV cache {0} "
                      "-> {1}",
                      formatSI(kvAtPeak, "B"), formatSI(kvAtPeak / bytes, "B"))
            .str(),
        change);
  }
  // Weight-only quantization of the GEMM weights.
  WeightBytes weights = getWeightBytes(function);
  for (auto [bits, policy] :
       {std::pair<int, StringRef>{8, "int8-weights"}, {4, "int4-weights"}}) {
    double quantized = quantizedGemmBytes(weights, bits);
    if (weights.gemm <= 0 || quantized >= weights.gemm)
      continue;
    InferenceChange change;
    change.gemmWeightBytes = quantized / weights.gemm;
    add(policy,
        llvm::formatv("{0}-bit weights (--precision={1}): GEMM weights {2} -> "
                      "{3}",
                      bits, policy, formatSI(weights.gemm, "B"),
                      formatSI(quantized, "B"))
            .str(),
        change);
  }
  for (MemoryFix &fix : budget.fixes)
    if (fix.fits) {
      fix.firstThatFits = true;
      break;
    }
  return budget;
}

CapacitySummary memwall::findMaxBatch(func::FuncOp function,
                                      const ShardingOptions &sharding,
                                      const GPUTarget &target,
                                      int64_t limitBytes, StringRef limit) {
  CapacitySummary summary;
  summary.limitBytes = limitBytes;
  summary.limit = limit.str();
  InferenceShape shape = getInferenceShape(function);
  summary.batch = shape.batch;
  summary.context = shape.context;

  // The peak grows monotonically with either knob, so the largest value
  // that fits is found by doubling, then bisecting.
  auto largest = [&](auto peakAt) -> std::pair<int64_t, int64_t> {
    int64_t peak = peakAt(1);
    if (peak > limitBytes)
      return {0, peak};
    int64_t fits = 1, fitsPeak = peak, over = 2;
    constexpr int64_t kMax = int64_t(1) << 30;
    while (over <= kMax && (peak = peakAt(over)) <= limitBytes) {
      fits = over;
      fitsPeak = peak;
      over *= 2;
    }
    if (over > kMax)
      return {fits, fitsPeak};
    while (over - fits > 1) {
      int64_t mid = fits + (over - fits) / 2;
      peak = peakAt(mid);
      if (peak <= limitBytes) {
        fits = mid;
        fitsPeak = peak;
      } else {
        over = mid;
      }
    }
    return {fits, fitsPeak};
  };
  auto batchChange = [&](int64_t batch) {
    InferenceChange change;
    change.batch =
        static_cast<double>(batch) / std::max<int64_t>(shape.batch, 1);
    return change;
  };
  std::tie(summary.maxBatch,
           summary.peakAtMaxBatch) = largest([&](int64_t batch) {
    return predictInferencePeakBytes(function, sharding, batchChange(batch));
  });
  if (summary.maxBatch > 0) {
    InferenceChange change = batchChange(summary.maxBatch);
    double seconds = predictInferenceStepSeconds(function, target, change);
    if (seconds > 0)
      summary.tokensPerSecondAtMaxBatch =
          summary.maxBatch * shape.newTokens / seconds;
  }
  if (shape.context > 0)
    std::tie(summary.maxContext, summary.peakAtMaxContext) =
        largest([&](int64_t context) {
          InferenceChange change;
          change.context = static_cast<double>(context) / shape.context;
          return predictInferencePeakBytes(function, sharding, change);
        });
  return summary;
}
