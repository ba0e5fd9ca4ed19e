//===- MemoryFixes.cpp - ways to make a step fit, predicted ---------------===//
//
// Each fix is predicted by re-running the liveness simulation with the fix's
// accounting (sharding, offload) or with per-bucket scaling of the buffers
// it shrinks (micro-batch, sequence, width, precision), and its time by
// re-scaling each op's roofline terms. docs/memory.md gives the assumptions.
//
//===----------------------------------------------------------------------===//

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

/// Link bandwidths (bytes/s, one direction) the communication estimates
/// use: NVLink per GPU for data-parallel collectives, PCIe for offload.
struct Links {
  double interconnect;
  double host;
};

Links linksFor(const GPUTarget &target) {
  StringRef name = target.name;
  if (name.starts_with("b200"))
    return {900e9, 64e9};
  if (name.starts_with("h100-pcie"))
    return {300e9, 64e9};
  if (name.starts_with("h100") || name.starts_with("h200"))
    return {450e9, 64e9};
  if (name.starts_with("a100"))
    return {300e9, 32e9};
  return {32e9, 32e9}; // PCIe 4.0 x16 for both
}

/// CPU AdamW throughput assumed for optimizer offload (parameters/s; a
/// DeepSpeed CPU-Adam-class implementation on a server socket).
constexpr double kCpuAdamParamsPerSecond = 2e9;

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

double predictStepTime(func::FuncOp function, const GPUTarget &target,
                       const TimeModel &model, int64_t microSteps = 1) {
  double forwardBackward = 0, optimizer = 0;
  function.walk([&](CostOpInterface op) {
    if (op->getParentOfType<FusionOp>())
      return; // the fusion is costed as a whole
    RooflineEstimate base = estimateOpRoofline(op, target);
    int64_t bytes = op.getBytesRead() + op.getBytesWritten();
    int64_t stateBytes = 0;
    for (Value operand : op->getOperands())
      if (isModelState(function, operand))
        stateBytes += getTensorByteSize(operand.getType());
    double stateFraction =
        bytes > 0 ? std::min(1.0, static_cast<double>(stateBytes) / bytes) : 0;
    bool attention = isa<AttentionOp, AttentionGradOp>(op);
    double flopScale =
        model.activationScale * (attention ? model.attentionScale : 1);
    double compute = base.computeSeconds * flopScale;
    if (model.contractionPrecision &&
        op.getMathPrecision() == MathPrecision::FP32 &&
        isa<MatmulOp, AttentionOp, AttentionGradOp>(op))
      compute = op.getFlops() * flopScale /
                target.peakFor(*model.contractionPrecision);
    double memory =
        base.memorySeconds * model.byteScale *
        (stateFraction + (1 - stateFraction) * model.activationScale);
    double time = std::max(compute, memory) + base.launchSeconds;
    if (phaseOf(op) == "optimizer")
      optimizer += time;
    else
      forwardBackward += time;
  });
  return microSteps * forwardBackward + optimizer;
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
  int64_t bytes = 0;
  for (BlockArgument arg : function.getArguments()) {
    auto kind = function.getArgAttrOfType<ArgKindAttr>(
        arg.getArgNumber(), MemWallDialect::kArgKindAttrName);
    if (kind && kind.getValue() == ArgKind::Weight) {
      bytes += getTensorByteSize(arg.getType());
      if (elementType)
        *elementType = cast<RankedTensorType>(arg.getType()).getElementType();
    }
  }
  return bytes;
}

} // namespace

BudgetSummary memwall::planBudget(func::FuncOp function,
                                  const MemorySummary &memory,
                                  int64_t budgetBytes,
                                  const ShardingOptions &sharding,
                                  const GPUTarget &target) {
  BudgetSummary budget;
  budget.budgetBytes = budgetBytes;
  budget.peakBytes = memory.peakBytes;
  budget.headroomBytes = budgetBytes - memory.peakBytes;
  budget.fits = memory.peakBytes <= budgetBytes;
  if (budget.fits)
    return budget;

  double stepSeconds = predictStepTime(function, target, TimeModel());
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
  const Links links = linksFor(target);

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
        peak, predictStepTime(function, target, model, steps));
  }

  // 2. Activation checkpointing per layer.
  if (memory.training) {
    CheckpointEstimate ckpt = estimateCheckpointing(function, target);
    if (ckpt.layers > 0) {
      int64_t peak =
          memory.peakBytes - std::max<int64_t>(0, memory.savedActivationsBytes -
                                                      ckpt.checkpointedBytes);
      add("checkpointing",
          llvm::formatv("checkpoint each of the {0} layers (keep layer "
                        "inputs, recompute the rest in the backward; "
                        "memwall-remat places it exactly)",
                        ckpt.layers),
          peak, stepSeconds + ckpt.recomputeSeconds);
    }
  }

  // 3. bf16 mixed precision when the weights are fp32.
  Type weightType;
  int64_t paramBytes = weightBytes(function, &weightType);
  if (weightType && weightType.isF32() &&
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
          static_cast<int64_t>(paramBytes * optimizerShare);
    TimeModel model;
    model.byteScale = 0.5;
    model.contractionPrecision = MathPrecision::BF16;
    add("bf16-mixed",
        "bf16 weights, activations and gradients with fp32 master weights "
        "(memwall-precision policy=bf16-mixed)",
        scaled(scaling, sharding), predictStepTime(function, target, model));
  }

  // 4. ZeRO / FSDP sharding across data-parallel devices.
  if (memory.training) {
    int64_t devices = sharding.devices > 1 ? sharding.devices : 8;
    int64_t gradientBytes = paramBytes; // gradients share the weights' type
    double ring = 2.0 * (devices - 1) / devices;
    for (int stage = std::max(1, sharding.zeroStage + 1); stage <= 3; ++stage) {
      ShardingOptions options = sharding;
      options.devices = devices;
      options.zeroStage = stage;
      // All-reduce of the gradients (reduce-scatter + all-gather); stage 3
      // also all-gathers the weights for the forward and the backward.
      double bytes = ring * gradientBytes;
      if (stage == 3)
        bytes += 2.0 * (devices - 1) / devices * paramBytes;
      add(llvm::formatv("zero-{0}", stage).str(),
          llvm::formatv("ZeRO stage {0}{1} over {2} data-parallel devices "
                        "(collectives at {3:f0} GB/s, not overlapped)",
                        stage, stage == 3 ? " (FSDP full-shard)" : "", devices,
                        links.interconnect / 1e9),
          scaled(MemoryScaling(), options),
          stepSeconds + bytes / links.interconnect);
    }
  }

  // 5. Offload to host memory.
  if (memory.training) {
    for (OffloadPolicy policy :
         {OffloadPolicy::Optimizer, OffloadPolicy::Params}) {
      if (static_cast<int>(policy) <= static_cast<int>(sharding.offload))
        continue;
      ShardingOptions options = sharding;
      options.offload = policy;
      int64_t params = 0;
      for (BlockArgument arg : function.getArguments())
        if (auto kind = function.getArgAttrOfType<ArgKindAttr>(
                arg.getArgNumber(), MemWallDialect::kArgKindAttrName);
            kind && kind.getValue() == ArgKind::Weight)
          params += getNumElements(arg.getType());
      // Gradients down and updated weights up, the CPU update, and with
      // params offloaded the weights streamed in for forward and backward.
      double seconds = stepSeconds + 2.0 * paramBytes / links.host +
                       params / kCpuAdamParamsPerSecond;
      if (policy == OffloadPolicy::Params)
        seconds += 2.0 * paramBytes / links.host;
      add(policy == OffloadPolicy::Optimizer ? "offload-optimizer"
                                             : "offload-params",
          llvm::formatv("keep {0} in host memory (PCIe {1:f0} GB/s, CPU "
                        "AdamW)",
                        policy == OffloadPolicy::Optimizer
                            ? "optimizer states"
                            : "optimizer states and weights",
                        links.host / 1e9),
          scaled(MemoryScaling(), options), seconds);
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
        predictStepTime(function, target, model));
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
        scaled(scaling, sharding), predictStepTime(function, target, model));
  }
  for (MemoryFix &fix : budget.fixes)
    if (fix.fits) {
      fix.firstThatFits = true;
      break;
    }
  return budget;
}
