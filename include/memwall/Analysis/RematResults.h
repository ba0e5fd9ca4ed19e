//===- RematResults.h - what memwall-remat decided ---------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Plain data (no MLIR types): the recomputation plan memwall-remat applied
// with the baselines it measured, and its overhead across budgets.
// docs/remat.md.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_REMATRESULTS_H
#define MEMWALL_ANALYSIS_REMATRESULTS_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memwall {

/// One recomputation strategy measured on the same step and budget.
struct RematBaseline {
  std::string name; // none, checkpoint-layers, chen-sqrt, selective
  int64_t peakBytes = 0;  // simulated
  double overheadSeconds = 0;
  double overheadFraction = 0; // of the step's predicted time
  int64_t recomputed = 0;      // values recomputed
  bool fits = false;
};

/// What memwall-remat did (docs/remat.md).
struct RematSummary {
  int64_t budgetBytes = 0;
  int64_t peakBeforeBytes = 0; // simulated, nothing recomputed
  int64_t peakAfterBytes = 0;  // simulated, on the transformed step
  int64_t saved = 0;           // forward values the backward keeps
  int64_t savedBytes = 0;
  int64_t recomputed = 0; // forward values recomputed in the backward
  int64_t recomputedBytes = 0;
  /// Two-level plans: the backward of each segment of this many layers
  /// starts by recomputing the segment's layer inputs from the one it keeps
  /// (segmentRecomputed values); 0 for one level.
  int64_t segmentLayers = 0;
  int64_t segmentRecomputed = 0;
  double recomputeFlops = 0;
  double overheadSeconds = 0;  // predicted recompute time
  double overheadFraction = 0; // of the step's predicted time
  std::string solver;
  /// The plan applied: the solver's, or a baseline's name when a baseline
  /// fits at a lower overhead than every plan the solvers found.
  std::string plan;
  /// Overhead of the best plan the solvers found within the budget, if any.
  std::optional<double> solverOverheadSeconds;
  double gap = 0;             // MILP: (cost - bound) / cost
  std::optional<double> bound; // MILP lower bound on overheadSeconds
  std::vector<RematBaseline> baselines;
};

/// memwall-remat's predicted overhead across budgets (--remat-pareto).
struct RematParetoPoint {
  int64_t budgetBytes = 0;
  int64_t peakBytes = 0; // simulated peak of the plan chosen at this budget
  double overheadSeconds = 0;
  double overheadFraction = 0;
};

struct RematParetoCurve {
  std::string modelName;
  int64_t budgetBytes = 0; // the budget asked for, marked on the plot
  std::vector<RematParetoPoint> points;
  std::vector<RematBaseline> baselines;
};

} // namespace memwall

#endif // MEMWALL_ANALYSIS_REMATRESULTS_H
