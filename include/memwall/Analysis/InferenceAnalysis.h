//===- InferenceAnalysis.h - why an inference step is memory-bound -*- C++ -*-//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Explains the roofline position of a prefill or decode step: how many bytes
// of weights and KV cache it streams, the arithmetic intensity of its
// weight-streaming GEMMs against the target's ridge, and how many tokens per
// step would make them compute-bound.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_INFERENCEANALYSIS_H
#define MEMWALL_ANALYSIS_INFERENCEANALYSIS_H

#include "memwall/Hardware/GPUTarget.h"
#include "memwall/Analysis/CostResults.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace memwall {

/// The function argument `value` is a view, cast or cache append of, through
/// fusions (a fusion's body argument stands for its input, its result for
/// the value its body yields); null for anything computed. Weights are cast at
/// use under weight-only quantization, caches are appended to.
mlir::BlockArgument getRootArgument(mlir::Value value);

/// The inference summary of `function` on `target`; nullopt for training
/// steps (ops with a memwall.phase) and graphs without a GEMM on a weight.
std::optional<InferenceSummary> analyzeInference(mlir::func::FuncOp function,
                                                 const GPUTarget &target);

} // namespace memwall

#endif // MEMWALL_ANALYSIS_INFERENCEANALYSIS_H
