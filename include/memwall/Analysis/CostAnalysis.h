//===- CostAnalysis.h - Roofline costs of memwall IR ------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Evaluates CostOpInterface ops against a GPUTarget and collects the kernels
// of a module with their roofline estimates (CostAnalysis).
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_COSTANALYSIS_H
#define MEMWALL_ANALYSIS_COSTANALYSIS_H

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Analysis/CostResults.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/AnalysisManager.h"
#include "llvm/ADT/DenseMap.h"

namespace memwall {

/// The time model's estimate of `op` running as its own kernel on
/// `target`: ops codegen runs as generated kernels or cuBLASLt calls (and
/// fusions) through the fusion cost model's kernel analysis, geometry
/// included; any other op from its CostOpInterface kernel work.
RooflineEstimate estimateOpRoofline(CostOpInterface op,
                                    const GPUTarget &target);
/// The kernel work estimateOpRoofline times.
KernelWork getOpKernelWork(CostOpInterface op, const GPUTarget &target);

/// The report's kernel category of `op` (OpRecord::category) given its
/// kernel work.
std::string getTimeCategory(CostOpInterface op, const KernelWork &work);

/// Parameter count and bytes: the elements of every function argument tagged
/// `memwall.kind = #memwall.arg_kind<weight>`, over all functions.
struct ParameterSummary {
  int64_t params = 0;
  int64_t bytes = 0;
  /// Parameters training updates: all but `memwall.frozen` weights.
  int64_t trainableParams = 0;
  /// Present when some weights are experts' (read by expert_matmul).
  std::optional<MixtureSummary> mixture;
};
ParameterSummary summarizeParameters(mlir::ModuleOp module);

/// Fails, with one error at the op or function where a running total stops
/// fitting int64, when the module's FLOPs, bytes moved, parameters or a
/// function's buffer bytes (arguments and every result) are more than
/// memwall can count. Every aggregate memwall reports (totals, memory
/// peaks, sharded states, arenas, fusion groups) sums subsets of these, so
/// passes and tools that aggregate run this first.
mlir::LogicalResult verifyCountableTotals(mlir::ModuleOp module);

/// Formats a location for reports: "file:line:col" for file locations, the
/// name for name locations ("layers.0.attn.qkv"), "?" when unknown.
std::string formatLocationForReport(mlir::Location loc);

/// The kernels of `module` on `target`, in program order: every
/// CostOpInterface op outside fusions, each fusion as one kernel with what it
/// saved (ModuleCost::fusion).
ModuleCost computeModuleCost(mlir::ModuleOp module, const GPUTarget &target);

/// computeModuleCost of an op (usually the module) on the IR's target,
/// with the kernels of FusionCostAnalysis, and each CostOpInterface op's
/// estimate (fusion bodies included). Obtained with
/// `getAnalysis<CostAnalysis>()`; a pass that changes no op's cost (one that
/// only adds attributes, such as memwall-annotate-costs) preserves it.
class CostAnalysis {
public:
  CostAnalysis(mlir::Operation *root, mlir::AnalysisManager &am);

  /// The target of the costs; failure when the IR names no usable target
  /// (the error was emitted at construction).
  mlir::FailureOr<GPUTarget> getTarget() const;
  const ModuleCost &getModuleCost() const { return cost; }

  bool isInvalidated(const mlir::AnalysisManager::PreservedAnalyses &pa) {
    return !pa.isPreserved<CostAnalysis>();
  }

private:
  std::optional<GPUTarget> target;
  ModuleCost cost;
};

} // namespace memwall

#endif // MEMWALL_ANALYSIS_COSTANALYSIS_H
