//===- CostAnalysis.cpp - Roofline costs of memwall IR --------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/CostAnalysis.h"

#include "memwall/Analysis/FusionCost.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Location.h"

#include <cmath>

using namespace mlir;
using namespace memwall;

KernelWork memwall::getOpKernelWork(CostOpInterface op,
                                    const GPUTarget &target) {
  // An op codegen runs as a generated kernel or a cuBLASLt call is that
  // kernel, launch geometry included, so the report, fusion, remat and the
  // bundle agree; anything else is its own kernel work.
  FailureOr<KernelAnalysis> kernel = analyzeOpKernel(op, target);
  if (succeeded(kernel))
    return kernel->work;
  return op.getKernelWork(target);
}

RooflineEstimate memwall::estimateOpRoofline(CostOpInterface op,
                                             const GPUTarget &target) {
  return estimateKernelTime(getOpKernelWork(op, target), target);
}

std::string memwall::getTimeCategory(CostOpInterface op,
                                     const KernelWork &work) {
  Operation *operation = op.getOperation();
  if (auto fusion = dyn_cast<FusionOp>(operation)) {
    switch (fusion.getKind()) {
    case FusionKind::MatmulEpilogue:
    case FusionKind::Gemm:
      return "gemm";
    case FusionKind::Reduction:
      return "norm";
    case FusionKind::Elementwise:
    case FusionKind::Dequantize:
      return "elementwise";
    case FusionKind::Attention:
    case FusionKind::AttentionGrad:
      return "attention";
    case FusionKind::Rope:
      return "layout";
    case FusionKind::Horizontal:
      return "optimizer";
    }
  }
  if (work.unit == ComputeUnit::Gemm || work.unit == ComputeUnit::GeneratedGemm)
    return "gemm";
  if (work.unit == ComputeUnit::Attention)
    return "attention";
  if (isa<AdamWOp>(operation))
    return "optimizer";
  if (isRowReductionOp(operation) ||
      isa<SoftmaxOp, ReduceOp, CrossEntropyOp, LayerNormGradOp, RmsNormGradOp,
          CrossEntropyGradOp>(operation))
    return "norm";
  if (isElementwiseOp(operation) || work.flops > 0)
    return "elementwise";
  return "layout";
}

/// The expert_matmul that reads `value` as its experts' weights, directly
/// or through casts (a precision policy's copies); null when none does.
static ExpertMatmulOp findExpertUse(Value value) {
  for (OpOperand &use : value.getUses()) {
    if (auto expert = dyn_cast<ExpertMatmulOp>(use.getOwner());
        expert && use.get() == expert.getWeight())
      return expert;
    if (auto cast = dyn_cast<CastOp>(use.getOwner()))
      if (ExpertMatmulOp expert = findExpertUse(cast.getResult()))
        return expert;
  }
  return nullptr;
}

ParameterSummary memwall::summarizeParameters(ModuleOp module) {
  CheckedInt params = 0, bytes = 0, trainable = 0;
  CheckedInt inactive = 0, expertParams = 0, expertBytes = 0;
  CheckedInt expectedRead = 0, worstRead = 0;
  module.walk([&](FunctionOpInterface function) {
    for (unsigned index = 0, e = function.getNumArguments(); index < e;
         ++index) {
      if (getArgKind(function, index) != ArgKind::Weight)
        continue;
      Value argument = function.getArgument(index);
      Type type = argument.getType();
      bytes += countTensorBytes(type);
      // Scales are bytes of the weights they scale, not parameters.
      if (isQuantizationMetadata(argument))
        continue;
      params += countElements(type);
      if (isTrainableWeight(function, index))
        trainable += countElements(type);
      ExpertMatmulOp expert = findExpertUse(argument);
      if (!expert)
        continue;
      // Each of the E experts is an equal share; a token uses k of them.
      ExpertMatmulOp::Dims dims = expert.getDims();
      CheckedInt elements = countElements(type);
      expertParams += elements;
      expertBytes += countTensorBytes(type);
      if (dims.experts > 0)
        inactive += CheckedInt(elements.saturated() / dims.experts) *
                    (dims.experts - dims.slots);
    }
  });
  module.walk([&](ExpertMatmulOp expert) {
    int64_t perExpert = expert.getExpertWeightBytes();
    expectedRead += static_cast<int64_t>(
        std::llround(expert.getExpectedExpertsRead() * perExpert));
    worstRead += CheckedInt(expert.getWorstCaseExpertsRead()) * perExpert;
  });
  ParameterSummary summary{params.saturated(), bytes.saturated(),
                           trainable.saturated(), std::nullopt};
  if (expertParams.saturated() > 0)
    summary.mixture =
        MixtureSummary{(params - inactive).saturated(),
                       expertParams.saturated(), expertBytes.saturated(),
                       expectedRead.saturated(), worstRead.saturated()};
  return summary;
}

LogicalResult memwall::verifyCountableTotals(ModuleOp module) {
  // Running totals over the module; an error at the op (or function) where
  // one stops fitting int64.
  CheckedInt flops = 0, moved = 0, params = 0, paramBytes = 0;
  auto tooMany = [](Operation *at, const Twine &what) {
    at->emitError() << what << " are more than memwall can count (int64)";
  };
  WalkResult result = module.walk([&](FunctionOpInterface function) {
    // Every buffer of the function, live or not: what memory peaks, sharded
    // states and arenas sum subsets of.
    CheckedInt buffers = 0;
    for (auto [index, argument] : llvm::enumerate(function.getArguments())) {
      Type type = argument.getType();
      if (failed(verifyCountableTensor(type, [&] {
            return function->emitError() << "argument #" << index << " of @"
                                         << function.getName() << ": ";
          })))
        return WalkResult::interrupt();
      buffers += countTensorBytes(type);
      auto kind = function.getArgAttrOfType<ArgKindAttr>(
          index, MemWallDialect::kArgKindAttrName);
      if (kind && kind.getValue() == ArgKind::Weight) {
        params += countElements(type);
        paramBytes += countTensorBytes(type);
      }
    }
    StringRef name = function.getName();
    if (params.overflowed() || paramBytes.overflowed()) {
      tooMany(function, "the parameters of the module up to @" + name);
      return WalkResult::interrupt();
    }
    if (buffers.overflowed()) {
      tooMany(function, "the argument bytes of @" + name);
      return WalkResult::interrupt();
    }
    WalkResult inner = function->walk([&](Operation *op) {
      for (Type type : op->getResultTypes())
        buffers += countTensorBytes(type);
      if (buffers.overflowed()) {
        // Views counted as buffers of their own: a bound, not the peak.
        tooMany(op, "the buffer bytes of @" + name + " up to this op");
        return WalkResult::interrupt();
      }
      auto cost = dyn_cast<CostOpInterface>(op);
      // A fusion's body is counted through the fusion.
      if (!cost || op->getParentOfType<FusionOp>())
        return WalkResult::advance();
      flops += CheckedInt::fromSaturated(cost.getFlops());
      moved += CheckedInt::fromSaturated(cost.getBytesRead()) +
               CheckedInt::fromSaturated(cost.getBytesWritten());
      if (flops.overflowed() || moved.overflowed()) {
        tooMany(op, Twine("the ") +
                        (flops.overflowed() ? "FLOPs" : "bytes moved") +
                        " of the module up to this op of @" + name);
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return inner.wasInterrupted() ? WalkResult::interrupt()
                                  : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

std::string memwall::formatLocationForReport(Location loc) {
  if (auto fileLoc = dyn_cast<FileLineColLoc>(loc))
    return (fileLoc.getFilename().getValue() + ":" + Twine(fileLoc.getLine()) +
            ":" + Twine(fileLoc.getColumn()))
        .str();
  if (auto nameLoc = dyn_cast<NameLoc>(loc))
    return nameLoc.getName().getValue().str();
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return formatLocationForReport(callSite.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    std::string joined;
    for (Location part : fused.getLocations()) {
      if (!joined.empty())
        joined += "+";
      joined += formatLocationForReport(part);
    }
    return joined.empty() ? "?" : joined;
  }
  return "?";
}

/// The kernels under `root` on `target`, `kernelWork` giving each op's
/// kernel and `gemmChoice` (optional) which GEMM kernel a fusion runs on.
static ModuleCost
computeCost(Operation *root, const GPUTarget &target,
            llvm::function_ref<KernelWork(CostOpInterface)> kernelWork,
            llvm::function_ref<std::string(Operation *)> gemmChoice = {}) {
  ModuleCost cost;
  if (auto module = dyn_cast<ModuleOp>(root)) {
    if (std::optional<StringRef> name = module.getSymName())
      cost.modelName = name->str();
    ParameterSummary parameters = summarizeParameters(module);
    cost.params = parameters.params;
    cost.paramBytes = parameters.bytes;
    cost.trainableParams = parameters.trainableParams;
    cost.mixture = parameters.mixture;
  }
  auto makeRecord = [&](CostOpInterface op, unsigned id) {
    OpRecord record;
    record.id = id;
    record.op = op->getName().getStringRef().str();
    record.loc = formatLocationForReport(op->getLoc());
    // Traffic of the op's kernel on this target: a tiled op re-reads less
    // when its working set stays in the L2, a kernel reads a value it uses
    // twice once.
    KernelWork work = kernelWork(op);
    record.flops = op.getFlops();
    record.bytesRead = CheckedInt::fromDouble(work.bytesRead).saturated();
    record.bytesWritten = CheckedInt::fromDouble(work.bytesWritten).saturated();
    record.precision = op.getMathPrecision();
    record.estimate = estimateKernelTime(work, target);
    record.category = getTimeCategory(op, work);
    return record;
  };
  // memwall-fuse marks each function it ran on.
  bool fused = root->hasAttr(MemWallDialect::kFusedAttrName) ||
               llvm::any_of(root->getRegions(), [](Region &region) {
                 return llvm::any_of(
                     region.getOps<func::FuncOp>(), [](func::FuncOp function) {
                       return function->hasAttr(MemWallDialect::kFusedAttrName);
                     });
               });
  // Kernels an op launches: split K adds a reduce kernel after the GEMM.
  auto kernelsOf = [&](CostOpInterface op) -> unsigned {
    if (!op.launchesKernel())
      return 0;
    return 1 + static_cast<unsigned>(
                   std::max<int64_t>(kernelWork(op).extraLaunches, 0));
  };
  FusionSummary fusion;
  root->walk<WalkOrder::PreOrder>([&](CostOpInterface op) {
    OpRecord record = makeRecord(op, cost.ops.size());
    unsigned kernels = kernelsOf(op);
    fusion.kernelsAfter += kernels;
    fusion.timeAfterSeconds += record.estimate.timeSeconds;
    auto fusionOp = dyn_cast<FusionOp>(op.getOperation());
    if (!fusionOp) {
      fusion.kernelsBefore += kernels;
      fusion.timeBeforeSeconds += record.estimate.timeSeconds;
      cost.ops.push_back(std::move(record));
      return WalkResult::advance();
    }
    fused = true;
    FusionGroupRecord group;
    group.id = record.id;
    group.kind = stringifyFusionKind(fusionOp.getKind()).str();
    if (gemmChoice)
      group.gemmChoice = gemmChoice(fusionOp);
    group.timeAfterSeconds = record.estimate.timeSeconds;
    CheckedInt bytesBefore = 0;
    for (Operation &inner : fusionOp.getBodyBlock().without_terminator()) {
      auto innerCost = dyn_cast<CostOpInterface>(inner);
      if (!innerCost)
        continue;
      OpRecord innerRecord = makeRecord(innerCost, 0);
      group.ops.push_back(innerRecord.loc);
      // A view memwall-fuse added (a copy, or an output read back) was no
      // kernel before fusion.
      if (inner.hasAttr(MemWallDialect::kAddedViewAttrName))
        continue;
      group.kernelsBefore += kernelsOf(innerCost);
      bytesBefore += CheckedInt::fromSaturated(innerRecord.bytesRead) +
                     CheckedInt::fromSaturated(innerRecord.bytesWritten);
      group.timeBeforeSeconds += innerRecord.estimate.timeSeconds;
    }
    CheckedInt saved = bytesBefore -
                       CheckedInt::fromSaturated(record.bytesRead) -
                       CheckedInt::fromSaturated(record.bytesWritten);
    group.bytesSaved = saved.saturated();
    fusion.kernelsBefore += group.kernelsBefore;
    fusion.timeBeforeSeconds += group.timeBeforeSeconds;
    fusion.bytesSaved =
        (CheckedInt::fromSaturated(fusion.bytesSaved) + saved).saturated();
    fusion.groups.push_back(std::move(group));
    cost.ops.push_back(std::move(record));
    // The body's ops are accounted for through the fusion.
    return WalkResult::skip();
  });
  if (fused)
    cost.fusion = std::move(fusion);
  return cost;
}

ModuleCost memwall::computeModuleCost(ModuleOp module,
                                      const GPUTarget &target) {
  return computeCost(module, target, [&](CostOpInterface op) {
    return getOpKernelWork(op, target);
  });
}

CostAnalysis::CostAnalysis(Operation *root, AnalysisManager &am) {
  const FusionCostAnalysis &kernels = am.getAnalysis<FusionCostAnalysis>();
  FailureOr<GPUTarget> resolved = kernels.getTarget();
  if (failed(resolved))
    return;
  target = std::move(*resolved);
  auto kernelWork = [&](CostOpInterface op) {
    if (const KernelAnalysis *kernel = kernels.lookup(op))
      return kernel->work;
    return op.getKernelWork(*target);
  };
  auto gemmChoice = [&](Operation *op) -> std::string {
    if (const KernelAnalysis *kernel = kernels.lookup(op))
      return kernel->gemmChoice;
    return "";
  };
  cost = computeCost(root, *target, kernelWork, gemmChoice);
  if (cost.fusion)
    root->walk([&](func::FuncOp function) {
      std::vector<FusionRefusal> refused =
          explainUnfusedGemmConsumers(function, *target);
      cost.fusion->refused.insert(cost.fusion->refused.end(),
                                  std::make_move_iterator(refused.begin()),
                                  std::make_move_iterator(refused.end()));
      std::vector<FusionRefusal> dequantizes =
          explainDequantizeKernels(function, *target);
      cost.fusion->dequantizeKernels.insert(
          cost.fusion->dequantizeKernels.end(),
          std::make_move_iterator(dequantizes.begin()),
          std::make_move_iterator(dequantizes.end()));
    });
}

FailureOr<GPUTarget> CostAnalysis::getTarget() const {
  if (!target)
    return failure();
  return *target;
}
