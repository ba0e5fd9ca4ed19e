//===- CommunicationAnalysis.h - data-parallel traffic per step -*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Bytes each device moves per training step under data parallelism (DDP,
// ZeRO 1-3 / FSDP) and offload, timed on the target's interconnect fields,
// and the part of that time compute does not hide. The formulas and the
// overlap assumption are in docs/memory.md ("Communication").
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_COMMUNICATIONANALYSIS_H
#define MEMWALL_ANALYSIS_COMMUNICATIONANALYSIS_H

#include "memwall/Analysis/CostResults.h"
#include "memwall/Analysis/MemoryAnalysis.h"

namespace memwall {

/// What the formulas need from a step, free of IR so tests can state it.
struct CommunicationInputs {
  int64_t paramBytes = 0;    // weights at their stored dtype
  int64_t gradientBytes = 0; // weight gradients (the weights' dtype)
  int64_t params = 0;        // trained weight elements (CPU optimizer)
  bool hasOptimizer = true;  // the step updates the weights
  int64_t microSteps = 1;    // gradient accumulation steps per update
  /// GPUs the data-parallel group spans, which picks its link: the devices,
  /// times the tensor- and pipeline-parallel GPUs of each replica when there
  /// are (0: the devices).
  int64_t linkSpan = 0;
  /// GPU compute of one micro-step's forward and backward, and of the
  /// optimizer update of the whole model on one device.
  double forwardSeconds = 0;
  double backwardSeconds = 0;
  double optimizerSeconds = 0;
};

/// CPU AdamW throughput assumed for optimizer offload (parameters/s; a
/// DeepSpeed CPU-Adam-class implementation on a server socket).
constexpr double kCpuAdamParamsPerSecond = 2e9;

/// The link data-parallel collectives among `devices` GPUs use, as the
/// report names it: "none" (one device), "nvlink", "pcie" or "network"
/// (the same choice as GPUTarget::collectiveBandwidth).
llvm::StringRef collectiveLinkName(const GPUTarget &target, int64_t devices);

/// Traffic and step time of `inputs` under `sharding` on `target`.
CommunicationSummary estimateCommunication(const CommunicationInputs &inputs,
                                           const ShardingOptions &sharding,
                                           const GPUTarget &target);

/// True when `function` updates weights: it has an adamw op or
/// optimizer_state arguments.
bool hasOptimizerStep(mlir::func::FuncOp function);

/// The inputs of a training step, with each phase's time summed from
/// estimateOpRoofline; std::nullopt for a graph without a backward.
std::optional<CommunicationInputs>
getCommunicationInputs(mlir::func::FuncOp function, const GPUTarget &target);

/// estimateCommunication on getCommunicationInputs, or std::nullopt.
std::optional<CommunicationSummary>
analyzeCommunication(mlir::func::FuncOp function,
                     const ShardingOptions &sharding, const GPUTarget &target);

} // namespace memwall

#endif // MEMWALL_ANALYSIS_COMMUNICATIONANALYSIS_H
