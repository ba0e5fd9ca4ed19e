//===- RematSolverTest.cpp - recomputation solvers against brute force ----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The plan formula (RematSolver.h) on hand-computed cases, and the solvers
// on random small problems against exhaustive search: the MILP must match
// the optimum exactly; the DP and greedy plans must be honest (their
// reported memory and cost are the formula's) and never beat it.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/RematSolver.h"
#include "memwall/Support/CheckedInt.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

using namespace memwall;

namespace {

/// One layer: x (input, kept by the caller's choice) -> h = f(x) -> y = g(h),
/// all three read by the backward.
RematProblem chain() {
  RematProblem p;
  p.numGroups = 1;
  p.values.resize(3);
  p.values[0] = {100, 1.0, 10, 0, {}, true, true};
  p.values[1] = {200, 2.0, 20, 0, {0}, true, true};
  p.values[2] = {300, 4.0, 40, 0, {1}, true, true};
  return p;
}

TEST(RematSolvers, NonFiniteFiguresAreRefusedBeforeAnySolverRuns) {
  // A recompute time of inf (a target whose bf16 peak is 1e-308 FLOP/s)
  // reached CBC as a NaN objective coefficient, and CLP aborted.
  RematProblem p = chain();
  p.values[1].seconds = std::numeric_limits<double>::infinity();
  std::string why = whyRematProblemIsInvalid(p);
  EXPECT_NE(why.find("value #1"), std::string::npos) << why;
  EXPECT_NE(why.find("finite, non-negative"), std::string::npos) << why;
  for (RematSolverKind kind : {RematSolverKind::Auto, RematSolverKind::MILP,
                               RematSolverKind::DP, RematSolverKind::Greedy}) {
    RematSolveOptions options;
    options.solver = kind;
    RematPlan plan = solveRemat(p, 100, options);
    EXPECT_FALSE(plan.feasible);
    EXPECT_EQ(plan.solver, "refused: " + why);
  }
  RematPlan least = minimumMemoryRematPlan(p);
  EXPECT_EQ(least.solver, "refused: " + why);
  p.values[1].seconds = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(whyRematProblemIsInvalid(p).empty());
  p.values[1].seconds = 2.0;
  p.values[2].bytes = -1;
  EXPECT_FALSE(whyRematProblemIsInvalid(p).empty());
  EXPECT_EQ(whyRematProblemIsInvalid(chain()), "");
}

TEST(RematPlanFormula, MemoryPastInt64IsNeverFeasible) {
  RematProblem p = chain();
  for (RematValue &v : p.values)
    v.bytes = int64_t(1) << 62;
  RematPlan plan =
      evaluateRematPlan(p, {}, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(plan.memory, kUncountable);
  EXPECT_FALSE(plan.feasible);
}

TEST(RematPlanFormula, NothingRecomputedKeepsEveryNeededValue) {
  RematPlan plan = evaluateRematPlan(chain(), {}, 600);
  EXPECT_EQ(plan.memory, 100 + 200 + 300);
  EXPECT_EQ(plan.cost, 0);
  EXPECT_TRUE(plan.feasible);
  EXPECT_FALSE(evaluateRematPlan(chain(), {}, 599).feasible);
}

TEST(RematPlanFormula, RecomputedValuesCountOnceAsTheGroupsTransient) {
  // Recompute y (reads h, kept): kept x + h = 300, transient y = 300.
  RematPlan y = evaluateRematPlan(chain(), {false, false, true}, 1000);
  EXPECT_EQ(y.memory, 100 + 200 + 300);
  EXPECT_DOUBLE_EQ(y.cost, 4.0);
  EXPECT_DOUBLE_EQ(y.flops, 40);
  // Recompute h and y from x: kept 100, transient 500.
  RematPlan hy = evaluateRematPlan(chain(), {false, true, true}, 1000);
  EXPECT_EQ(hy.memory, 100 + 500);
  EXPECT_DOUBLE_EQ(hy.cost, 6.0);
}

TEST(RematPlanFormula, TransientIsTheLargestGroupNotTheSum) {
  // Two copies of the chain in groups 0 and 1; recomputing h and y in both
  // keeps 2 x 100 and adds max(500, 500).
  RematProblem p = chain();
  p.numGroups = 2;
  for (int i = 0; i < 3; ++i) {
    RematValue v = p.values[i];
    v.group = 1;
    for (int &d : v.deps)
      d += 3;
    p.values.push_back(v);
  }
  RematPlan plan =
      evaluateRematPlan(p, {false, true, true, false, true, true}, 700);
  EXPECT_EQ(plan.memory, 2 * 100 + 500);
  EXPECT_TRUE(plan.feasible);
}

TEST(RematPlanFormula, UselessRecomputationIsDroppedAndCostsNothing) {
  // A value nothing in the backward reads is never worth recomputing.
  RematProblem p = chain();
  p.values[0].neededByBackward = false;
  RematPlan plan = evaluateRematPlan(p, {true, false, false}, 1000);
  EXPECT_FALSE(plan.recompute[0]);
  EXPECT_EQ(plan.cost, 0);
  EXPECT_EQ(plan.memory, 200 + 300);
}

TEST(RematPlanFormula, ADepInAnotherGroupIsKeptEvenIfMarkedRecomputed) {
  // y in group 1 reads h in group 0: recomputing y keeps h, so h cannot
  // also be recomputed.
  RematProblem p = chain();
  p.numGroups = 2;
  p.values[2].group = 1;
  RematPlan plan = evaluateRematPlan(p, {false, true, true}, 1000);
  EXPECT_FALSE(plan.recompute[1]);
  EXPECT_TRUE(plan.recompute[2]);
  EXPECT_EQ(plan.memory, 100 + 200 + 300);
  EXPECT_DOUBLE_EQ(plan.cost, 4.0);
}

TEST(RematPlanFormula, NonRecomputableValuesStayKept) {
  RematProblem p = chain();
  p.values[1].recomputable = false;
  RematPlan plan = evaluateRematPlan(p, {false, true, true}, 1000);
  EXPECT_FALSE(plan.recompute[1]);
  EXPECT_EQ(plan.memory, 100 + 200 + 300);
}

TEST(RematSolverNames, RoundTripAndRejectUnknown) {
  for (const char *name : {"auto", "milp", "dp", "greedy"})
    EXPECT_STREQ(stringifyRematSolver(*symbolizeRematSolver(name)), name);
  EXPECT_FALSE(symbolizeRematSolver("ilp"));
}

/// Random layer-structured problems: `groups` groups of values, each value
/// reading 1-2 earlier values, mostly of its own group.
RematProblem randomProblem(std::mt19937 &rng, int groups, int perGroup) {
  RematProblem p;
  p.numGroups = groups;
  std::uniform_int_distribution<int> bytes(1, 50), pick(0, 99);
  std::uniform_real_distribution<double> seconds(0.1, 5.0);
  for (int g = 0; g < groups; ++g)
    for (int j = 0; j < perGroup; ++j) {
      RematValue v;
      v.bytes = bytes(rng) * 10;
      v.seconds = seconds(rng);
      v.flops = v.seconds * 1e3;
      v.group = g;
      int n = static_cast<int>(p.values.size());
      for (int k = 0; k < 2 && n > 0; ++k) {
        int lo = (pick(rng) < 80 && j > 0) ? n - j : 0;
        int d = std::uniform_int_distribution<int>(lo, n - 1)(rng);
        if (std::find(v.deps.begin(), v.deps.end(), d) == v.deps.end())
          v.deps.push_back(d);
      }
      v.neededByBackward = pick(rng) < 80;
      v.recomputable = pick(rng) < 90;
      p.values.push_back(v);
    }
  return p;
}

TEST(RematSolvers, MilpMatchesBruteForceOnRandomProblems) {
  std::mt19937 rng(7);
  int compared = 0;
  for (int trial = 0; trial < 40; ++trial) {
    RematProblem p = randomProblem(rng, 1 + trial % 3, 4 + trial % 3);
    int64_t all = evaluateRematPlan(p, {}, 0).memory;
    for (double fraction : {0.9, 0.7, 0.5, 0.35}) {
      int64_t capacity = static_cast<int64_t>(all * fraction);
      RematPlan exact = solveRematBruteForce(p, capacity);
      RematSolveOptions options;
      options.solver = RematSolverKind::MILP;
      RematPlan milp = solveRemat(p, capacity, options);
      ASSERT_EQ(milp.feasible, exact.feasible)
          << "trial " << trial << " capacity " << capacity;
      if (!exact.feasible)
        continue;
      ++compared;
      EXPECT_NEAR(milp.cost, exact.cost, 1e-6 * std::max(1.0, exact.cost))
          << "trial " << trial << " capacity " << capacity;
      EXPECT_TRUE(milp.optimal);
      EXPECT_LE(milp.memory, capacity);
      ASSERT_TRUE(milp.bound);
      EXPECT_LE(*milp.bound, milp.cost + 1e-9);
    }
  }
  EXPECT_GT(compared, 30); // enough capacities are reachable
}

TEST(RematSolvers, HeuristicPlansAreHonestAndNeverBeatTheOptimum) {
  std::mt19937 rng(11);
  int dpFeasible = 0, greedyFeasible = 0, exactFeasible = 0;
  for (int trial = 0; trial < 40; ++trial) {
    RematProblem p = randomProblem(rng, 2 + trial % 3, 4);
    int64_t all = evaluateRematPlan(p, {}, 0).memory;
    for (double fraction : {0.8, 0.6}) {
      int64_t capacity = static_cast<int64_t>(all * fraction);
      RematPlan exact = solveRematBruteForce(p, capacity);
      exactFeasible += exact.feasible;
      for (RematSolverKind kind :
           {RematSolverKind::DP, RematSolverKind::Greedy}) {
        RematSolveOptions options;
        options.solver = kind;
        RematPlan plan = solveRemat(p, capacity, options);
        RematPlan check = evaluateRematPlan(p, plan.recompute, capacity);
        EXPECT_EQ(plan.memory, check.memory);
        EXPECT_DOUBLE_EQ(plan.cost, check.cost);
        EXPECT_EQ(plan.feasible, check.feasible);
        if (plan.feasible) {
          EXPECT_TRUE(exact.feasible);
          EXPECT_GE(plan.cost, exact.cost - 1e-9);
          (kind == RematSolverKind::DP ? dpFeasible : greedyFeasible)++;
        }
      }
    }
  }
  // The heuristics find a plan for most reachable capacities of these
  // random (not layer-shaped) problems; bench/remat measures their quality
  // on real training graphs against the MILP.
  EXPECT_GE(dpFeasible, exactFeasible * 2 / 3);
  EXPECT_GE(greedyFeasible, exactFeasible * 2 / 3);
}

TEST(RematSolvers, MinimumMemoryPlanReachesTheBruteForceMinimum) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    RematProblem p = randomProblem(rng, 2, 5);
    int64_t least = evaluateRematPlan(p, {}, 0).memory;
    std::vector<int> n;
    for (uint64_t mask = 0; mask < (uint64_t(1) << p.values.size()); ++mask) {
      std::vector<bool> rec(p.values.size());
      for (size_t b = 0; b < p.values.size(); ++b)
        rec[b] = (mask >> b) & 1;
      least = std::min(least, evaluateRematPlan(p, rec, 0).memory);
    }
    RematPlan plan = minimumMemoryRematPlan(p);
    EXPECT_EQ(plan.memory, least) << "trial " << trial;
  }
}

} // namespace
