//===- CommunicationAnalysis.cpp - data-parallel traffic per step ---------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Ring collectives move (n-1)/n of the buffer per device for a reduce-scatter
// or an all-gather and twice that for an all-reduce (NCCL's "bus bandwidth"
// convention), so each collective is timed as the bytes one device sends over
// the target's per-direction link bandwidth. Which collectives a ZeRO stage
// runs follows the ZeRO paper (Rajbhandari et al., SC'20, section 7) and the
// PyTorch FSDP paper (Zhao et al., VLDB'23); docs/memory.md states the
// overlap assumption.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/CommunicationAnalysis.h"

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include <algorithm>

using namespace mlir;
using namespace memwall;

StringRef memwall::collectiveLinkName(const GPUTarget &target,
                                      int64_t devices) {
  if (devices <= 1)
    return "none";
  // Mirrors GPUTarget::collectiveBandwidth, which returns only the figure.
  if (devices > static_cast<int64_t>(
                    std::max(1u, target.interconnect.gpusPerNode)))
    return "network";
  return target.interconnect.nvlinkBandwidth > 0 ? "nvlink" : "pcie";
}

CommunicationSummary
memwall::estimateCommunication(const CommunicationInputs &in,
                               const ShardingOptions &sharding,
                               const GPUTarget &target) {
  CommunicationSummary s;
  int64_t n = std::max<int64_t>(1, sharding.devices);
  int64_t m = std::max<int64_t>(1, in.microSteps);
  int stage = n > 1 ? sharding.zeroStage : 0;
  s.devices = n;
  s.zeroStage = sharding.zeroStage;
  s.offload = stringifyOffloadPolicy(sharding.offload).str();
  s.microSteps = m;
  int64_t span = in.linkSpan > 0 ? std::max(in.linkSpan, n) : n;
  s.link = collectiveLinkName(target, n > 1 ? span : 1).str();
  s.linkBandwidth = n > 1 ? target.collectiveBandwidth(span) : 0;
  s.pcieBandwidth = target.interconnect.pcieBandwidth;
  s.paramBytes = in.paramBytes;
  s.gradientBytes = in.gradientBytes;
  auto onLink = [&](double bytes) {
    return s.linkBandwidth > 0 ? bytes / s.linkBandwidth : 0;
  };
  auto onPcie = [&](double bytes) {
    return s.pcieBandwidth > 0 ? bytes / s.pcieBandwidth : 0;
  };

  // Each transfer runs in a window: the forward or the backward of the first
  // or last micro-step, or every micro-step's; what exceeds the window's
  // compute is exposed. Per-step transfers sit in one window, per-micro-step
  // ones in all m.
  double forwardOnce = 0, forwardEach = 0, backwardOnce = 0, backwardEach = 0;
  double exposed = 0;
  double f = static_cast<double>(n - 1) / n;
  double p = static_cast<double>(in.paramBytes);
  double g = static_cast<double>(in.gradientBytes);
  if (n > 1) {
    double allReduce = 0, reduceScatter = 0, allGather = 0;
    switch (stage) {
    case 0: // DDP: gradients accumulate locally, one all-reduce per step.
      allReduce = 2 * f * g;
      backwardOnce += onLink(allReduce);
      break;
    case 1: // Full gradients accumulate locally; each device keeps its
            // shard of the reduced gradient.
      reduceScatter = f * g;
      backwardOnce += onLink(reduceScatter);
      break;
    case 2: // Gradients are sharded: reduced at every micro-step.
      reduceScatter = m * f * g;
      backwardEach += onLink(f * g);
      break;
    default: // 3 / FSDP: weights gathered for the forward and again for the
             // backward, gradients reduce-scattered, every micro-step.
      allGather = 2 * m * f * p;
      reduceScatter = m * f * g;
      forwardEach += onLink(f * p);
      backwardEach += onLink(f * p + f * g);
      break;
    }
    // Stages 1 and 2 update a shard of the weights; the other shards come
    // back by an all-gather before the next forward uses them.
    if ((stage == 1 || stage == 2) && in.hasOptimizer) {
      allGather = f * p;
      forwardOnce += onLink(allGather);
    }
    // Figures past int64 (an all-reduce moves twice the gradients) read
    // kUncountable rather than overflowing the conversion.
    s.allReduceBytes = CheckedInt::fromDouble(allReduce).saturated();
    s.reduceScatterBytes = CheckedInt::fromDouble(reduceScatter).saturated();
    s.allGatherBytes = CheckedInt::fromDouble(allGather).saturated();
    s.collectiveSeconds =
        onLink(allReduce) + onLink(reduceScatter) + onLink(allGather);
  }

  // The optimizer shard a device updates (ZeRO-1 and up shard it).
  double shard = stage >= 1 ? 1.0 / n : 1.0;
  double offloadBytes = 0, offloadSeconds = 0;
  if (sharding.offload != OffloadPolicy::None) {
    if (in.hasOptimizer) {
      // Gradients go down during the backward; the CPU updates the shard.
      offloadBytes += shard * g;
      backwardOnce += onPcie(shard * g);
      double cpu = shard * in.params / kCpuAdamParamsPerSecond;
      offloadSeconds += onPcie(shard * g) + cpu;
      exposed += cpu;
    }
    if (sharding.offload == OffloadPolicy::Params) {
      // The weights stay on the host and stream in for every forward and
      // backward (a shard of them under ZeRO-3).
      double weights = stage == 3 ? p / n : p;
      offloadBytes += 2 * m * weights;
      forwardEach += onPcie(weights);
      backwardEach += onPcie(weights);
      offloadSeconds += 2 * m * onPcie(weights);
    } else if (in.hasOptimizer) {
      // Updated weights go back up before the next forward, not hidden.
      offloadBytes += shard * p;
      offloadSeconds += onPcie(shard * p);
      exposed += onPcie(shard * p);
    }
  }
  s.offloadBytes = CheckedInt::fromDouble(offloadBytes).saturated();
  s.offloadSeconds = offloadSeconds;

  auto excess = [](double comm, double compute) {
    return std::max(0.0, comm - compute);
  };
  exposed += excess(forwardOnce + forwardEach, in.forwardSeconds) +
             (m - 1) * excess(forwardEach, in.forwardSeconds) +
             excess(backwardOnce + backwardEach, in.backwardSeconds) +
             (m - 1) * excess(backwardEach, in.backwardSeconds);
  // An offloaded optimizer runs on the CPU; a sharded one updates 1/n.
  double optimizer =
      sharding.offload != OffloadPolicy::None ? 0 : in.optimizerSeconds * shard;
  s.computeSeconds =
      m * (in.forwardSeconds + in.backwardSeconds) + optimizer;
  s.exposedSeconds = exposed;
  s.stepSeconds = s.computeSeconds + s.exposedSeconds;
  s.overlap =
      "parameter all-gathers overlap the forward, gradient reductions the "
      "backward (prefetching and bucketing as in FSDP/DDP); the part longer "
      "than that phase's compute is exposed, as are the CPU optimizer and the "
      "upload of offloaded updates";
  return s;
}

bool memwall::hasOptimizerStep(func::FuncOp function) {
  for (unsigned i = 0; i < function.getNumArguments(); ++i)
    if (auto kind = function.getArgAttrOfType<ArgKindAttr>(
            i, MemWallDialect::kArgKindAttrName);
        kind && kind.getValue() == ArgKind::OptimizerState)
      return true;
  bool found = false;
  function.walk([&](AdamWOp) { found = true; });
  return found;
}

std::optional<CommunicationInputs>
memwall::getCommunicationInputs(func::FuncOp function,
                                const GPUTarget &target) {
  CommunicationInputs in;
  bool training = false;
  for (Operation &op : function.getBody().front()) {
    auto phase =
        op.getAttrOfType<StringAttr>(MemWallDialect::kPhaseAttrName);
    training |= phase != nullptr;
    auto cost = dyn_cast<CostOpInterface>(&op);
    if (!cost)
      continue;
    double seconds = estimateOpRoofline(cost, target).timeSeconds;
    StringRef name = phase ? phase.getValue() : "forward";
    if (name == "optimizer")
      in.optimizerSeconds += seconds;
    else if (name == "backward")
      in.backwardSeconds += seconds;
    else
      in.forwardSeconds += seconds;
  }
  if (!training)
    return std::nullopt;
  CheckedInt paramBytes = 0, params = 0;
  // Frozen weights (a LoRA base) are gathered but get no gradient and no
  // optimizer update.
  CheckedInt trainableBytes = 0;
  for (BlockArgument arg : function.getArguments()) {
    if (getArgKind(function, arg.getArgNumber()) != ArgKind::Weight)
      continue;
    paramBytes += countTensorBytes(arg.getType());
    if (!isTrainableWeight(function, arg.getArgNumber()))
      continue;
    trainableBytes += countTensorBytes(arg.getType());
    params += countElements(arg.getType());
  }
  in.paramBytes = paramBytes.saturated();
  in.params = params.saturated();
  // Gradients have the weights' dtype (docs/memory.md, precision table).
  in.gradientBytes = trainableBytes.saturated();
  in.hasOptimizer = hasOptimizerStep(function);
  return in;
}

std::optional<CommunicationSummary>
memwall::analyzeCommunication(func::FuncOp function,
                              const ShardingOptions &sharding,
                              const GPUTarget &target) {
  std::optional<CommunicationInputs> in =
      getCommunicationInputs(function, target);
  if (!in)
    return std::nullopt;
  return estimateCommunication(*in, sharding, target);
}
