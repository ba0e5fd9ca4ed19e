//===- InferenceFixes.h - serving fixes and --max-batch ---------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The inference counterpart of planBudget (MemoryAnalysis.h): fixes in
// serving terms (batch, context, KV-cache dtype, weight quantization), each
// predicted by re-simulating the memory with the buckets it changes scaled
// and by re-scaling each op's roofline terms; and the largest batch and
// context that fit a memory limit (--max-batch). docs/memory.md, "Inference:
// will it fit".
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_INFERENCEFIXES_H
#define MEMWALL_ANALYSIS_INFERENCEFIXES_H

#include "memwall/Analysis/MemoryAnalysis.h"

namespace memwall {

/// A change to an inference step, as factors on its current settings.
struct InferenceChange {
  double batch = 1;             // sequences per step
  double context = 1;           // cached tokens attention reads (KV length)
  double kvBytesPerElement = 1; // KV-cache bytes per element
  double gemmWeightBytes = 1;   // bytes of the weights GEMMs stream
};

/// The step's batch (dimension 0 of the token ids), the new tokens per
/// sequence, and the KV length attention reads (0 without a KV cache).
struct InferenceShape {
  int64_t batch = 1;
  int64_t newTokens = 1;
  int64_t context = 0;
};
InferenceShape getInferenceShape(mlir::func::FuncOp function);

/// Predicted step time of `function` with `change` applied: each top-level
/// op's estimateOpRoofline terms, its weight, KV-cache and activation bytes
/// and its FLOPs scaled by what the change does to them, recombined as the
/// time model combines them.
double predictInferenceStepSeconds(mlir::func::FuncOp function,
                                   const GPUTarget &target,
                                   const InferenceChange &change);

/// The simulated per-device peak with `change` applied (activations, KV
/// cache and workspace scale with the batch; the KV cache and the attention
/// workspace with the context; the weights bucket by the quantized size).
int64_t predictInferencePeakBytes(mlir::func::FuncOp function,
                                  const ShardingOptions &sharding,
                                  const InferenceChange &change);

/// Whether the inference step fits `budgetBytes` per device and, when it
/// does not, the fixes: smaller batch, shorter context, fp8 KV cache, int8
/// and int4 weights, each with its peak, step time and tokens/s; the first
/// that fits is marked. Never a training fix (no gradient accumulation).
BudgetSummary planInferenceBudget(mlir::func::FuncOp function,
                                  const MemorySummary &memory,
                                  int64_t budgetBytes,
                                  const ShardingOptions &sharding,
                                  const GPUTarget &target);

/// The largest batch (and, at the step's batch, the largest context) whose
/// simulated peak fits `limitBytes`; `limit` names where the limit comes
/// from ("budget" or "capacity").
CapacitySummary findMaxBatch(mlir::func::FuncOp function,
                             const ShardingOptions &sharding,
                             const GPUTarget &target, int64_t limitBytes,
                             llvm::StringRef limit);

} // namespace memwall

#endif // MEMWALL_ANALYSIS_INFERENCEFIXES_H
