//===- RematSolver.h - which forward values to recompute --------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The recomputation (activation checkpointing) decision as a plain
// combinatorial problem, free of MLIR so that solvers can be tested against
// brute force. docs/remat.md gives the formulation.
//
// Every forward value v has a size b_v, a recompute time t_v (its defining
// op's roofline time), a group g(v) (its layer) and the forward values its
// op reads (deps). A plan recomputes a set R: values in R are re-created in
// the backward, group by group, just before the group's backward first needs
// them, and die with that group's backward; every other value the backward
// or a recomputation reads is kept from the forward. A recomputation may read
// a recomputed value of its own group only: values of other groups it reads
// are kept, so recomputed values never outlive their group's backward.
//
//   kept(u)  = (needed_u or read by a recomputed op) and u not in R,
//              or u is read by a recomputed op of another group
//   memory   = sum kept b_u + max over groups of sum_{v in R, g(v) = g} b_v
//   cost     = sum_{v in R} t_v
//
// minimize cost subject to memory <= capacity. `memory` counts only the
// candidates; the caller adds what the plan cannot change (weights,
// optimizer states, ...) and checks the real peak by simulation.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_REMATSOLVER_H
#define MEMWALL_ANALYSIS_REMATSOLVER_H

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace memwall {

struct RematValue {
  int64_t bytes = 0;
  double seconds = 0; // time to recompute (its op alone)
  double flops = 0;
  int group = 0;
  std::vector<int> deps; // indices of the forward values its op reads
  bool neededByBackward = false;
  /// Values that cannot be recomputed (e.g. ops with effects): always kept
  /// when needed.
  bool recomputable = true;
};

struct RematProblem {
  std::vector<RematValue> values;
  int numGroups = 1;
};

enum class RematSolverKind { Auto, MILP, DP, Greedy };
const char *stringifyRematSolver(RematSolverKind kind);
std::optional<RematSolverKind> symbolizeRematSolver(const std::string &name);

struct RematPlan {
  std::vector<bool> recompute; // per value
  double cost = 0;             // sum of recompute seconds
  double flops = 0;
  int64_t memory = 0; // the formula above
  bool feasible = false;
  std::string solver; // which solver produced it
  /// MILP only: the best lower bound on the cost and whether the solution
  /// is proven optimal; gap = (cost - bound) / cost (0 when optimal).
  std::optional<double> bound;
  bool optimal = false;
  double gap() const;
};

/// Evaluates `recompute` by the formula (fills cost, flops, memory,
/// feasible against `capacity`).
RematPlan evaluateRematPlan(const RematProblem &problem,
                            std::vector<bool> recompute, int64_t capacity);

struct RematSolveOptions {
  RematSolverKind solver = RematSolverKind::Auto;
  double timeLimitSeconds = 10; // MILP
  /// Called every 2 seconds during long MILP solves with a line of
  /// progress; may be empty.
  std::function<void(const std::string &)> progress;
};

/// Why the solvers cannot take `problem`, or "" when they can: a value with
/// a negative size, or a recompute time or FLOP count that is not a finite
/// non-negative number (it would reach the MILP as a NaN coefficient, which
/// CBC aborts on).
std::string whyRematProblemIsInvalid(const RematProblem &problem);

/// The cheapest plan whose memory is <= capacity, by the chosen solver
/// (auto: MILP up to 400 decisions, else DP). Infeasible plans come back
/// with feasible = false (the plan with the least memory the solver found).
/// An invalid problem (whyRematProblemIsInvalid) runs no solver: the plan
/// recomputes nothing, and its `solver` says why.
RematPlan solveRemat(const RematProblem &problem, int64_t capacity,
                     const RematSolveOptions &options = {});

/// What `auto` means for `problem`: the MILP up to 400 decisions, else DP.
RematSolverKind resolveAutoSolver(const RematProblem &problem);

/// Exhaustive search, for tests (n <= 20).
RematPlan solveRematBruteForce(const RematProblem &problem, int64_t capacity);

/// The plan with the least memory the solvers find (exact where the MILP
/// runs), cheapest among equals.
RematPlan minimumMemoryRematPlan(const RematProblem &problem,
                                 const RematSolveOptions &options = {});

} // namespace memwall

#endif // MEMWALL_ANALYSIS_REMATSOLVER_H
