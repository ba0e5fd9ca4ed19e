//===- RematSolver.cpp - which forward values to recompute ----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Three solvers for the problem of RematSolver.h: an exact MILP through
// COIN-OR CBC, a dynamic program over the groups (layers), and a greedy
// search with a local-search clean-up. All plans are scored by the same
// evaluateRematPlan.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/RematSolver.h"

#include "memwall/Support/CheckedInt.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/ErrorHandling.h"

#include <Cbc_C_Interface.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

using namespace memwall;

const char *memwall::stringifyRematSolver(RematSolverKind kind) {
  switch (kind) {
  case RematSolverKind::Auto:
    return "auto";
  case RematSolverKind::MILP:
    return "milp";
  case RematSolverKind::DP:
    return "dp";
  case RematSolverKind::Greedy:
    return "greedy";
  }
  return "?";
}

std::optional<RematSolverKind>
memwall::symbolizeRematSolver(const std::string &name) {
  for (RematSolverKind kind : {RematSolverKind::Auto, RematSolverKind::MILP,
                               RematSolverKind::DP, RematSolverKind::Greedy})
    if (name == stringifyRematSolver(kind))
      return kind;
  return std::nullopt;
}

double RematPlan::gap() const {
  if (!bound || optimal || cost <= 0)
    return 0;
  return std::max(0.0, (cost - *bound) / cost);
}

RematPlan memwall::evaluateRematPlan(const RematProblem &problem,
                                     std::vector<bool> recompute,
                                     int64_t capacity) {
  const std::vector<RematValue> &values = problem.values;
  size_t n = values.size();
  recompute.resize(n, false);
  std::vector<bool> readSameGroup(n, false), readOtherGroup(n, false);
  // Consumers come after their deps: walking backwards, every reader of a
  // value is settled before the value itself. Drop recomputations nothing
  // needs, and those of values kept anyway for another group.
  for (size_t i = n; i-- > 0;) {
    const RematValue &v = values[i];
    if (recompute[i] && (!v.recomputable || readOtherGroup[i] ||
                         !(v.neededByBackward || readSameGroup[i])))
      recompute[i] = false;
    if (!recompute[i])
      continue;
    for (int d : v.deps)
      (values[d].group == v.group ? readSameGroup : readOtherGroup)[d] = true;
  }
  RematPlan plan;
  // Byte sums are checked: a memory past int64 reads kUncountable (never
  // feasible) rather than wrapping.
  std::vector<CheckedInt> transient(std::max(problem.numGroups, 1), 0);
  CheckedInt memory = 0;
  for (size_t i = 0; i < n; ++i) {
    const RematValue &v = values[i];
    if (recompute[i]) {
      plan.cost += v.seconds;
      plan.flops += v.flops;
      transient[v.group] += CheckedInt::fromSaturated(v.bytes);
    } else if (v.neededByBackward || readSameGroup[i] || readOtherGroup[i]) {
      memory += CheckedInt::fromSaturated(v.bytes);
    }
  }
  int64_t largestTransient = 0;
  for (CheckedInt bytes : transient)
    largestTransient = std::max(largestTransient, bytes.saturated());
  plan.memory =
      (memory + CheckedInt::fromSaturated(largestTransient)).saturated();
  plan.feasible = plan.memory != kUncountable && plan.memory <= capacity;
  plan.recompute = std::move(recompute);
  return plan;
}

namespace {

/// auto runs the MILP up to this many decisions, the DP beyond.
constexpr size_t kAutoMilpLimit = 400;

/// Values a plan may recompute: recomputable and read by the backward or by
/// another forward value.
std::vector<int> decisionValues(const RematProblem &problem) {
  std::vector<bool> read(problem.values.size(), false);
  for (const RematValue &v : problem.values)
    for (int d : v.deps)
      read[d] = true;
  std::vector<int> result;
  for (size_t i = 0; i < problem.values.size(); ++i)
    if (problem.values[i].recomputable &&
        (problem.values[i].neededByBackward || read[i]))
      result.push_back(static_cast<int>(i));
  return result;
}

/// When a heuristic plan does not fit: adds the recomputation that saves the
/// most bytes per second by the exact formula, until it fits (group options
/// miss savings that come from several groups at once).
RematPlan repair(const RematProblem &problem, RematPlan plan,
                 int64_t capacity) {
  std::vector<int> decisions = decisionValues(problem);
  for (int step = 0; step < 256 && !plan.feasible; ++step) {
    RematPlan best;
    double bestRatio = -std::numeric_limits<double>::infinity();
    for (int i : decisions) {
      if (plan.recompute[i])
        continue;
      std::vector<bool> trial = plan.recompute;
      trial[i] = true;
      RematPlan candidate = evaluateRematPlan(problem, trial, capacity);
      double saved = static_cast<double>(plan.memory - candidate.memory);
      if (saved <= 0)
        continue;
      double ratio = saved / std::max(candidate.cost - plan.cost, 1e-12);
      if (ratio > bestRatio) {
        bestRatio = ratio;
        best = std::move(candidate);
      }
    }
    if (best.recompute.empty())
      break;
    best.solver = plan.solver;
    plan = std::move(best);
  }
  return plan;
}

/// Removes recomputations (most expensive first) while the plan still fits.
RematPlan localSearch(const RematProblem &problem, RematPlan plan,
                      int64_t capacity) {
  if (!plan.feasible)
    return plan;
  std::string solver = plan.solver;
  std::vector<int> recomputed;
  for (size_t i = 0; i < plan.recompute.size(); ++i)
    if (plan.recompute[i])
      recomputed.push_back(static_cast<int>(i));
  std::stable_sort(recomputed.begin(), recomputed.end(), [&](int a, int b) {
    return problem.values[a].seconds > problem.values[b].seconds;
  });
  for (int i : recomputed) {
    std::vector<bool> trial = plan.recompute;
    trial[i] = false;
    RematPlan candidate = evaluateRematPlan(problem, trial, capacity);
    if (candidate.feasible && candidate.cost <= plan.cost)
      plan = std::move(candidate);
  }
  plan.solver = solver;
  return plan;
}

/// Bytes and cost of recomputing `rec` (values of one group only): kept bytes
/// of the members and of the deps the recomputations newly keep, and the
/// recomputed (transient) bytes. Local, so the solvers can score a group
/// without evaluating the whole plan.
struct GroupOption {
  std::vector<int> recompute;
  int64_t kept = 0;      // bytes this group makes the plan keep
  int64_t transient = 0; // bytes of the group's values recomputed
  double cost = 0;
};

GroupOption scoreGroup(const RematProblem &problem,
                       const std::vector<int> &members, std::vector<bool> rec) {
  const std::vector<RematValue> &values = problem.values;
  GroupOption option;
  // Members in program order; walk backwards as evaluateRematPlan does.
  std::map<int, bool> readSame;
  std::vector<int> crossKept;
  for (size_t m = members.size(); m-- > 0;) {
    int i = members[m];
    const RematValue &v = values[i];
    bool read = readSame.count(i) > 0;
    if (rec[i] && !(v.neededByBackward || read))
      rec[i] = false;
    if (rec[i]) {
      option.recompute.push_back(i);
      option.transient += v.bytes;
      option.cost += v.seconds;
      for (int d : v.deps) {
        if (values[d].group == v.group)
          readSame[d] = true;
        else
          crossKept.push_back(d);
      }
    } else if (v.neededByBackward || read) {
      option.kept += v.bytes;
    }
  }
  // Deps in other groups the recomputations keep; those the backward reads
  // are kept already.
  std::sort(crossKept.begin(), crossKept.end());
  crossKept.erase(std::unique(crossKept.begin(), crossKept.end()),
                  crossKept.end());
  for (int d : crossKept)
    if (!values[d].neededByBackward)
      option.kept += values[d].bytes;
  return option;
}

/// The options of one group, from recomputing nothing to everything: each
/// step adds the value that saves the most bytes per second of recompute.
std::vector<GroupOption> groupOptions(const RematProblem &problem,
                                      const std::vector<int> &members) {
  std::vector<bool> rec(problem.values.size(), false);
  GroupOption current = scoreGroup(problem, members, rec);
  std::vector<GroupOption> options = {current};
  std::vector<bool> tried(problem.values.size(), false);
  for (size_t step = 0; step < members.size(); ++step) {
    int choice = -1;
    double bestRatio = -std::numeric_limits<double>::infinity();
    GroupOption chosen;
    for (int i : members) {
      if (tried[i] || rec[i])
        continue;
      std::vector<bool> trial = rec;
      trial[i] = true;
      GroupOption option = scoreGroup(problem, members, trial);
      double saved = static_cast<double>(current.kept - option.kept);
      double cost = std::max(option.cost - current.cost, 1e-12);
      if (saved / cost > bestRatio) {
        bestRatio = saved / cost;
        choice = i;
        chosen = std::move(option);
      }
    }
    if (choice < 0)
      break;
    tried[choice] = true;
    rec[choice] = true;
    current = chosen;
    options.push_back(chosen);
  }
  // And from recomputing everything, dropping the value that costs the most
  // per byte it saves: finds the pairs a one-at-a-time search misses (h and
  // y recomputed together free more than either alone).
  std::vector<bool> all(problem.values.size(), false);
  for (int i : members)
    all[i] = true;
  current = scoreGroup(problem, members, all);
  options.push_back(current);
  for (size_t step = 0; step < members.size(); ++step) {
    int choice = -1;
    double worst = std::numeric_limits<double>::infinity();
    GroupOption chosen;
    for (int i : current.recompute) {
      std::vector<bool> trial = all;
      trial[i] = false;
      GroupOption option = scoreGroup(problem, members, trial);
      double saved = static_cast<double>(option.kept + option.transient -
                                         current.kept - current.transient);
      double ratio = saved / std::max(current.cost - option.cost, 1e-12);
      if (ratio < worst) {
        worst = ratio;
        choice = i;
        chosen = std::move(option);
      }
    }
    if (choice < 0)
      break;
    all[choice] = false;
    current = chosen;
    options.push_back(chosen);
  }
  // Keep the options no other option beats on kept, transient and cost.
  std::vector<GroupOption> pareto;
  for (size_t a = 0; a < options.size(); ++a) {
    bool dominated = false;
    for (size_t b = 0; b < options.size() && !dominated; ++b) {
      const GroupOption &x = options[a], &y = options[b];
      bool noWorse =
          y.kept <= x.kept && y.transient <= x.transient && y.cost <= x.cost;
      bool better = y.kept < x.kept || y.transient < x.transient ||
                    y.cost < x.cost || b < a;
      dominated = a != b && noWorse && better;
    }
    if (!dominated)
      pareto.push_back(options[a]);
  }
  std::stable_sort(pareto.begin(), pareto.end(),
                   [](const GroupOption &x, const GroupOption &y) {
                     return x.cost < y.cost;
                   });
  return pareto;
}

std::vector<std::vector<int>> membersByGroup(const RematProblem &problem) {
  std::vector<std::vector<int>> members(std::max(problem.numGroups, 1));
  for (int i : decisionValues(problem))
    members[problem.values[i].group].push_back(i);
  return members;
}

/// Greedy over groups: repeatedly advance the group whose next option saves
/// the most bytes per second of recompute, until the plan fits.
RematPlan solveGreedy(const RematProblem &problem, int64_t capacity) {
  std::vector<std::vector<int>> members = membersByGroup(problem);
  std::vector<std::vector<GroupOption>> options(members.size());
  for (size_t g = 0; g < members.size(); ++g)
    options[g] = groupOptions(problem, members[g]);
  std::vector<size_t> at(members.size(), 0);
  auto planOf = [&] {
    std::vector<bool> rec(problem.values.size(), false);
    for (size_t g = 0; g < members.size(); ++g)
      for (int i : options[g][at[g]].recompute)
        rec[i] = true;
    return evaluateRematPlan(problem, rec, capacity);
  };
  RematPlan plan = planOf(), best = plan;
  while (!plan.feasible) {
    int choice = -1;
    double bestRatio = -std::numeric_limits<double>::infinity();
    for (size_t g = 0; g < members.size(); ++g) {
      if (at[g] + 1 >= options[g].size())
        continue;
      const GroupOption &now = options[g][at[g]], &next = options[g][at[g] + 1];
      double saved = static_cast<double>(now.kept - next.kept);
      double ratio = saved / std::max(next.cost - now.cost, 1e-12);
      if (ratio > bestRatio) {
        bestRatio = ratio;
        choice = static_cast<int>(g);
      }
    }
    if (choice < 0)
      break;
    ++at[choice];
    plan = planOf();
    if (plan.feasible || plan.memory < best.memory)
      best = plan;
  }
  best.solver = "greedy";
  return localSearch(problem, repair(problem, best, capacity), capacity);
}

/// Groups with at most this many decisions get every subset scored.
constexpr size_t kExhaustiveGroup = 16;
/// Options kept per group for the knapsack, and transient caps it tries.
constexpr size_t kMaxOptions = 96, kMaxTransientCaps = 24;

/// Keeps at most `limit` elements, evenly spaced in the order given (the
/// first and the last always).
template <typename T>
std::vector<T> thin(const std::vector<T> &items, size_t limit) {
  if (items.size() <= limit)
    return items;
  std::vector<T> result;
  for (size_t k = 0; k < limit; ++k)
    result.push_back(items[k * (items.size() - 1) / (limit - 1)]);
  return result;
}

/// Every recompute subset of a small group, reduced to the options no other
/// beats: for each of a ladder of transient caps, the front of kept bytes
/// against cost among the subsets within the cap.
std::vector<GroupOption> exhaustiveOptions(const RematProblem &problem,
                                           const std::vector<int> &members) {
  std::vector<GroupOption> all;
  std::vector<bool> rec(problem.values.size(), false);
  for (uint64_t mask = 0; mask < (uint64_t(1) << members.size()); ++mask) {
    for (size_t b = 0; b < members.size(); ++b)
      rec[members[b]] = (mask >> b) & 1;
    GroupOption option = scoreGroup(problem, members, rec);
    // Only canonical subsets: scoreGroup drops useless recomputations.
    if (option.recompute.size() == static_cast<size_t>(llvm::popcount(mask)))
      all.push_back(std::move(option));
  }
  std::vector<int64_t> caps;
  for (const GroupOption &o : all)
    caps.push_back(o.transient);
  std::sort(caps.begin(), caps.end());
  caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
  caps = thin(caps, 16);
  std::vector<GroupOption> result;
  for (int64_t cap : caps) {
    std::vector<const GroupOption *> within;
    for (const GroupOption &o : all)
      if (o.transient <= cap)
        within.push_back(&o);
    std::sort(within.begin(), within.end(),
              [](const GroupOption *x, const GroupOption *y) {
                return x->kept != y->kept ? x->kept < y->kept
                                          : x->cost < y->cost;
              });
    // Walking up in kept bytes, keep each option cheaper than all before.
    std::vector<GroupOption> front;
    double cheapest = std::numeric_limits<double>::infinity();
    for (auto it = within.rbegin(); it != within.rend(); ++it)
      if ((*it)->cost < cheapest) {
        cheapest = (*it)->cost;
        front.push_back(**it);
      }
    for (GroupOption &o : thin(front, kMaxOptions / 4))
      result.push_back(std::move(o));
  }
  return result;
}

/// What identifies a group's structure: identical layers get one menu.
std::vector<double> signature(const RematProblem &problem,
                              const std::vector<int> &members) {
  std::vector<double> sig;
  for (size_t m = 0; m < members.size(); ++m) {
    const RematValue &v = problem.values[members[m]];
    sig.insert(sig.end(), {static_cast<double>(v.bytes), v.seconds,
                           double(v.neededByBackward), double(v.recomputable),
                           double(v.deps.size())});
    for (int d : v.deps) {
      auto at = std::find(members.begin(), members.end(), d);
      // Deps outside the group differ per layer only in which value they
      // are; their size matters (kept when read by a recomputation).
      sig.push_back(at != members.end()
                        ? static_cast<double>(at - members.begin())
                        : -1.0 - static_cast<double>(problem.values[d].bytes));
    }
  }
  return sig;
}

/// Multiple-choice knapsack over groups: one option per group, kept bytes
/// (discretized) within capacity - transient cap, least total cost; tried for
/// a ladder of the transient sizes the options have.
RematPlan solveDP(const RematProblem &problem, int64_t capacity) {
  std::vector<std::vector<int>> members = membersByGroup(problem);
  // An option frees (its group's kept bytes with nothing recomputed) - (its
  // kept bytes); the savings of different groups add up.
  RematPlan none = evaluateRematPlan(problem, {}, capacity);
  std::vector<std::vector<GroupOption>> options(members.size());
  std::vector<int64_t> baseKept(members.size(), 0);
  std::vector<int64_t> transients = {0};
  std::map<std::vector<double>, size_t> seen; // signature -> first group
  for (size_t g = 0; g < members.size(); ++g) {
    std::vector<double> sig = signature(problem, members[g]);
    if (auto it = seen.find(sig); it != seen.end()) {
      // The same layer again: the same options, on this group's values.
      const std::vector<int> &from = members[it->second];
      for (const GroupOption &o : options[it->second]) {
        GroupOption copy = o;
        for (int &i : copy.recompute)
          i = members[g][std::find(from.begin(), from.end(), i) - from.begin()];
        options[g].push_back(std::move(copy));
      }
    } else {
      seen.emplace(std::move(sig), g);
      options[g] = groupOptions(problem, members[g]);
      if (members[g].size() <= kExhaustiveGroup) {
        std::vector<GroupOption> exact = exhaustiveOptions(problem, members[g]);
        options[g].insert(options[g].end(), exact.begin(), exact.end());
      }
      options[g] = thin(options[g], kMaxOptions);
    }
    baseKept[g] = scoreGroup(problem, members[g],
                             std::vector<bool>(problem.values.size(), false))
                      .kept;
    for (const GroupOption &o : options[g])
      transients.push_back(o.transient);
  }
  std::sort(transients.begin(), transients.end());
  transients.erase(std::unique(transients.begin(), transients.end()),
                   transients.end());
  transients = thin(transients, kMaxTransientCaps);
  const int buckets = 2048;
  RematPlan best;
  best.feasible = false;
  best.memory = std::numeric_limits<int64_t>::max();
  best.cost = std::numeric_limits<double>::infinity();
  for (int64_t cap : transients) {
    int64_t room = capacity - cap;
    if (room < 0)
      continue;
    // saved_g(o) = none.memory - o.kept: bytes an option frees.
    int64_t mustFree = std::max<int64_t>(0, none.memory - room);
    double unit = std::max(1.0, static_cast<double>(mustFree) / buckets);
    int needed = static_cast<int>(std::ceil(mustFree / unit));
    const double inf = std::numeric_limits<double>::infinity();
    // cost[f] = least cost freeing at least f units so far.
    std::vector<double> cost(needed + 1, inf);
    std::vector<std::vector<int>> choice(members.size(),
                                         std::vector<int>(needed + 1, -1));
    cost[0] = 0;
    for (size_t g = 0; g < members.size(); ++g) {
      std::vector<double> next(needed + 1, inf);
      for (int f = 0; f <= needed; ++f) {
        if (cost[f] == inf)
          continue;
        for (size_t o = 0; o < options[g].size(); ++o) {
          const GroupOption &option = options[g][o];
          if (option.transient > cap)
            continue;
          double freed = static_cast<double>(baseKept[g] - option.kept);
          // Round freed bytes down: the DP never overestimates a saving.
          int units = freed > 0 ? static_cast<int>(freed / unit) : 0;
          int to = std::min(needed, f + units);
          double c = cost[f] + option.cost;
          if (c < next[to]) {
            next[to] = c;
            choice[g][to] = static_cast<int>(o) * (needed + 1) + f;
          }
        }
      }
      cost = std::move(next);
    }
    if (cost[needed] == inf)
      continue;
    std::vector<bool> rec(problem.values.size(), false);
    int f = needed;
    for (size_t g = members.size(); g-- > 0;) {
      int packed = choice[g][f];
      int o = packed / (needed + 1);
      f = packed % (needed + 1);
      for (int i : options[g][o].recompute)
        rec[i] = true;
    }
    RematPlan plan = evaluateRematPlan(problem, rec, capacity);
    if ((plan.feasible && (!best.feasible || plan.cost < best.cost)) ||
        (!best.feasible && !plan.feasible && plan.memory < best.memory))
      best = std::move(plan);
  }
  if (best.recompute.empty())
    best = evaluateRematPlan(problem, {}, capacity);
  best.solver = "dp";
  return localSearch(problem, repair(problem, best, capacity), capacity);
}

/// Prints a progress line every few seconds while a solve runs.
class ProgressTicker {
public:
  ProgressTicker(const std::function<void(const std::string &)> &progress,
                 double limit)
      : progress(progress) {
    if (!progress)
      return;
    thread = std::thread([this, limit] {
      auto start = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(mutex);
      while (!done) {
        if (wake.wait_for(lock, std::chrono::seconds(2)) ==
                std::cv_status::timeout &&
            !done) {
          double elapsed = std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - start)
                               .count();
          char line[128];
          std::snprintf(line, sizeof line,
                        "remat: MILP still solving after %.0f s (limit %.0f s)",
                        elapsed, limit);
          this->progress(line);
        }
      }
    });
  }
  ~ProgressTicker() {
    if (!thread.joinable())
      return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
    }
    wake.notify_all();
    thread.join();
  }

private:
  std::function<void(const std::string &)> progress;
  std::thread thread;
  std::mutex mutex;
  std::condition_variable wake;
  bool done = false;
};

/// The MILP (docs/remat.md): binaries r_v (recompute) and k_v (keep) per
/// decision value, T >= every group's recomputed bytes;
///   min sum t_v r_v
///   k_v + r_v >= 1                  v needed by the backward
///   k_u + r_u >= r_v                u a same-group dep of v
///   k_u >= r_v                      u a dep of v in another group
///   sum b_v k_v + T <= capacity - fixed
///   T >= sum_{g(v)=g} b_v r_v       every group g
/// Bytes and times are scaled to keep CBC's tolerances meaningful.
RematPlan solveMILP(const RematProblem &problem, int64_t capacity,
                    const RematSolveOptions &options,
                    bool minimizeMemory = false) {
  const std::vector<RematValue> &values = problem.values;
  // Every value the backward or a recomputation may read gets r and k; r is
  // fixed to 0 for values that cannot be recomputed.
  std::vector<bool> read(values.size(), false);
  for (const RematValue &v : values)
    for (int d : v.deps)
      read[d] = true;
  std::vector<int> decisions;
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].neededByBackward || read[i])
      decisions.push_back(static_cast<int>(i));
  // Units that put the largest coefficient near 1000, so that CBC's
  // tolerances mean the same for bytes and for KB-sized test problems.
  double byteUnit = 1, timeUnit = 1e-12, totalTime = 0;
  for (int i : decisions) {
    byteUnit = std::max(byteUnit, values[i].bytes / 1000.0);
    timeUnit = std::max(timeUnit, values[i].seconds / 1000.0);
    totalTime += values[i].seconds / timeUnit;
  }
  // Minimizing memory, cost only breaks ties: all of it weighs less than
  // the smallest byte count.
  double smallest = std::numeric_limits<double>::infinity();
  for (int i : decisions)
    if (values[i].bytes > 0)
      smallest = std::min(smallest, values[i].bytes / byteUnit);
  double costWeight = minimizeMemory
                          ? 0.5 * (std::isfinite(smallest) ? smallest : 1) /
                                std::max(totalTime, 1.0)
                          : 1;
  std::vector<int> column(values.size(), -1); // r_v; k_v is r_v + 1
  Cbc_Model *model = Cbc_newModel();
  Cbc_setLogLevel(model, 0);
  int columns = 0;
  for (int i : decisions) {
    column[i] = columns;
    Cbc_addCol(model, "r", 0, values[i].recomputable ? 1 : 0,
               values[i].seconds / timeUnit * costWeight, 1, 0, nullptr,
               nullptr);
    Cbc_addCol(model, "k", 0, 1,
               minimizeMemory ? values[i].bytes / byteUnit : 0, 1, 0, nullptr,
               nullptr);
    columns += 2;
  }
  int transientColumn = columns++;
  Cbc_addCol(model, "T", 0, 1e30, minimizeMemory ? 1 : 0, 0, 0, nullptr,
             nullptr);
  std::vector<int> cols;
  std::vector<double> coefs;
  auto row = [&](char sense, double rhs) {
    Cbc_addRow(model, "", static_cast<int>(cols.size()), cols.data(),
               coefs.data(), sense, rhs);
    cols.clear();
    coefs.clear();
  };
  for (int i : decisions) {
    const RematValue &v = values[i];
    int r = column[i], k = r + 1;
    if (v.neededByBackward) {
      cols = {k, r};
      coefs = {1, 1};
      row('G', 1);
    }
    for (int d : v.deps) {
      int rd = column[d], kd = rd + 1;
      if (values[d].group == v.group) {
        cols = {kd, rd, r};
        coefs = {1, 1, -1};
      } else {
        cols = {kd, r};
        coefs = {1, -1};
      }
      row('G', 0);
    }
  }
  for (int i : decisions) {
    cols.push_back(column[i] + 1);
    coefs.push_back(values[i].bytes / byteUnit);
  }
  cols.push_back(transientColumn);
  coefs.push_back(1);
  row('L', static_cast<double>(capacity) / byteUnit);
  std::map<int, std::vector<int>> groups;
  for (int i : decisions)
    groups[values[i].group].push_back(i);
  for (auto &[group, members] : groups) {
    cols.push_back(transientColumn);
    coefs.push_back(1);
    for (int i : members) {
      cols.push_back(column[i]);
      coefs.push_back(-values[i].bytes / byteUnit);
    }
    row('G', 0);
  }
  // Start from the DP's plan: CBC then only has to prove (or improve) it.
  if (!minimizeMemory) {
    RematPlan start = solveDP(problem, capacity);
    if (start.feasible) {
      std::vector<int> indices;
      std::vector<double> startValues;
      for (int i : decisions) {
        bool r = start.recompute[i];
        indices.push_back(column[i]);
        startValues.push_back(r ? 1 : 0);
        indices.push_back(column[i] + 1);
        startValues.push_back(r ? 0 : 1);
      }
      Cbc_setMIPStartI(model, static_cast<int>(indices.size()), indices.data(),
                       startValues.data());
    }
  }
  Cbc_setMaximumSeconds(model, options.timeLimitSeconds);
  Cbc_setAllowableFractionGap(model, 1e-6);
  Cbc_setParameter(model, "threads", "1");
  {
    ProgressTicker ticker(options.progress, options.timeLimitSeconds);
    Cbc_solve(model);
  }
  RematPlan plan;
  const double *solution =
      Cbc_numberSavedSolutions(model) > 0 || Cbc_isProvenOptimal(model)
          ? Cbc_getColSolution(model)
          : nullptr;
  std::vector<bool> rec(values.size(), false);
  if (solution)
    for (int i : decisions)
      rec[i] = solution[column[i]] > 0.5;
  plan = evaluateRematPlan(problem, rec, capacity);
  plan.optimal = solution && Cbc_isProvenOptimal(model);
  if (solution && !minimizeMemory)
    plan.bound =
        std::min(plan.cost, Cbc_getBestPossibleObjValue(model) * timeUnit);
  Cbc_deleteModel(model);
  plan.solver = "milp";
  return plan;
}

} // namespace

RematSolverKind memwall::resolveAutoSolver(const RematProblem &problem) {
  return decisionValues(problem).size() <= kAutoMilpLimit
             ? RematSolverKind::MILP
             : RematSolverKind::DP;
}

std::string memwall::whyRematProblemIsInvalid(const RematProblem &problem) {
  auto nonNegative = [](double x) { return std::isfinite(x) && x >= 0; };
  for (auto [index, value] : llvm::enumerate(problem.values)) {
    if (value.bytes < 0 || !nonNegative(value.seconds) ||
        !nonNegative(value.flops))
      return "value #" + std::to_string(index) + " has " +
             std::to_string(value.bytes) + " bytes, a recompute time of " +
             std::to_string(value.seconds) + " s and " +
             std::to_string(value.flops) +
             " FLOPs; the solvers need finite, non-negative figures";
    if (value.group < 0 || value.group >= std::max(problem.numGroups, 1))
      return "value #" + std::to_string(index) + " is in group " +
             std::to_string(value.group) + " of " +
             std::to_string(problem.numGroups);
  }
  return "";
}

/// The plan of an invalid problem: nothing recomputed, no solver run.
static RematPlan refuse(const RematProblem &problem, int64_t capacity,
                        const std::string &why) {
  RematPlan plan = evaluateRematPlan(problem, {}, capacity);
  plan.solver = "refused: " + why;
  return plan;
}

RematPlan memwall::solveRemat(const RematProblem &problem, int64_t capacity,
                              const RematSolveOptions &options) {
  if (std::string why = whyRematProblemIsInvalid(problem); !why.empty())
    return refuse(problem, capacity, why);
  RematPlan none = evaluateRematPlan(problem, {}, capacity);
  RematSolverKind kind = options.solver;
  if (kind == RematSolverKind::Auto)
    kind = resolveAutoSolver(problem);
  if (none.feasible) {
    none.solver = stringifyRematSolver(kind);
    none.optimal = true;
    none.bound = 0;
    return none;
  }
  switch (kind) {
  case RematSolverKind::MILP: {
    RematPlan plan = solveMILP(problem, capacity, options);
    if (!plan.feasible && !plan.optimal) {
      // No solution within the time limit: fall back, keeping the bound.
      RematPlan fallback = solveDP(problem, capacity);
      fallback.bound = plan.bound;
      fallback.solver = "milp (time limit; dp plan)";
      return fallback;
    }
    return plan;
  }
  case RematSolverKind::DP:
    return solveDP(problem, capacity);
  case RematSolverKind::Greedy:
    return solveGreedy(problem, capacity);
  case RematSolverKind::Auto:
    llvm_unreachable("auto is resolved above");
  }
  return none;
}

RematPlan memwall::solveRematBruteForce(const RematProblem &problem,
                                        int64_t capacity) {
  std::vector<int> decisions = decisionValues(problem);
  RematPlan best = evaluateRematPlan(problem, {}, capacity);
  for (uint64_t mask = 1; mask < (uint64_t(1) << decisions.size()); ++mask) {
    std::vector<bool> rec(problem.values.size(), false);
    for (size_t b = 0; b < decisions.size(); ++b)
      rec[decisions[b]] = (mask >> b) & 1;
    RematPlan plan = evaluateRematPlan(problem, rec, capacity);
    if (plan.feasible && (!best.feasible || plan.cost < best.cost))
      best = std::move(plan);
  }
  best.solver = "brute-force";
  return best;
}

RematPlan memwall::minimumMemoryRematPlan(const RematProblem &problem,
                                          const RematSolveOptions &options) {
  if (std::string why = whyRematProblemIsInvalid(problem); !why.empty()) {
    RematPlan plan = refuse(problem, 0, why);
    plan.feasible = true;
    return plan;
  }
  // The heuristics towards zero capacity end at the least memory they find;
  // the MILP with memory as the objective is exact where it solves.
  RematPlan plan = solveGreedy(problem, 0);
  RematPlan dp = solveDP(problem, 0);
  if (dp.memory < plan.memory)
    plan = dp;
  if (options.solver == RematSolverKind::MILP ||
      (options.solver == RematSolverKind::Auto &&
       resolveAutoSolver(problem) == RematSolverKind::MILP)) {
    RematPlan milp = solveMILP(problem, std::numeric_limits<int64_t>::max() / 4,
                               options, /*minimizeMemory=*/true);
    if (milp.memory < plan.memory)
      plan = milp;
  }
  plan.feasible = true;
  return plan;
}
