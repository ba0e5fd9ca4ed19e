//===- MemoryFixes.cpp - ways to make a step fit, predicted ---------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each fix is predicted by re-running the liveness simulation with the fix's
// accounting (sharding, offload) or with per-bucket scaling of the buffers
// it shrinks (micro-batch, sequence, width, precision), and its time by
// re-scaling each op's roofline terms and adding the communication compute
// does not hide (CommunicationAnalysis). docs/memory.md gives the
// assumptions.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/CommunicationAnalysis.h"
#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/MemoryAnalysis.h"

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace memwall;

namespace {

StringRef phaseOf(Operation *op) {
  if (auto phase =
          op->getAttrOfType<StringAttr>(MemWallDialect::kPhaseAttrName))
    return phase.getValue();
  return "forward";
}

bool isModelState(func::FuncOp function, Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner()->getParentOp() != function)
    return false;
  auto kind = function.getArgAttrOfType<ArgKindAttr>(
      arg.getArgNumber(), MemWallDialect::kArgKindAttrName);
  return kind && (kind.getValue() == ArgKind::Weight ||
                  kind.getValue() == ArgKind::OptimizerState);
}

/// Predicted step time when activations shrink by `activationScale`, with
/// contractions at `precision` if set and activation bytes scaled by
/// `byteScale` (precision changes), and attention FLOPs by `attentionScale`.
struct TimeModel {
  double activationScale = 1;
  double byteScale = 1;
  double attentionScale = 1;
  std::optional<MathPrecision> contractionPrecision;
};

/// GPU compute of one micro-step's forward and backward and of the
/// optimizer update; communication is added by estimateCommunication.
struct PhaseTimes {
  double forward = 0;
  double backward = 0;
  double optimizer = 0;
};

PhaseTimes predictPhaseTimes(func::FuncOp function, const GPUTarget &target,
                             const TimeModel &model) {
  PhaseTimes times;
  function.walk([&](CostOpInterface op) {
    if (op->getParentOfType<FusionOp>())
      return; // the fusion is costed as a whole
    KernelWork work = getOpKernelWork(op, target);
    RooflineEstimate base = estimateKernelTime(work, target);
    double bytes = totalBytes(work);
    int64_t stateBytes = 0;
    for (Value operand : op->getOperands())
      if (isModelState(function, operand))
        stateBytes += getTensorByteSize(operand.getType());
    double stateFraction =
        bytes > 0 ? std::min(1.0, static_cast<double>(stateBytes) / bytes) : 0;
    // Tiled or not, attention's FLOPs also scale with the sequence.
    bool attention = work.unit == ComputeUnit::Attention;
    double flopScale =
        model.activationScale * (attention ? model.attentionScale : 1);
    double compute = base.computeSeconds * flopScale;
    if (model.contractionPrecision &&
        op.getMathPrecision() == MathPrecision::FP32 &&
        work.unit != ComputeUnit::CudaCores)
      compute = work.flops * flopScale /
                (target.peakFor(*model.contractionPrecision) *
                 computeEfficiency(work.unit, work.gemmShape, target));
    double memory =
        base.memorySeconds * model.byteScale *
        (stateFraction + (1 - stateFraction) * model.activationScale);
    // The same combination as estimateOpRoofline, so an unchanged model
    // predicts the report's time.
    double time = softRooflineSeconds(compute, memory) + base.launchSeconds;
    StringRef phase = phaseOf(op);
    if (phase == "optimizer")
      times.optimizer += time;
    else if (phase == "backward")
      times.backward += time;
    else
      times.forward += time;
  });
  return times;
}

/// Forward values the backward reads, through views.
bool isSavedForBackward(Value value) {
  for (Operation *user : value.getUsers()) {
    if (phaseOf(user) != "forward")
      return true;
    if (isa<ReshapeOp>(user) && isSavedForBackward(user->getResult(0)))
      return true;
  }
  return false;
}

/// "layers.12.mlp.fc" -> 12; -1 outside a layer.
int64_t layerOf(Operation *op) {
  auto name = dyn_cast<NameLoc>(op->getLoc());
  if (!name)
    return -1;
  return parseLayerIndex(name.getName().getValue()).value_or(-1);
}

struct CheckpointEstimate {
  int64_t layers = 0;
  int64_t savedBytes = 0;        // all saved forward values
  int64_t checkpointedBytes = 0; // what per-layer checkpointing keeps
  double recomputeSeconds = 0;   // one more forward of every layer
};

/// Per-layer activation checkpointing, estimated from the forward's layer
/// structure: each layer keeps only its inputs, and one layer's saved
/// activations exist again while its backward runs.
CheckpointEstimate estimateCheckpointing(func::FuncOp function,
                                         const GPUTarget &target) {
  CheckpointEstimate estimate;
  std::map<int64_t, int64_t> savedPerLayer, inputsPerLayer;
  std::map<int64_t, llvm::DenseSet<Value>> layerInputs;
  int64_t savedOutsideLayers = 0;
  for (Operation &op : function.getBody().front().without_terminator()) {
    if (phaseOf(&op) != "forward")
      continue;
    int64_t layer = layerOf(&op);
    if (layer >= 0) {
      estimate.recomputeSeconds +=
          isa<CostOpInterface>(op)
              ? estimateOpRoofline(cast<CostOpInterface>(op), target)
                    .timeSeconds
              : 0;
      for (Value operand : op.getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && layerOf(def) != layer && phaseOf(def) == "forward" &&
            layerInputs[layer].insert(operand).second)
          inputsPerLayer[layer] += getTensorByteSize(operand.getType());
      }
    }
    for (Value result : op.getResults()) {
      if (isa<ReshapeOp>(op) || !isSavedForBackward(result))
        continue;
      int64_t bytes = getTensorByteSize(result.getType());
      estimate.savedBytes += bytes;
      if (layer >= 0)
        savedPerLayer[layer] += bytes;
      else
        savedOutsideLayers += bytes;
    }
  }
  estimate.layers = savedPerLayer.size();
  int64_t largestLayer = 0, inputs = 0;
  for (auto [layer, bytes] : savedPerLayer)
    largestLayer = std::max(largestLayer, bytes);
  for (auto [layer, bytes] : inputsPerLayer)
    inputs += bytes;
  estimate.checkpointedBytes = savedOutsideLayers + inputs + largestLayer;
  return estimate;
}

/// The batch of the step: dimension 0 of the first integer input of rank 2
/// or more (token ids [B, S]); 1 if there is none.
int64_t batchSize(func::FuncOp function) {
  for (BlockArgument arg : function.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    auto kind = function.getArgAttrOfType<ArgKindAttr>(
        arg.getArgNumber(), MemWallDialect::kArgKindAttrName);
    if (type && type.getRank() >= 2 && type.getElementType().isInteger() &&
        (!kind || kind.getValue() == ArgKind::Input))
      return type.getDimSize(0);
  }
  return 1;
}

int64_t weightBytes(func::FuncOp function, Type *elementType = nullptr) {
  CheckedInt bytes = 0;
  for (BlockArgument arg : function.getArguments()) {
    auto kind = function.getArgAttrOfType<ArgKindAttr>(
        arg.getArgNumber(), MemWallDialect::kArgKindAttrName);
    if (kind && kind.getValue() == ArgKind::Weight) {
      bytes += countTensorBytes(arg.getType());
      if (elementType)
        *elementType = cast<RankedTensorType>(arg.getType()).getElementType();
    }
  }
  return bytes.saturated();
}

} // namespace

BudgetSummary memwall::compareWithBudget(const MemorySummary &memory,
                                         int64_t budgetBytes) {
  BudgetSummary budget;
  budget.budgetBytes = budgetBytes;
  budget.peakBytes = memory.peakBytes;
  budget.headroomBytes = budgetBytes - memory.peakBytes;
  budget.fits = memory.peakBytes <= budgetBytes;
  return budget;
}

BudgetSummary memwall::planBudget(func::FuncOp function,
                                  const MemorySummary &memory,
                                  int64_t budgetBytes,
                                  const ShardingOptions &sharding,
                                  const GPUTarget &target) {
  BudgetSummary budget = compareWithBudget(memory, budgetBytes);
  if (budget.fits)
    return budget;

  // Every fix's time is compute plus the communication compute does not
  // hide, by the report's formula (CommunicationAnalysis.h).
  std::optional<CommunicationInputs> commInputs =
      getCommunicationInputs(function, target);
  auto stepTime = [&](const PhaseTimes &times, int64_t microSteps,
                      const ShardingOptions &options, double paramScale = 1) {
    if (!commInputs)
      return microSteps * (times.forward + times.backward) + times.optimizer;
    CommunicationInputs in = *commInputs;
    in.forwardSeconds = times.forward;
    in.backwardSeconds = times.backward;
    in.optimizerSeconds = times.optimizer;
    in.microSteps = microSteps;
    auto scale = [&](int64_t count) {
      return CheckedInt::fromDouble(count * paramScale).saturated();
    };
    in.paramBytes = scale(in.paramBytes);
    in.gradientBytes = scale(in.gradientBytes);
    in.params = scale(in.params);
    return estimateCommunication(in, options, target).stepSeconds;
  };
  const PhaseTimes baseTimes = predictPhaseTimes(function, target, TimeModel());
  double stepSeconds = stepTime(baseTimes, 1, sharding);
  auto add = [&](std::string name, std::string description, int64_t peak,
                 double seconds) {
    MemoryFix fix;
    fix.name = std::move(name);
    fix.description = std::move(description);
    fix.peakBytes = peak;
    fix.timeSeconds = seconds;
    fix.timeFactor = stepSeconds > 0 ? seconds / stepSeconds : 1;
    fix.fits = peak <= budgetBytes;
    budget.fixes.push_back(std::move(fix));
  };
  auto scaled = [&](MemoryScaling scaling,
                    const ShardingOptions &options) -> int64_t {
    return simulateMemory(function, options, scaling).peakBytes;
  };
  auto activationScaling = [](double f, double attention) {
    MemoryScaling scaling;
    scaling.factor[static_cast<unsigned>(MemoryBucket::Activations)] = f;
    scaling.factor[static_cast<unsigned>(MemoryBucket::Workspace)] = f;
    scaling.attentionWorkspace = attention;
    return scaling;
  };
  // How the collectives of `options` are timed, for the descriptions.
  auto linkText = [&](const ShardingOptions &options) {
    return llvm::formatv("collectives over {0} at {1:f0} GB/s",
                         collectiveLinkName(target, options.devices),
                         target.collectiveBandwidth(options.devices) / 1e9)
        .str();
  };

  // 1. Smaller micro-batch with gradient accumulation (same global batch).
  if (int64_t batch = batchSize(function); batch > 1) {
    int64_t steps = 2;
    int64_t peak = 0;
    for (; steps <= batch; steps *= 2) {
      double f = 1.0 / steps;
      peak = scaled(activationScaling(f, 1), sharding);
      if (peak <= budgetBytes || steps * 2 > batch)
        break;
    }
    steps = std::min(steps, batch);
    TimeModel model;
    model.activationScale = 1.0 / steps;
    add("micro-batch",
        llvm::formatv("micro-batch {0} instead of {1}, {2} gradient "
                      "accumulation steps",
                      batch / steps, batch, steps),
        peak,
        stepTime(predictPhaseTimes(function, target, model), steps, sharding));
  }

  // 2. Activation checkpointing per layer.
  if (memory.training) {
    CheckpointEstimate ckpt = estimateCheckpointing(function, target);
    if (ckpt.layers > 0) {
      int64_t peak =
          memory.peakBytes - std::max<int64_t>(0, memory.savedActivationsBytes -
                                                      ckpt.checkpointedBytes);
      // The recomputed forward runs in the backward.
      PhaseTimes times = baseTimes;
      times.backward += ckpt.recomputeSeconds;
      add("checkpointing",
          llvm::formatv("checkpoint each of the {0} layers (keep layer "
                        "inputs, recompute the rest in the backward; "
                        "memwall-remat places it exactly)",
                        ckpt.layers),
          peak, stepTime(times, 1, sharding));
    }
  }

  // 3. bf16 mixed precision when the weights are fp32 (and the module was
  // not already made mixed-precision).
  Type weightType;
  int64_t paramBytes = weightBytes(function, &weightType);
  if (weightType && weightType.isF32() &&
      !StringRef(memory.precision).ends_with("-mixed") &&
      target.supports(MathPrecision::BF16)) {
    MemoryScaling scaling;
    for (MemoryBucket b : {MemoryBucket::Weights, MemoryBucket::Gradients,
                           MemoryBucket::Activations, MemoryBucket::Workspace,
                           MemoryBucket::KVCache})
      scaling.factor[static_cast<unsigned>(b)] = 0.5;
    double optimizerShare = sharding.offload != OffloadPolicy::None ? 0
                            : sharding.zeroStage >= 1 ? 1.0 / sharding.devices
                                                      : 1.0;
    // The fp32 master copy joins the optimizer states.
    if (memory.training)
      scaling.extraOptimizerBytes =
          CheckedInt::fromDouble(paramBytes * optimizerShare).saturated();
    TimeModel model;
    model.byteScale = 0.5;
    model.contractionPrecision = MathPrecision::BF16;
    // bf16 weights and gradients halve the collectives' bytes.
    add("bf16-mixed",
        "bf16 weights, activations and gradients with fp32 master weights "
        "(memwall-precision policy=bf16-mixed)",
        scaled(scaling, sharding),
        stepTime(predictPhaseTimes(function, target, model), 1, sharding,
                 0.5));
  }

  // 4. ZeRO / FSDP sharding across data-parallel devices: the stages above
  // the user's on their devices (8 when one), never the user's own setting;
  // at stage 3 already, twice the devices.
  if (memory.training) {
    int64_t devices = sharding.devices > 1 ? sharding.devices : 8;
    auto addZero = [&](int stage, int64_t onDevices, StringRef name,
                       StringRef note) {
      ShardingOptions options = sharding;
      options.devices = onDevices;
      options.zeroStage = stage;
      add(name.str(),
          llvm::formatv("ZeRO stage {0}{1} over {2} data-parallel devices{3} "
                        "({4}, overlapped with compute as in docs/memory.md)",
                        stage, stage == 3 ? " (FSDP full-shard)" : "",
                        onDevices, note, linkText(options)),
          scaled(MemoryScaling(), options), stepTime(baseTimes, 1, options));
    };
    // Stage 1 shards optimizer states only: nothing to shard without them.
    bool optimizer = hasOptimizerStep(function);
    for (int stage = optimizer ? 1 : 2; stage <= 3; ++stage)
      if (devices != sharding.devices || stage > sharding.zeroStage)
        addZero(stage, devices, llvm::formatv("zero-{0}", stage).str(), "");
    if (sharding.zeroStage == 3 && sharding.devices > 1)
      addZero(3, 2 * sharding.devices, "more-devices",
              " (twice --devices; the global batch doubles)");
  }

  // 5. Offload to host memory: only for a step that has an optimizer (the
  // policies move optimizer states, and params offload with them).
  if (memory.training && hasOptimizerStep(function)) {
    for (OffloadPolicy policy :
         {OffloadPolicy::Optimizer, OffloadPolicy::Params}) {
      if (static_cast<int>(policy) <= static_cast<int>(sharding.offload))
        continue;
      ShardingOptions options = sharding;
      options.offload = policy;
      add(policy == OffloadPolicy::Optimizer ? "offload-optimizer"
                                             : "offload-params",
          llvm::formatv("keep {0} in host memory (PCIe {1:f0} GB/s, CPU "
                        "AdamW at {2:f0}e9 params/s)",
                        policy == OffloadPolicy::Optimizer
                            ? "optimizer states"
                            : "optimizer states and weights",
                        target.interconnect.pcieBandwidth / 1e9,
                        kCpuAdamParamsPerSecond / 1e9),
          scaled(MemoryScaling(), options), stepTime(baseTimes, 1, options));
    }
  }

  // 6. Shorter sequence, 7. narrower model: they change what is trained.
  {
    TimeModel model;
    model.activationScale = 0.5;
    model.attentionScale = 0.5;
    add("half-sequence",
        "halve the sequence length (changes the training data)",
        scaled(activationScaling(0.5, 0.25), sharding),
        stepTime(predictPhaseTimes(function, target, model), 1, sharding));
  }
  {
    MemoryScaling scaling = activationScaling(0.5, 1);
    for (MemoryBucket b : {MemoryBucket::Weights, MemoryBucket::Gradients,
                           MemoryBucket::Optimizer})
      scaling.factor[static_cast<unsigned>(b)] = 0.25;
    TimeModel model;
    model.activationScale = 0.5;
    add("half-width",
        "halve the hidden size (a quarter of the parameters; changes the "
        "model)",
        scaled(scaling, sharding),
        stepTime(predictPhaseTimes(function, target, model), 1, sharding,
                 0.25));
  }
  for (MemoryFix &fix : budget.fixes)
    if (fix.fits) {
      fix.firstThatFits = true;
      break;
    }
  return budget;
}
