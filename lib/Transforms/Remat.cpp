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
#include "mlir/Interfaces/SideEffectInterfaces.h"

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

/// Marks the ops of a two-level plan's chain with their segment until they
/// are placed (RematGraph::apply); never left in the IR.
constexpr llvm::StringLiteral kSegmentAttrName = "memwall.remat_segment";

/// `<op name>.recompute`, on the original location.
Location recomputedLoc(Operation *op) {
  std::string name = nameOf(op->getLoc());
  return NameLoc::get(
      StringAttr::get(op->getContext(),
                      (name.empty() ? "value" : name) + ".recompute"),
      op->getLoc());
}

/// Drops the ops of each segment's chain that nothing reads, moves the rest
/// (in order) to just before the first op that reads one of them, and clears
/// `chain` for the values whose clone went away.
void placeChains(Block *body, const std::vector<Operation *> &chainClone,
                 std::vector<bool> &chain) {
  std::map<int64_t, SmallVector<Operation *>> segments;
  for (Operation &op : *body)
    if (auto tag = op.getAttrOfType<IntegerAttr>(kSegmentAttrName))
      segments[tag.getInt()].push_back(&op);
  DenseMap<Operation *, int> valueOf;
  for (auto [i, clone] : llvm::enumerate(chainClone))
    if (clone)
      valueOf[clone] = static_cast<int>(i);
  for (auto &[segment, members] : segments) {
    // Readers come after what they read: walking backwards, an op's
    // readers in the chain are already gone when it is dead.
    SmallVector<Operation *> kept;
    for (Operation *op : llvm::reverse(members)) {
      if (op->use_empty()) {
        if (auto it = valueOf.find(op); it != valueOf.end())
          chain[it->second] = false;
        op->erase();
        continue;
      }
      kept.push_back(op);
    }
    std::reverse(kept.begin(), kept.end());
    llvm::SmallPtrSet<Operation *, 32> inChain(kept.begin(), kept.end());
    Operation *firstReader = nullptr;
    for (Operation *op : kept)
      for (Operation *user : op->getUsers())
        if (!inChain.contains(user) &&
            (!firstReader || user->isBeforeInBlock(firstReader)))
          firstReader = user;
    for (Operation *op : kept) {
      op->removeAttr(kSegmentAttrName);
      op->moveBefore(firstReader);
    }
  }
}

/// Moves each backward op whose results outweigh what dies at it to just
/// before its first reader, so that a gradient made early (e.g. before a
/// layer's recomputation) is not held across the recomputation. Walks
/// backwards so that a producer follows its reader once that has moved.
void sinkBackwardProducers(Block *body) {
  SmallVector<Operation *> candidates;
  for (Operation &op : body->without_terminator())
    if (op.getAttrOfType<StringAttr>(MemWallDialect::kPhaseAttrName) ==
            StringAttr::get(op.getContext(), "backward") &&
        !op.hasAttr(MemWallDialect::kRecomputedAttrName) &&
        isa<MemWallDialect>(op.getDialect()) && !isa<ReshapeOp>(op) &&
        (op.getNumRegions() == 0 || isa<FusionOp>(op)) && isPure(&op))
      candidates.push_back(&op);
  auto bytesOf = [](Value v) {
    return isa<RankedTensorType>(v.getType()) ? getTensorByteSize(v.getType())
                                              : int64_t(0);
  };
  // The op in `body` at or above `op`.
  auto top = [&](Operation *op) { return body->findAncestorOpInBlock(*op); };
  for (Operation *op : llvm::reverse(candidates)) {
    Operation *firstReader = nullptr;
    for (Operation *user : op->getUsers())
      if (Operation *t = top(user);
          t && (!firstReader || t->isBeforeInBlock(firstReader)))
        firstReader = t;
    // Nor past an update in place of what it reads (adamw of a weight).
    for (Value operand : op->getOperands())
      for (Operation *user : operand.getUsers())
        if (!getOptimizerUpdates(user).empty() && user->getBlock() == body &&
            op->isBeforeInBlock(user) &&
            (!firstReader || user->isBeforeInBlock(firstReader)))
          firstReader = user;
    if (!firstReader || firstReader == op->getNextNode())
      continue;
    int64_t made = 0, freed = 0;
    for (Value result : op->getResults())
      made += bytesOf(result);
    llvm::SmallPtrSet<Value, 4> seen;
    for (Value operand : op->getOperands()) {
      if (!seen.insert(operand).second)
        continue;
      // Dies here: no reader after `op` (views count as readers).
      bool readLater = llvm::any_of(operand.getUsers(), [&](Operation *user) {
        Operation *t = top(user);
        return t && t != op && op->isBeforeInBlock(t);
      });
      if (!readLater && !isa<BlockArgument>(operand))
        freed += bytesOf(operand);
    }
    if (made > freed)
      op->moveBefore(firstReader);
  }
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
  /// The rank (0, 1, ...) among the layers of each value's defining layer,
  /// or -1 outside the layers; and how many layers there are.
  std::vector<int> layerRank;
  int numLayers = 0;
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
    std::vector<int> layers;
    for (int layer : graph.layerOfGroup)
      if (layer >= 0)
        layers.push_back(layer);
    llvm::sort(layers);
    graph.numLayers = static_cast<int>(layers.size());
    for (int group : definedIn) {
      int layer = graph.layerOfGroup[group];
      graph.layerRank.push_back(
          layer < 0 ? -1
                    : static_cast<int>(llvm::lower_bound(layers, layer) -
                                       layers.begin()));
    }
    return graph;
  }

  /// Values a two-level plan with segments of `segmentLayers` layers
  /// recomputes first (docs/remat.md "Two levels"): those of every layer
  /// but the last of each segment, re-run from the segment's input before
  /// the segment's backward so that only one layer input per segment is
  /// kept from the forward. Empty below two layers per segment.
  std::vector<bool> segmentChain(int segmentLayers) const {
    std::vector<bool> chain(ops.size(), false);
    if (segmentLayers < 2)
      return chain;
    for (size_t i = 0; i < ops.size(); ++i) {
      int rank = layerRank[i];
      if (rank < 0 || !problem.values[i].recomputable)
        continue;
      int last =
          std::min((rank / segmentLayers + 1) * segmentLayers, numLayers) - 1;
      chain[i] = rank < last;
    }
    return chain;
  }

  /// Applies a plan: with `segmentLayers` >= 2 first the segments' chains
  /// (segmentChain), then `recompute` with the groups `groupOf` (per value):
  /// clones the recomputed ops of each group before the group's first
  /// backward use and points the backward at the clones. Returns the chain
  /// values that remain (the others were recomputed again per group and
  /// nothing else read them).
  std::vector<bool> apply(const std::vector<bool> &recompute,
                          const std::vector<int> &groupOf,
                          int segmentLayers = 0) {
    std::vector<bool> chain = segmentChain(segmentLayers);
    if (ops.empty())
      return chain;
    Block *body = ops.front()->getBlock();
    MLIRContext *ctx = body->getParentOp()->getContext();
    auto markRecomputed = [&](Operation *clone) {
      clone->setAttr(MemWallDialect::kPhaseAttrName,
                     StringAttr::get(ctx, "backward"));
      clone->setAttr(MemWallDialect::kRecomputedAttrName, UnitAttr::get(ctx));
    };
    // `v` with the values `mapping` replaces, looking through forward views
    // (cloned at the builder's point); `v` itself when none is replaced.
    std::function<Value(Value, IRMapping &, DenseMap<Value, Value> &,
                        OpBuilder &, Attribute)>
        remap = [&](Value v, IRMapping &mapping, DenseMap<Value, Value> &views,
                    OpBuilder &builder, Attribute segment) -> Value {
      if (Value mapped = mapping.lookupOrNull(v))
        return mapped;
      if (auto it = views.find(v); it != views.end())
        return it->second;
      auto reshape = v.getDefiningOp<ReshapeOp>();
      if (!reshape)
        return v;
      Value source =
          remap(reshape.getInput(), mapping, views, builder, segment);
      if (source == reshape.getInput())
        return v;
      Operation *view = builder.clone(*reshape);
      view->setOperand(0, source);
      markRecomputed(view);
      // A view of a chain's view belongs to the chain only when made for it.
      if (segment)
        view->setAttr(kSegmentAttrName, segment);
      else
        view->removeAttr(kSegmentAttrName);
      views[v] = view->getResult(0);
      return view->getResult(0);
    };
    // Backward uses of an op's results or of their forward views (and, for
    // a chain's clone, of the chain's views).
    auto backwardUses = [&](Operation *op, bool throughRecomputedViews) {
      SmallVector<OpOperand *> uses;
      SmallVector<Value> worklist(op->getResults());
      while (!worklist.empty()) {
        Value v = worklist.pop_back_val();
        for (OpOperand &use : v.getUses()) {
          Operation *user = use.getOwner();
          bool recomputed = user->hasAttr(MemWallDialect::kRecomputedAttrName);
          if (auto reshape = dyn_cast<ReshapeOp>(user);
              reshape && (!recomputed || throughRecomputedViews))
            worklist.push_back(reshape.getResult());
          else if (hasPhase(user) && !recomputed)
            uses.push_back(&use);
        }
      }
      return uses;
    };
    // A backward view the reader no longer needs goes away.
    auto eraseUnusedViews = [](Value view) {
      while (auto reshape = view.getDefiningOp<ReshapeOp>()) {
        if (!hasPhase(reshape) || !reshape->use_empty())
          break;
        view = reshape.getInput();
        reshape->erase();
      }
    };

    // The chains, cloned at the end for now and tagged with their segment;
    // moved before their first reader once every group is applied.
    std::vector<Operation *> chainClone(ops.size(), nullptr);
    {
      OpBuilder builder(body->getTerminator());
      std::map<int, IRMapping> mappings;
      std::map<int, DenseMap<Value, Value>> views;
      for (size_t i = 0; i < ops.size(); ++i) {
        if (!chain[i])
          continue;
        int segment = layerRank[i] / segmentLayers;
        Attribute tag = builder.getI64IntegerAttr(segment);
        IRMapping operands;
        for (Value operand : ops[i]->getOperands())
          operands.map(operand, remap(operand, mappings[segment],
                                      views[segment], builder, tag));
        Operation *clone = builder.clone(*ops[i], operands);
        markRecomputed(clone);
        clone->setAttr(kSegmentAttrName, tag);
        clone->setLoc(recomputedLoc(ops[i]));
        mappings[segment].map(ops[i]->getResults(), clone->getResults());
        chainClone[i] = clone;
        for (OpOperand *use : backwardUses(ops[i], false)) {
          Value view = use->get();
          use->set(
              remap(view, mappings[segment], views[segment], builder, tag));
          eraseUnusedViews(view);
        }
      }
    }

    DenseMap<Operation *, int64_t> position;
    int64_t p = 0;
    for (Operation &op : *body)
      position[&op] = p++;
    std::map<int, std::vector<int>> members;
    for (size_t i = 0; i < ops.size(); ++i)
      if (recompute[i])
        members[groupOf[i]].push_back(static_cast<int>(i));
    for (auto &[group, indices] : members) {
      Operation *insertBefore = nullptr;
      DenseMap<int, SmallVector<OpOperand *>> uses;
      for (int i : indices) {
        uses[i] = chainClone[i] ? backwardUses(chainClone[i], true)
                                : backwardUses(ops[i], false);
        for (OpOperand *use : uses[i])
          if (!insertBefore ||
              position[use->getOwner()] < position[insertBefore])
            insertBefore = use->getOwner();
      }
      if (!insertBefore)
        continue;

      OpBuilder builder(insertBefore);
      IRMapping mapping, chains;
      DenseMap<Value, Value> viewClones, chainViews;
      llvm::DenseSet<int> inGroup(indices.begin(), indices.end());
      for (int i : indices) {
        Operation *op = ops[i];
        IRMapping operands;
        for (Value operand : op->getOperands()) {
          auto it = index.find(viewRoot(operand));
          if (it == index.end())
            continue;
          if (inGroup.contains(it->second)) {
            operands.map(operand, remap(operand, mapping, viewClones, builder,
                                        Attribute()));
          } else if (Operation *clone = chainClone[it->second]) {
            // What another group keeps, from a chain: the chain's copy.
            chains.map(ops[it->second]->getResults(), clone->getResults());
            operands.map(operand, remap(operand, chains, chainViews, builder,
                                        Attribute()));
          }
        }
        Operation *clone = builder.clone(*op, operands);
        markRecomputed(clone);
        clone->setLoc(recomputedLoc(op));
        mapping.map(op->getResults(), clone->getResults());
        // The backward reads a chain's copy of it: that copy maps here too.
        if (chainClone[i])
          mapping.map(chainClone[i]->getResults(), clone->getResults());
      }
      for (int i : indices)
        for (OpOperand *use : uses[i]) {
          Value view = use->get();
          use->set(remap(view, mapping, viewClones, builder, Attribute()));
          eraseUnusedViews(view);
        }
    }
    if (segmentLayers >= 2)
      placeChains(body, chainClone, chain);
    if (!members.empty() || segmentLayers >= 2)
      sinkBackwardProducers(body);
    return chain;
  }
};

/// A plan applied to a copy of a step: its simulated memory, and the values
/// of the segments' chains that remain (RematGraph::apply).
struct SimulatedPlan {
  MemorySummary memory;
  std::vector<bool> chain;
};

SimulatedPlan simulatePlan(func::FuncOp function, const GPUTarget &target,
                           const std::vector<bool> &recompute,
                           const std::vector<int> &groupOf,
                           const ShardingOptions &sharding, int segmentLayers) {
  OwningOpRef<func::FuncOp> copy = function.clone();
  SimulatedPlan result;
  if (std::optional<RematGraph> graph = RematGraph::build(*copy, target))
    result.chain = graph->apply(recompute, groupOf, segmentLayers);
  result.memory = simulateMemory(*copy, sharding);
  return result;
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
    RematPlan plan; // evaluated on `problem`, plus the chains' recompute
    RematProblem problem;
    MemorySummary memory;
    /// Two levels: layers per segment (0: one level) and the values its
    /// chains recompute.
    int segmentLayers = 0;
    std::vector<bool> chain;
  };

  /// `plan` applied and simulated; the recompute of the segments' chains
  /// is added to its cost.
  Candidate evaluate(func::FuncOp function, StringRef name, RematPlan plan,
                     const RematProblem &problem, int segmentLayers = 0) {
    Candidate c;
    c.name = name.str();
    c.problem = problem;
    c.segmentLayers = segmentLayers;
    SimulatedPlan simulated =
        simulatePlan(function, target, plan.recompute, groupsOf(problem),
                     sharding, segmentLayers);
    c.memory = std::move(simulated.memory);
    c.chain = std::move(simulated.chain);
    for (size_t i = 0; i < c.chain.size(); ++i)
      if (c.chain[i]) {
        plan.cost += problem.values[i].seconds;
        plan.flops += problem.values[i].flops;
      }
    c.plan = std::move(plan);
    return c;
  }

  Candidate simulate(func::FuncOp function, StringRef name,
                     const RematProblem &problem,
                     const std::vector<bool> &recompute) {
    RematPlan plan = evaluateRematPlan(problem, recompute, 0);
    plan.solver = name.str();
    return evaluate(function, name, std::move(plan), problem);
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

  /// `problem` under segments of `segmentLayers` layers: what a layer hands
  /// to the next inside a segment comes from the segment's chain, so the
  /// plan's formula does not count it as kept (the simulation does).
  static RematProblem segmented(const RematGraph &graph, RematProblem problem,
                                int segmentLayers) {
    std::vector<bool> chain = graph.segmentChain(segmentLayers);
    for (size_t reader = 0; reader < problem.values.size(); ++reader)
      for (int d : problem.values[reader].deps)
        if (chain[d] && graph.layerRank[d] != graph.layerRank[reader])
          problem.values[d].bytes = 0;
    return problem;
  }

  /// Segment lengths two-level plans try: 2 up to twice the square root of
  /// the layer count (Chen et al.'s optimum is near the root).
  static std::vector<int> segmentLengths(const RematGraph &graph) {
    std::vector<int> lengths;
    int longest = std::min(
        graph.numLayers - 1,
        static_cast<int>(std::ceil(2 * std::sqrt(double(graph.numLayers)))));
    for (int k = 2; k <= longest; ++k)
      lengths.push_back(k);
    return lengths;
  }

  /// Finds the cheapest plan for `problem` whose simulated peak is within
  /// `budget`: solves for the formula's capacity, simulates, and tightens
  /// the capacity by the overshoot until the simulation agrees. The MILP
  /// runs once (when `options` ask for it), at the capacity the DP's loop
  /// settled on (where the DP's plan is a feasible start), with `options`'
  /// time limit; the cheapest plan that fits wins. `fixedBytes` is what no
  /// plan changes.
  std::optional<Candidate> fit(func::FuncOp function,
                               const RematProblem &problem, int64_t budget,
                               int64_t fixedBytes,
                               const RematSolveOptions &options,
                               int segmentLayers = 0, bool allowMilp = true) {
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
        std::string name = plan.solver;
        Candidate c =
            evaluate(function, name, std::move(plan), problem, segmentLayers);
        if (c.memory.peakBytes <= budget) {
          if (!found || c.plan.cost < found->plan.cost)
            found = std::move(c);
          break;
        }
        // 0.1% more than the overshoot, so the loop ends in a few steps.
        capacity -= c.memory.peakBytes - budget + budget / 1000;
      }
      if (heuristic == RematSolverKind::DP)
        dpCapacity = capacity;
    }
    // The MILP runs only with both heuristics, so dpCapacity is set.
    if (!allowMilp || kind != RematSolverKind::MILP || dpCapacity <= 0)
      return found;
    RematSolveOptions exact = options;
    exact.solver = RematSolverKind::MILP;
    RematPlan plan = solveRemat(problem, dpCapacity, exact);
    if (plan.feasible) {
      std::string name = plan.solver;
      Candidate c =
          evaluate(function, name, std::move(plan), problem, segmentLayers);
      if (c.memory.peakBytes <= budget &&
          (!found || c.plan.cost <= found->plan.cost))
        return c;
    }
    if (found)
      found->plan.solver += " (the MILP found nothing better)";
    return found;
  }

  /// The cheapest fitting plan over both groupings, or nothing; two-level
  /// plans (segments whose layer inputs are recomputed too) only when no
  /// one-level plan fits, since their chains cost a forward of most layers.
  std::optional<Candidate> fitBest(func::FuncOp function,
                                   const RematGraph &graph, int64_t budget,
                                   int64_t beforePeak,
                                   const RematSolveOptions &options) {
    std::optional<Candidate> best;
    // The MILP's time limit is shared by the two groupings.
    RematSolveOptions half = options;
    half.timeLimitSeconds = options.timeLimitSeconds / 2;
    auto consider = [&](std::optional<Candidate> c) {
      if (c && (!best || c->plan.cost < best->plan.cost))
        best = std::move(c);
    };
    std::vector<RematProblem> groupings = {graph.problem, byDefinition(graph)};
    int64_t fixedBytes =
        beforePeak - evaluateRematPlan(graph.problem, {}, 0).memory;
    for (const RematProblem &problem : groupings)
      consider(fit(function, problem, budget, fixedBytes, half));
    if (best)
      return best;
    // The heuristics alone: one MILP per length would be slow.
    for (int k : segmentLengths(graph))
      for (const RematProblem &problem : groupings) {
        std::optional<Candidate> c =
            fit(function, segmented(graph, problem, k), budget, fixedBytes,
                options, k, /*allowMilp=*/false);
        if (c)
          c->plan.solver += ", segments of " + std::to_string(k) + " layers";
        consider(std::move(c));
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
    std::vector<int> lengths = segmentLengths(graph);
    lengths.insert(lengths.begin(), 0);
    for (const RematProblem &grouping : {graph.problem, byDefinition(graph)})
      for (int k : lengths) {
        RematProblem problem = k ? segmented(graph, grouping, k) : grouping;
        RematPlan least = minimumMemoryRematPlan(problem, solveOptions);
        std::string name = least.solver + " (least-memory plan";
        if (k)
          name += ", segments of " + std::to_string(k) + " layers";
        name += ")";
        least.solver = name;
        result.push_back(
            evaluate(function, name, std::move(least), problem, k));
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
    if (!chosen || chosen->segmentLayers > 0) {
      // The solvers may miss a plan that exists (and two-level fits try
      // the heuristics only): the cheapest fitting fallback, else the
      // budget is infeasible.
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
    summary.segmentLayers = chosen->segmentLayers;
    for (size_t i = 0; i < plan.recompute.size(); ++i) {
      // Sizes from the step (a segmented problem zeroes some).
      const RematValue &v = graph->problem.values[i];
      if (i < chosen->chain.size() && chosen->chain[i]) {
        ++summary.segmentRecomputed;
        summary.recomputedBytes += v.bytes;
      }
      if (plan.recompute[i]) {
        ++summary.recomputed;
        summary.recomputedBytes += v.bytes;
      } else if (v.neededByBackward &&
                 !(i < chosen->chain.size() && chosen->chain[i])) {
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
    graph->apply(plan.recompute, groupsOf(chosen->problem),
                 chosen->segmentLayers);
    numValuesRecomputed += summary.recomputed + summary.segmentRecomputed;
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
                             options, least.segmentLayers)
                    .memory.peakBytes);
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
        b.getNamedAttr("segment_layers", i64(summary.segmentLayers)),
        b.getNamedAttr("segment_recomputed", i64(summary.segmentRecomputed)),
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
  s.segmentLayers = i64(dict, "segment_layers");
  s.segmentRecomputed = i64(dict, "segment_recomputed");
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
