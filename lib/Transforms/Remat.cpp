//===- Remat.cpp - recomputation placement under a byte budget ------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall-remat: builds the recomputation problem of a training step
// (RematSolver.h), solves it, clones the recomputed forward ops into the
// backward group by group, and checks the simulated peak of the result
// against the budget, tightening until it fits. docs/remat.md.
//
//===----------------------------------------------------------------------===//

#include "memwall/Transforms/Remat.h"

#include "memwall/Analysis/CommunicationAnalysis.h"
#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/Analysis/RematSolver.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"
#include "memwall/Report/ReportSink.h"
#include "memwall/Support/Units.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>

using namespace mlir;

namespace memwall {
#define GEN_PASS_DEF_REMAT
#include "memwall/Transforms/Passes.h.inc"
} // namespace memwall

using namespace memwall;

namespace {

bool hasPhase(Operation *op) {
  return op->hasAttr(MemWallDialect::kPhaseAttrName);
}

/// The value a chain of forward reshapes (views) reads.
Value viewRoot(Value value) {
  while (auto reshape = value.getDefiningOp<ReshapeOp>())
    value = reshape.getInput();
  return value;
}

std::string nameOf(Location loc) {
  std::string name = formatLocationForReport(loc);
  return name == "?" ? std::string() : name;
}

/// The forward values of a training step as a RematProblem, grouped by layer
/// (`layers.N.` in the op's name; ops before the first layer form one group,
/// ops after the last another).
struct RematGraph {
  std::vector<Operation *> ops; // the op of each problem value
  DenseMap<Value, int> index;   // op results -> problem value
  RematProblem problem;
  std::vector<int> layerOfGroup; // layer number, or -1 for pre/post groups
  /// The group of each value's defining op (the baselines recompute whole
  /// layers by where values are made, not where they are first read).
  std::vector<int> definedIn;
  double stepSeconds = 0;

  static std::optional<RematGraph> build(func::FuncOp function,
                                         const GPUTarget &target) {
    RematGraph graph;
    Block &body = function.getBody().front();
    bool training = false;
    for (Operation &op : body)
      training |= hasPhase(&op);
    if (!training)
      return std::nullopt;
    // The layer an op belongs to by its name: "layers.N", else "pre" or
    // "post" around the layers.
    bool seenLayer = false;
    auto keyOf = [&](Operation *op, int &layer) {
      layer = -1;
      if (std::optional<int64_t> index =
              parseLayerIndex(nameOf(op->getLoc()))) {
        seenLayer = true;
        layer = static_cast<int>(*index);
        return "layers." + std::to_string(*index);
      }
      return std::string(seenLayer ? "post" : "pre");
    };
    llvm::StringMap<int> groups;
    auto groupOf = [&](const std::string &key, int layer) {
      auto [it, inserted] =
          groups.try_emplace(key, static_cast<int>(groups.size()));
      if (inserted)
        graph.layerOfGroup.push_back(layer);
      return it->second;
    };
    DenseMap<Operation *, int64_t> position;
    std::vector<int> &definedIn = graph.definedIn;
    for (Operation &op : body.without_terminator()) {
      position[&op] = static_cast<int64_t>(position.size());
      if (auto cost = dyn_cast<CostOpInterface>(&op))
        graph.stepSeconds += estimateOpRoofline(cost, target).timeSeconds;
      int layer;
      std::string key = keyOf(&op, layer);
      if (hasPhase(&op) || isa<ReshapeOp>(op) || op.getNumResults() == 0 ||
          !llvm::all_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>))
        continue;
      definedIn.push_back(groupOf(key, layer));
      // One problem value per op: recomputing an op (a fused kernel
      // included) re-creates all of its results.
      RematValue value;
      for (Value result : op.getResults())
        value.bytes += getTensorByteSize(result.getType());
      auto cost = dyn_cast<CostOpInterface>(&op);
      value.recomputable = cost && isa<MemWallDialect>(op.getDialect()) &&
                           (op.getNumRegions() == 0 || isa<FusionOp>(op)) &&
                           !isa<KVCacheAppendOp>(op);
      if (cost) {
        value.seconds = estimateOpRoofline(cost, target).timeSeconds;
        value.flops = static_cast<double>(cost.getFlops());
      }
      for (Value operand : op.getOperands())
        if (auto it = graph.index.find(viewRoot(operand));
            it != graph.index.end() &&
            llvm::find(value.deps, it->second) == value.deps.end())
          value.deps.push_back(it->second);
      for (Value result : op.getResults())
        graph.index[result] = static_cast<int>(graph.ops.size());
      graph.ops.push_back(&op);
      graph.problem.values.push_back(std::move(value));
    }
    // Who reads each value (through views): the backward needs it; the
    // return or the optimizer needs it kept. A value's group is the layer
    // of its first backward use, where a recomputation of it would be
    // placed (a layer's output is first read by the next layer's backward).
    size_t n = graph.ops.size();
    std::vector<Operation *> firstUse(n, nullptr);
    for (auto [i, op] : llvm::enumerate(graph.ops)) {
      RematValue &value = graph.problem.values[i];
      SmallVector<Value> worklist(op->getResults());
      while (!worklist.empty()) {
        Value v = worklist.pop_back_val();
        for (Operation *user : v.getUsers()) {
          // Views (forward, or backward ones fusion's topological sort
          // hoisted next to their source) are not uses: their readers are.
          if (auto reshape = dyn_cast<ReshapeOp>(user)) {
            worklist.push_back(reshape.getResult());
            continue;
          }
          if (isa<func::ReturnOp>(user) ||
              (hasPhase(user) && !isa<MemWallDialect>(user->getDialect()))) {
            value.neededByBackward = true;
            value.recomputable = false;
          } else if (hasPhase(user)) {
            value.neededByBackward = true;
          } else {
            continue;
          }
          if (position.count(user) &&
              (!firstUse[i] || position[user] < position[firstUse[i]]))
            firstUse[i] = user;
        }
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (!firstUse[i]) {
        graph.problem.values[i].group = definedIn[i];
        continue;
      }
      int layer = -1;
      std::string key = keyOf(firstUse[i], layer);
      graph.problem.values[i].group = groupOf(key, layer);
    }
    // Values read only by the forward join the group of their first
    // consumer (in program order) that the backward reads, so a chain can be
    // recomputed together.
    for (size_t i = n; i-- > 0;) {
      if (firstUse[i])
        continue;
      for (size_t j = i + 1; j < n; ++j)
        if (llvm::is_contained(graph.problem.values[j].deps,
                               static_cast<int>(i)) &&
            firstUse[j]) {
          graph.problem.values[i].group = graph.problem.values[j].group;
          firstUse[i] = firstUse[j];
          break;
        }
    }
    graph.problem.numGroups = static_cast<int>(groups.size());
    return graph;
  }

  /// Applies `recompute` with the groups `groupOf` (per value): clones the
  /// recomputed ops of each group before the group's first backward use and
  /// points the backward at the clones.
  void apply(const std::vector<bool> &recompute,
             const std::vector<int> &groupOf) {
    if (ops.empty())
      return;
    Block *body = ops.front()->getBlock();
    DenseMap<Operation *, int64_t> position;
    int64_t p = 0;
    for (Operation &op : *body)
      position[&op] = p++;
    // Backward uses of an op's results or of their forward views.
    auto backwardUses = [&](Operation *op) {
      SmallVector<OpOperand *> uses;
      SmallVector<Value> worklist(op->getResults());
      while (!worklist.empty()) {
        Value v = worklist.pop_back_val();
        for (OpOperand &use : v.getUses()) {
          Operation *user = use.getOwner();
          if (auto reshape = dyn_cast<ReshapeOp>(user);
              reshape && !reshape->hasAttr(MemWallDialect::kRecomputedAttrName))
            worklist.push_back(reshape.getResult());
          else if (hasPhase(user) &&
                   !user->hasAttr(MemWallDialect::kRecomputedAttrName))
            uses.push_back(&use);
        }
      }
      return uses;
    };
    std::map<int, std::vector<int>> members;
    for (size_t i = 0; i < ops.size(); ++i)
      if (recompute[i])
        members[groupOf[i]].push_back(static_cast<int>(i));
    for (auto &[group, indices] : members) {
      Operation *insertBefore = nullptr;
      DenseMap<int, SmallVector<OpOperand *>> uses;
      for (int i : indices) {
        uses[i] = backwardUses(ops[i]);
        for (OpOperand *use : uses[i])
          if (!insertBefore ||
              position[use->getOwner()] < position[insertBefore])
            insertBefore = use->getOwner();
      }
      if (!insertBefore)
        continue;

      OpBuilder builder(insertBefore);
      IRMapping mapping;
      DenseMap<Value, Value> viewClones;
      llvm::DenseSet<int> inGroup(indices.begin(), indices.end());
      // The clone standing for `v` (a recomputed value or a view of one).
      std::function<Value(Value)> cloneOf = [&](Value v) -> Value {
        if (Value mapped = mapping.lookupOrNull(v))
          return mapped;
        if (auto it = viewClones.find(v); it != viewClones.end())
          return it->second;
        auto reshape = v.getDefiningOp<ReshapeOp>();
        Value source = cloneOf(reshape.getInput());
        Operation *view = builder.clone(*reshape, mapping);
        view->setOperand(0, source);
        view->setAttr(MemWallDialect::kPhaseAttrName,
                      builder.getStringAttr("backward"));
        view->setAttr(MemWallDialect::kRecomputedAttrName,
                      builder.getUnitAttr());
        viewClones[v] = view->getResult(0);
        return view->getResult(0);
      };
      for (int i : indices) {
        Operation *op = ops[i];
        IRMapping operands;
        for (Value operand : op->getOperands())
          if (auto it = index.find(viewRoot(operand));
              it != index.end() && inGroup.contains(it->second))
            operands.map(operand, cloneOf(operand));
        Operation *clone = builder.clone(*op, operands);
        clone->setAttr(MemWallDialect::kPhaseAttrName,
                       builder.getStringAttr("backward"));
        clone->setAttr(MemWallDialect::kRecomputedAttrName,
                       builder.getUnitAttr());
        std::string name = nameOf(op->getLoc());
        clone->setLoc(
            NameLoc::get(builder.getStringAttr((name.empty() ? "value" : name) +
                                               ".recompute"),
                         op->getLoc()));
        mapping.map(op->getResults(), clone->getResults());
      }
      for (int i : indices)
        for (OpOperand *use : uses[i]) {
          Value view = use->get();
          use->set(cloneOf(view));
          // A backward view the reader no longer needs goes away.
          while (auto reshape = view.getDefiningOp<ReshapeOp>()) {
            if (!hasPhase(reshape) || !reshape->use_empty())
              break;
            view = reshape.getInput();
            reshape->erase();
          }
        }
    }
  }
};

/// A plan applied to a copy of `function`, and its simulated memory.
MemorySummary simulatePlan(func::FuncOp function, const GPUTarget &target,
                           const std::vector<bool> &recompute,
                           const std::vector<int> &groupOf,
                           const ShardingOptions &sharding) {
  OwningOpRef<func::FuncOp> copy = function.clone();
  std::optional<RematGraph> graph = RematGraph::build(*copy, target);
  if (graph)
    graph->apply(recompute, groupOf);
  return simulateMemory(*copy, sharding);
}

std::vector<int> groupsOf(const RematProblem &problem) {
  std::vector<int> groups;
  for (const RematValue &v : problem.values)
    groups.push_back(v.group);
  return groups;
}

std::string gb(int64_t bytes) {
  return formatSI(static_cast<double>(bytes), "B");
}

} // namespace

llvm::Error memwall::validateRematOptions(const std::string &solver,
                                          double timeLimit,
                                          llvm::StringRef pareto) {
  if (!symbolizeRematSolver(solver))
    return llvm::createStringError("--remat-solver: unknown solver '" + solver +
                                   "' (expected auto, milp, dp or greedy)");
  if (!(timeLimit > 0) || !std::isfinite(timeLimit))
    return llvm::createStringError(
        "--remat-time-limit: must be > 0 seconds");
  if (!pareto.empty())
    return checkSVGPath(pareto, "--remat-pareto:");
  return llvm::Error::success();
}

namespace {
struct RematPass : public memwall::impl::RematBase<RematPass> {
  using RematBase::RematBase;
  RematPass(const RematOptions &options, ReportSink &sink)
      : RematBase(options), sink(&sink) {}

  LogicalResult initialize(MLIRContext *ctx) override {
    auto fail = [&](const Twine &message) {
      // The same words as the report pass for the shared options.
      emitError(UnknownLoc::get(ctx)) << message;
      return failure();
    };
    if (budget.empty())
      return fail("memwall-remat: a budget is required (budget=40GB)");
    llvm::Expected<MemoryOptions> parsed =
        parseMemoryOptions(budget, devices, zeroStage, offload);
    if (!parsed)
      return fail(llvm::toString(parsed.takeError()));
    budgetBytes = *parsed->budgetBytes;
    sharding = parsed->sharding;
    if (llvm::Error error = validateRematOptions(solver, timeLimit, pareto))
      return fail(llvm::toString(std::move(error)));
    solveOptions.solver = *symbolizeRematSolver(solver);
    solveOptions.timeLimitSeconds = timeLimit;
    solveOptions.progress = [sink = sink](const std::string &line) {
      sink->emitProgress(line);
    };
    return success();
  }

  /// A plan, the problem (grouping) it was made for, and its simulation.
  struct Candidate {
    std::string name;
    RematPlan plan; // evaluated on `problem`
    RematProblem problem;
    MemorySummary memory;
  };

  Candidate simulate(func::FuncOp function, StringRef name,
                     const RematProblem &problem,
                     const std::vector<bool> &recompute) {
    Candidate c;
    c.name = name.str();
    c.plan = evaluateRematPlan(problem, recompute, 0);
    c.plan.solver = c.name;
    c.problem = problem;
    c.memory = simulatePlan(function, target, c.plan.recompute,
                            groupsOf(problem), sharding);
    return c;
  }

  /// The problem with every value in the group of its defining layer: plans
  /// that recompute a whole layer from its input, clones created where the
  /// layer's outputs are first read (the next layer's backward).
  static RematProblem byDefinition(const RematGraph &graph) {
    RematProblem problem = graph.problem;
    for (size_t i = 0; i < problem.values.size(); ++i)
      problem.values[i].group = graph.definedIn[i];
    return problem;
  }

  /// Finds the cheapest plan for `problem` whose simulated peak is within
  /// `budget`: solves for the formula's capacity, simulates, and tightens
  /// the capacity by the overshoot until the simulation agrees. The MILP
  /// runs once, at the capacity the DP's loop settled on (where the DP's
  /// plan is a feasible start), with `options`' time limit; the cheapest
  /// plan that fits wins.
  std::optional<Candidate> fit(func::FuncOp function,
                               const RematProblem &problem, int64_t budget,
                               int64_t beforePeak,
                               const RematSolveOptions &options) {
    int64_t fixedBytes = beforePeak - evaluateRematPlan(problem, {}, 0).memory;
    std::vector<int> groups = groupsOf(problem);
    RematSolverKind kind = options.solver;
    if (kind == RematSolverKind::Auto)
      kind = resolveAutoSolver(problem);
    // The heuristics asked for (auto and milp run both and keep the
    // cheaper; the MILP then starts from the DP's capacity).
    std::vector<RematSolverKind> heuristics;
    if (options.solver != RematSolverKind::Greedy)
      heuristics.push_back(RematSolverKind::DP);
    if (options.solver != RematSolverKind::DP)
      heuristics.push_back(RematSolverKind::Greedy);
    int64_t dpCapacity = 0;
    std::optional<Candidate> found;
    for (RematSolverKind heuristic : heuristics) {
      RematSolveOptions heuristicOptions = options;
      heuristicOptions.solver = heuristic;
      int64_t capacity = budget - fixedBytes;
      for (int attempt = 0; attempt < 8 && capacity > 0; ++attempt) {
        RematPlan plan = solveRemat(problem, capacity, heuristicOptions);
        if (!plan.feasible)
          break;
        MemorySummary memory =
            simulatePlan(function, target, plan.recompute, groups, sharding);
        if (memory.peakBytes <= budget) {
          if (!found || plan.cost < found->plan.cost)
            found = Candidate{plan.solver, std::move(plan), problem,
                              std::move(memory)};
          break;
        }
        // 0.1% more than the overshoot, so the loop ends in a few steps.
        capacity -= memory.peakBytes - budget + budget / 1000;
      }
      if (heuristic == RematSolverKind::DP)
        dpCapacity = capacity;
    }
    // The MILP runs only with both heuristics, so dpCapacity is set.
    if (kind != RematSolverKind::MILP || dpCapacity <= 0)
      return found;
    RematSolveOptions exact = options;
    exact.solver = RematSolverKind::MILP;
    RematPlan plan = solveRemat(problem, dpCapacity, exact);
    if (plan.feasible) {
      MemorySummary memory =
          simulatePlan(function, target, plan.recompute, groups, sharding);
      if (memory.peakBytes <= budget &&
          (!found || plan.cost <= found->plan.cost))
        return Candidate{plan.solver, std::move(plan), problem,
                         std::move(memory)};
    }
    if (found)
      found->plan.solver += " (the MILP found nothing better)";
    return found;
  }

  /// The cheapest fitting plan over both groupings, or nothing.
  std::optional<Candidate> fitBest(func::FuncOp function,
                                   const RematGraph &graph, int64_t budget,
                                   int64_t beforePeak,
                                   const RematSolveOptions &options) {
    std::optional<Candidate> best;
    // The MILP's time limit is shared by the two groupings.
    RematSolveOptions half = options;
    half.timeLimitSeconds = options.timeLimitSeconds / 2;
    for (const RematProblem &problem : {graph.problem, byDefinition(graph)}) {
      std::optional<Candidate> c =
          fit(function, problem, budget, beforePeak, half);
      if (c && (!best || c->plan.cost < best->plan.cost))
        best = std::move(c);
    }
    return best;
  }

  /// No recompute; per-layer checkpointing (keep what each layer hands to
  /// the next, recompute the rest); Chen's sqrt(n) segments of layers;
  /// Megatron's selective recompute (attention only).
  std::vector<Candidate> baselines(func::FuncOp function,
                                   const RematGraph &graph) {
    RematProblem problem = byDefinition(graph);
    size_t n = problem.values.size();
    std::vector<int> groups = groupsOf(problem);
    // Values read by a forward op of another group (layer outputs).
    auto crossRead = [&](const std::vector<int> &groupOf) {
      std::vector<bool> read(n, false);
      for (size_t i = 0; i < n; ++i)
        for (int d : problem.values[i].deps)
          if (groupOf[d] != groupOf[i])
            read[d] = true;
      return read;
    };
    auto inLayer = [&](size_t i) {
      return graph.layerOfGroup[problem.values[i].group] >= 0;
    };
    std::vector<Candidate> result;
    result.push_back(
        simulate(function, "none", problem, std::vector<bool>(n, false)));
    std::vector<bool> read = crossRead(groups), layers(n, false);
    for (size_t i = 0; i < n; ++i)
      layers[i] = inLayer(i) && !read[i];
    result.push_back(simulate(function, "checkpoint-layers", problem, layers));
    // Chen: segments of ceil(sqrt(L)) consecutive layers.
    int numLayers = 0;
    for (int layer : graph.layerOfGroup)
      numLayers += layer >= 0;
    if (numLayers > 1) {
      int segment = static_cast<int>(
          std::ceil(std::sqrt(static_cast<double>(numLayers))));
      RematProblem segmented = problem;
      std::vector<int> segmentOf(n);
      int layerRank = 0;
      std::vector<int> rankOfGroup(graph.layerOfGroup.size(), -1);
      for (size_t g = 0; g < graph.layerOfGroup.size(); ++g)
        if (graph.layerOfGroup[g] >= 0)
          rankOfGroup[g] = layerRank++;
      int extra = (numLayers + segment - 1) / segment;
      for (size_t i = 0; i < n; ++i) {
        int g = problem.values[i].group;
        // Non-layer groups keep their own ids after the segments.
        segmentOf[i] =
            rankOfGroup[g] >= 0 ? rankOfGroup[g] / segment : extra + g;
        segmented.values[i].group = segmentOf[i];
      }
      segmented.numGroups = extra + static_cast<int>(graph.layerOfGroup.size());
      std::vector<bool> segRead = crossRead(segmentOf), chen(n, false);
      for (size_t i = 0; i < n; ++i)
        chen[i] = inLayer(i) && !segRead[i];
      result.push_back(simulate(function, "chen-sqrt", segmented, chen));
    }
    std::vector<bool> selective(n, false);
    for (size_t i = 0; i < n; ++i)
      selective[i] =
          inLayer(i) &&
          isa<AttentionOp, FlashAttentionOp, SoftmaxOp>(graph.ops[i]);
    result.push_back(simulate(function, "selective", problem, selective));
    return result;
  }

  RematBaseline describe(const Candidate &c, double stepSeconds) {
    RematBaseline b;
    b.name = c.name;
    b.peakBytes = c.memory.peakBytes;
    b.overheadSeconds = c.plan.cost;
    b.overheadFraction = stepSeconds > 0 ? c.plan.cost / stepSeconds : 0;
    for (bool r : c.plan.recompute)
      b.recomputed += r;
    b.fits = c.memory.peakBytes <= budgetBytes;
    return b;
  }

  /// The plans with the least memory the solvers find (per grouping) and
  /// the baselines: the fallbacks when no solve fits.
  std::vector<Candidate> fallbacks(func::FuncOp function,
                                   const RematGraph &graph,
                                   const std::vector<Candidate> &baselines) {
    std::vector<Candidate> result;
    for (const RematProblem &problem : {graph.problem, byDefinition(graph)}) {
      RematPlan least = minimumMemoryRematPlan(problem, solveOptions);
      result.push_back(simulate(function, least.solver + " (least-memory plan)",
                                problem, least.recompute));
    }
    for (const Candidate &c : baselines)
      if (c.name != "none")
        result.push_back(c);
    return result;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<GPUTarget> moduleTarget = getTargetOf(module);
    if (failed(moduleTarget))
      return signalPassFailure();
    target = std::move(*moduleTarget);
    if (failed(verifyCountableTotals(module)))
      return signalPassFailure();
    func::FuncOp function = getMainFunction(module);
    if (!function)
      return;
    std::optional<RematGraph> graph = RematGraph::build(function, target);
    if (!graph)
      return; // inference: nothing is saved for a backward
    if (std::string why = whyRematProblemIsInvalid(graph->problem);
        !why.empty()) {
      function.emitError("memwall-remat: ") << why;
      return signalPassFailure();
    }
    MemorySummary before =
        getChildAnalysis<MemoryLiveness>(function).simulate(sharding);
    std::vector<Candidate> baselineRuns = baselines(function, *graph);

    std::optional<Candidate> chosen;
    std::optional<double> solverOverhead;
    bool baselineWon = false;
    if (before.peakBytes <= budgetBytes) {
      chosen = baselineRuns.front(); // none: nothing to solve
      chosen->plan.solver = stringifyRematSolver(solveOptions.solver);
    } else {
      chosen = fitBest(function, *graph, budgetBytes, before.peakBytes,
                       solveOptions);
      if (chosen)
        solverOverhead = chosen->plan.cost;
      // A baseline is a plan too: the solvers optimize a model of the
      // memory, and a baseline that the simulation finds within the budget
      // at less overhead wins.
      for (const Candidate &c : baselineRuns)
        if (c.memory.peakBytes <= budgetBytes &&
            (!chosen || c.plan.cost < chosen->plan.cost)) {
          chosen = c;
          baselineWon = true;
        }
    }
    if (!chosen) {
      // The solvers may miss a plan that exists: the cheapest fitting
      // fallback, else the budget is infeasible.
      std::vector<Candidate> options =
          fallbacks(function, *graph, baselineRuns);
      const Candidate *least = nullptr;
      for (const Candidate &c : options) {
        if (c.memory.peakBytes <= budgetBytes &&
            (!chosen || c.plan.cost < chosen->plan.cost)) {
          chosen = c;
          baselineWon = llvm::any_of(baselineRuns, [&](const Candidate &b) {
            return b.name == c.name;
          });
        }
        if (!least || c.memory.peakBytes < least->memory.peakBytes)
          least = &c;
      }
      if (!chosen)
        return reportInfeasible(function, *least);
    }
    const RematPlan &plan = chosen->plan;
    RematSummary summary;
    summary.budgetBytes = budgetBytes;
    summary.peakBeforeBytes = before.peakBytes;
    summary.peakAfterBytes = chosen->memory.peakBytes;
    // The solver that ran, and the plan applied (a baseline's name when
    // one beat the solvers).
    summary.solver = baselineWon ? stringifyRematSolver(solveOptions.solver)
                                 : plan.solver;
    summary.plan = plan.solver;
    summary.solverOverheadSeconds = solverOverhead;
    summary.bound = plan.bound;
    summary.gap = plan.gap();
    summary.overheadSeconds = plan.cost;
    summary.recomputeFlops = plan.flops;
    summary.overheadFraction =
        graph->stepSeconds > 0 ? plan.cost / graph->stepSeconds : 0;
    for (size_t i = 0; i < plan.recompute.size(); ++i) {
      const RematValue &v = chosen->problem.values[i];
      if (plan.recompute[i]) {
        ++summary.recomputed;
        summary.recomputedBytes += v.bytes;
      } else if (v.neededByBackward) {
        ++summary.saved;
        summary.savedBytes += v.bytes;
      }
    }
    for (const Candidate &c : baselineRuns)
      summary.baselines.push_back(describe(c, graph->stepSeconds));
    if (!pareto.empty() &&
        failed(writePareto(function, *graph, before.peakBytes, baselineRuns,
                           summary)))
      return signalPassFailure();
    graph->apply(plan.recompute, groupsOf(chosen->problem));
    numValuesRecomputed += summary.recomputed;
    module->setAttr(MemWallDialect::kRematAttrName, encode(summary));
  }

  void reportInfeasible(func::FuncOp function, const Candidate &least) {
    const MemorySummary &memory = least.memory;
    InFlightDiagnostic error = mlir::emitError(function.getLoc());
    error << "memwall-remat: no recomputation fits the budget of "
          << gb(budgetBytes) << ": the least peak it reaches is "
          << gb(memory.peakBytes) << " (" << least.name << ", at "
          << memory.peakAt << ": ";
    bool first = true;
    int64_t states = 0;
    for (unsigned b = 0; b < kNumMemoryBuckets; ++b) {
      if (memory.atPeak[b] == 0)
        continue;
      error << (first ? "" : ", ")
            << stringifyMemoryBucket(static_cast<MemoryBucket>(b)) << " "
            << gb(memory.atPeak[b]);
      first = false;
      auto bucket = static_cast<MemoryBucket>(b);
      if (bucket == MemoryBucket::Weights ||
          bucket == MemoryBucket::Gradients ||
          bucket == MemoryBucket::Optimizer)
        states += memory.atPeak[b];
    }
    error << ")";
    if (2 * states < memory.peakBytes) {
      error << "; activations dominate: shorten the sequence or the "
               "micro-batch";
      return signalPassFailure();
    }
    // Model states dominate: what sharding or offload would give, with the
    // same recomputation; never the user's own setting.
    std::vector<int> groups = groupsOf(least.problem);
    auto predicted = [&](const ShardingOptions &options) {
      return gb(simulatePlan(function, target, least.plan.recompute, groups,
                             options)
                    .peakBytes);
    };
    error << "; model states (weights, gradients, optimizer) dominate with "
          << gb(states) << ": try ";
    ShardingOptions zero = sharding;
    zero.zeroStage = 3;
    if (sharding.zeroStage == 3 && sharding.devices > 1) {
      zero.devices = 2 * sharding.devices;
      error << "--devices=" << zero.devices << " (already ZeRO-3 over "
            << sharding.devices << "; predicted " << predicted(zero)
            << " per device with this recomputation)";
    } else {
      zero.devices = std::max<int64_t>(sharding.devices, 8);
      error << "--zero-stage=3 --devices=" << zero.devices << " (predicted "
            << predicted(zero) << " per device with this recomputation)";
    }
    // Offload needs an optimizer to move, and goes one policy further.
    ShardingOptions host = sharding;
    if (hasOptimizerStep(function) && sharding.offload != OffloadPolicy::Params) {
      host.offload = sharding.offload == OffloadPolicy::None
                         ? OffloadPolicy::Optimizer
                         : OffloadPolicy::Params;
      error << " or --offload=" << stringifyOffloadPolicy(host.offload)
            << " (predicted " << predicted(host) << ")";
    }
    signalPassFailure();
  }

  /// Predicted overhead across budgets from the least reachable peak to the
  /// peak without recomputation; the overhead at a budget is the least of
  /// any plan found at that budget or below (baselines included), so the
  /// curve is monotone.
  LogicalResult writePareto(func::FuncOp function, const RematGraph &graph,
                            int64_t beforePeak,
                            const std::vector<Candidate> &baselineRuns,
                            const RematSummary &summary) {
    RematParetoCurve curve;
    curve.modelName = nameOf(function.getLoc());
    if (curve.modelName.empty())
      curve.modelName = function.getName().str();
    curve.budgetBytes = budgetBytes;
    curve.baselines = summary.baselines;
    std::vector<Candidate> known = fallbacks(function, graph, baselineRuns);
    int64_t lo = beforePeak;
    for (const Candidate &c : known)
      lo = std::min(lo, c.memory.peakBytes);
    int64_t hi = summary.peakBeforeBytes;
    // Twelve solves: the exact MILP only when asked for by name.
    RematSolveOptions options = solveOptions;
    if (options.solver == RematSolverKind::Auto)
      options.solver = RematSolverKind::DP;
    options.timeLimitSeconds = std::min(solveOptions.timeLimitSeconds, 5.0);
    options.progress = nullptr;
    const int points = 12;
    double bestOverhead = std::numeric_limits<double>::infinity();
    int64_t peak = 0; // of the plan giving bestOverhead
    for (int j = 0; j < points; ++j) {
      int64_t budget = lo + (hi - lo) * j / (points - 1);
      auto consider = [&](const Candidate &c) {
        if (c.memory.peakBytes <= budget && c.plan.cost < bestOverhead) {
          bestOverhead = c.plan.cost;
          peak = c.memory.peakBytes;
        }
      };
      for (const Candidate &c : known)
        consider(c);
      if (std::optional<Candidate> fitted =
              fitBest(function, graph, budget, beforePeak, options))
        consider(*fitted);
      if (!std::isfinite(bestOverhead))
        continue;
      curve.points.push_back(
          {budget, peak, bestOverhead,
           graph.stepSeconds > 0 ? bestOverhead / graph.stepSeconds : 0});
    }
    if (llvm::Error error = sink->emitRematPareto(curve, pareto)) {
      mlir::emitError(function.getLoc()) << llvm::toString(std::move(error));
      return failure();
    }
    return success();
  }

  DictionaryAttr encode(const RematSummary &summary) {
    Builder b(&getContext());
    auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
    auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
    SmallVector<Attribute> baselineAttrs;
    for (const RematBaseline &base : summary.baselines)
      baselineAttrs.push_back(b.getDictionaryAttr({
          b.getNamedAttr("name", b.getStringAttr(base.name)),
          b.getNamedAttr("peak_bytes", i64(base.peakBytes)),
          b.getNamedAttr("overhead_time_s", f64(base.overheadSeconds)),
          b.getNamedAttr("overhead_fraction", f64(base.overheadFraction)),
          b.getNamedAttr("recomputed", i64(base.recomputed)),
          b.getNamedAttr("fits", b.getBoolAttr(base.fits)),
      }));
    SmallVector<NamedAttribute> fields = {
        b.getNamedAttr("budget_bytes", i64(summary.budgetBytes)),
        b.getNamedAttr("peak_before_bytes", i64(summary.peakBeforeBytes)),
        b.getNamedAttr("peak_after_bytes", i64(summary.peakAfterBytes)),
        b.getNamedAttr("saved", i64(summary.saved)),
        b.getNamedAttr("saved_bytes", i64(summary.savedBytes)),
        b.getNamedAttr("recomputed", i64(summary.recomputed)),
        b.getNamedAttr("recomputed_bytes", i64(summary.recomputedBytes)),
        b.getNamedAttr("recompute_flops", f64(summary.recomputeFlops)),
        b.getNamedAttr("overhead_time_s", f64(summary.overheadSeconds)),
        b.getNamedAttr("overhead_fraction", f64(summary.overheadFraction)),
        b.getNamedAttr("solver", b.getStringAttr(summary.solver)),
        b.getNamedAttr("plan", b.getStringAttr(summary.plan)),
        b.getNamedAttr("gap", f64(summary.gap)),
        b.getNamedAttr("baselines", b.getArrayAttr(baselineAttrs)),
    };
    if (summary.bound)
      fields.push_back(b.getNamedAttr("bound_s", f64(*summary.bound)));
    if (summary.solverOverheadSeconds)
      fields.push_back(b.getNamedAttr("solver_overhead_time_s",
                                      f64(*summary.solverOverheadSeconds)));
    return b.getDictionaryAttr(fields);
  }

  /// Where the Pareto plot and the solver's progress lines go.
  ReportSink *sink = &getFileReportSink();
  GPUTarget target;
  int64_t budgetBytes = 0;
  RematSolveOptions solveOptions;
  ShardingOptions sharding;
};

} // namespace

std::unique_ptr<Pass> memwall::createRemat(const RematOptions &options,
                                           ReportSink &sink) {
  return std::make_unique<RematPass>(options, sink);
}

std::optional<RematSummary> memwall::readRematSummary(ModuleOp module) {
  auto dict =
      module->getAttrOfType<DictionaryAttr>(MemWallDialect::kRematAttrName);
  if (!dict)
    return std::nullopt;
  auto i64 = [](DictionaryAttr d, StringRef name) -> int64_t {
    auto attr = d.getAs<IntegerAttr>(name);
    return attr ? attr.getInt() : 0;
  };
  auto f64 = [](DictionaryAttr d, StringRef name) -> double {
    auto attr = d.getAs<FloatAttr>(name);
    return attr ? attr.getValueAsDouble() : 0;
  };
  auto str = [](DictionaryAttr d, StringRef name) -> std::string {
    auto attr = d.getAs<StringAttr>(name);
    return attr ? attr.str() : "";
  };
  RematSummary s;
  s.budgetBytes = i64(dict, "budget_bytes");
  s.peakBeforeBytes = i64(dict, "peak_before_bytes");
  s.peakAfterBytes = i64(dict, "peak_after_bytes");
  s.saved = i64(dict, "saved");
  s.savedBytes = i64(dict, "saved_bytes");
  s.recomputed = i64(dict, "recomputed");
  s.recomputedBytes = i64(dict, "recomputed_bytes");
  s.recomputeFlops = f64(dict, "recompute_flops");
  s.overheadSeconds = f64(dict, "overhead_time_s");
  s.overheadFraction = f64(dict, "overhead_fraction");
  s.solver = str(dict, "solver");
  s.plan = str(dict, "plan");
  if (dict.get("solver_overhead_time_s"))
    s.solverOverheadSeconds = f64(dict, "solver_overhead_time_s");
  s.gap = f64(dict, "gap");
  if (dict.get("bound_s"))
    s.bound = f64(dict, "bound_s");
  if (auto array = dict.getAs<ArrayAttr>("baselines"))
    for (auto base : array.getAsRange<DictionaryAttr>()) {
      RematBaseline b;
      b.name = str(base, "name");
      b.peakBytes = i64(base, "peak_bytes");
      b.overheadSeconds = f64(base, "overhead_time_s");
      b.overheadFraction = f64(base, "overhead_fraction");
      b.recomputed = i64(base, "recomputed");
      if (auto fits = base.getAs<BoolAttr>("fits"))
        b.fits = fits.getValue();
      s.baselines.push_back(std::move(b));
    }
  return s;
}
