//===- Fuse.cpp - roofline-driven fusion into memwall.fusion ops ----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Greedy merging of producer-consumer kernels, largest predicted time saving
// first, with analyzeKernel (lib/Analysis/FusionCost.cpp) as the judge of
// legality and cost. docs/fusion.md describes the model.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/FusionCost.h"
#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"
#include "memwall/Transforms/OutlineKernel.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/ADT/StringSwitch.h"

#include "llvm/ADT/DenseSet.h"

#include <cmath>
#include <functional>
#include <optional>
#include <queue>

using namespace mlir;

namespace memwall {
#define GEN_PASS_DEF_FUSE
#include "memwall/Transforms/Passes.h.inc"
} // namespace memwall

using namespace memwall;

// Markers of memwall-fuse's views per reader (below), only while it runs.
/// On each copy of a view and its original: which original it copies.
static constexpr StringLiteral kViewCopyAttr = "__memwall_fuse_view_copy";
/// On each copy, not on its original.
static constexpr StringLiteral kViewCopiedAttr = "__memwall_fuse_view_copied";
/// On the reshape and transpose that read attention's heads-merged output
/// back as its backward's `out`.
static constexpr StringLiteral kOutputViewAttr = "__memwall_fuse_output_view";

namespace {
/// What memwall-fuse did to a function.
struct FusionCounts {
  unsigned kernelsFormed = 0;
  unsigned opsFused = 0;
  unsigned mergesKeptForMemory = 0;
  double predictedSecondsSaved = 0;
};

/// Savings below this are noise, not a reason to merge.
constexpr double kMinSavingSeconds = 1e-12;

struct Group {
  SmallVector<Operation *> ops;
  double timeSeconds = 0;
  unsigned version = 0;
  bool alive = true;
};

struct Candidate {
  double saving;
  unsigned a, b, versionA, versionB;
  /// A third group merged with both, where only the three together save
  /// (two matmuls of one lhs and the SwiGLU reading both).
  std::optional<unsigned> c;
  unsigned versionC = 0;
  /// Only ropes and views merge (q's and k's ropes into one kernel), or
  /// only matmuls (sibling projections as one batched cuBLASLt call): taken
  /// after every merge into a GEMM or attention, which may absorb a rope or
  /// a product whole where this would only save a launch.
  bool deferred = false;
  bool operator<(const Candidate &other) const {
    if (deferred != other.deferred)
      return deferred;
    // Largest saving first; ties go to the earlier groups, for determinism.
    if (saving != other.saving)
      return saving < other.saving;
    return std::make_pair(a, b) > std::make_pair(other.a, other.b);
  }
};

class BlockFuser {
public:
  /// `memory`: the block's step memory (the function's entry block), or
  /// null where the fuser need not keep the peak.
  BlockFuser(Block &block, const GPUTarget &target, StepMemory *memory)
      : block(block), target(target), memory(memory) {}

  FusionCounts run() {
    unsigned position = 0;
    for (Operation &op : block.without_terminator())
      positions[&op] = position++;
    for (Operation &op : block.without_terminator()) {
      if (seedLayoutGroup(&op))
        continue;
      // A dequantize kernel, with the dequantize of its scales.
      if (auto dequantize = dyn_cast<DequantizeOp>(op);
          dequantize && dequantize.getMaterialize()) {
        seedGroup(getDequantizeKernelOps(dequantize));
        continue;
      }
      if (!isElementwiseOp(&op) && !isRowReductionOp(&op) &&
          !isa<MatmulOp, FlashAttentionOp, FlashAttentionGradOp>(&op))
        continue;
      // A matmul starts with the dequantize of its rhs: its main loop
      // dequantizes the weights (one kernel, however else it fuses).
      SmallVector<Operation *, 3> seed{&op};
      if (auto matmul = dyn_cast<MatmulOp>(&op))
        if (DequantizeOp dequantize = getRhsPrologue(matmul)) {
          seed.insert(seed.begin(), dequantize);
          // Double-quantized scales are dequantized in the same prologue.
          if (DequantizeOp scales = getScalesPrologue(dequantize))
            seed.insert(seed.begin(), scales);
        }
      seedGroup(seed);
    }
    for (unsigned id = 0; id < groups.size(); ++id)
      for (unsigned neighbor : neighbors(id))
        if (neighbor > id)
          propose(id, neighbor);
    while (!queue.empty()) {
      Candidate candidate = queue.top();
      queue.pop();
      Group &a = groups[candidate.a], &b = groups[candidate.b];
      if (!a.alive || !b.alive || a.version != candidate.versionA ||
          b.version != candidate.versionB)
        continue;
      if (candidate.c && (!groups[*candidate.c].alive ||
                          groups[*candidate.c].version != candidate.versionC))
        continue;
      // Earlier merges moved lifetimes: check the peak again.
      SmallVector<unsigned, 3> ids{candidate.a, candidate.b};
      if (candidate.c)
        ids.push_back(*candidate.c);
      if (raisesPeak(ids)) {
        ++mergesKeptForMemory;
        continue;
      }
      merge(candidate.a, candidate.b, candidate.c);
    }
    double secondsAfter = 0;
    for (const Group &group : groups)
      if (group.alive)
        secondsAfter += group.timeSeconds;
    FusionCounts counts = materialize();
    counts.predictedSecondsSaved = secondsBefore - secondsAfter;
    counts.mergesKeptForMemory = mergesKeptForMemory;
    return counts;
  }

private:
  /// A heads split (reshape + transpose), a rope, a slice or a heads merge
  /// (transpose + reshape): no generated kernel of its own, but a GEMM may
  /// take it into its epilogue or its lhs addressing, and attention may read
  /// or write through it (the layout kernel's time is the saving). Such a
  /// group is materialized only merged with a GEMM or an attention.
  bool seedLayoutGroup(Operation *op) {
    if (groupOf.contains(op))
      return true;
    SmallVector<Operation *, 2> ops = getLayoutStep(op);
    if (ops.empty())
      return false;
    Group group;
    for (Operation *member : ops) {
      groupOf[member] = groups.size();
      group.ops.push_back(member);
    }
    group.timeSeconds = predictLayoutKernelsSeconds(ops, target);
    // A view's copies ran as one kernel before fusion.
    if (!op->hasAttr(kViewCopiedAttr))
      secondsBefore += group.timeSeconds;
    groups.push_back(std::move(group));
    return true;
  }

  /// A reshape no group holds: a view, transparent to the search (a decode
  /// step's heads split between a GEMM and its rope).
  bool isLooseView(Operation *op) {
    return isa<ReshapeOp>(op) && !groupOf.contains(op);
  }

  /// Groups that produce an input of `id`, consume one of its results, or
  /// read one of its inputs too (siblings: merged, they read it once),
  /// looking through loose views.

  llvm::SmallSetVector<unsigned, 8> neighbors(unsigned id) {
    llvm::SmallSetVector<unsigned, 8> result;
    auto addGroupOf = [&](Operation *op) {
      if (auto it = groupOf.find(op); it != groupOf.end())
        if (it->second != id)
          result.insert(it->second);
    };
    std::function<void(Value)> addUsers = [&](Value value) {
      for (Operation *user : value.getUsers())
        if (Operation *ancestor = block.findAncestorOpInBlock(*user)) {
          if (isLooseView(ancestor))
            addUsers(ancestor->getResult(0));
          addGroupOf(ancestor);
        }
    };
    for (Operation *op : groups[id].ops) {
      for (Value operand : op->getOperands()) {
        Value source = operand;
        while (Operation *def = source.getDefiningOp()) {
          addGroupOf(def);
          if (!isLooseView(def))
            break;
          source = def->getOperand(0);
        }
        addUsers(operand);
      }
      for (Value result : op->getResults())
        addUsers(result);
    }
    return result;
  }

  /// `ops` with the loose views between them: reshape chains from a value
  /// `ops` compute to ops of `ops` alone, which run inside the kernel.
  SmallVector<Operation *> withViewsBetween(ArrayRef<Operation *> ops) {
    llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
    SmallVector<Operation *> result(ops.begin(), ops.end());
    std::function<bool(Operation *, SmallVectorImpl<Operation *> &)>
        endsInMembers =
            [&](Operation *view, SmallVectorImpl<Operation *> &chain) {
              chain.push_back(view);
              for (Operation *user : view->getUsers()) {
                if (members.contains(user))
                  continue;
                if (!isLooseView(user) || !endsInMembers(user, chain))
                  return false;
              }
              return true;
            };
    for (Operation *op : ops)
      for (Value value : op->getResults())
        for (Operation *user : value.getUsers()) {
          SmallVector<Operation *> chain;
          if (user->getBlock() != &block || !isLooseView(user) ||
              members.contains(user) || !endsInMembers(user, chain))
            continue;
          for (Operation *view : chain)
            if (members.insert(view).second)
              result.push_back(view);
        }
    llvm::sort(result, [&](Operation *x, Operation *y) {
      return positions.lookup(x) < positions.lookup(y);
    });
    return result;
  }

  /// True if some op outside `members` is reached from them and reaches
  /// back into them: merging would need it both before and after the kernel.
  bool createsCycle(const llvm::SmallPtrSetImpl<Operation *> &members) {
    unsigned last = 0;
    for (Operation *op : members)
      last = std::max(last, positions.lookup(op));
    SmallVector<Operation *> worklist;
    llvm::DenseSet<Operation *> visited;
    auto pushUsers = [&](Operation *op) {
      for (Operation *user : op->getUsers()) {
        Operation *ancestor = block.findAncestorOpInBlock(*user);
        if (!ancestor || ancestor == block.getTerminator() ||
            positions.lookup(ancestor) > last)
          continue;
        if (visited.insert(ancestor).second)
          worklist.push_back(ancestor);
      }
    };
    for (Operation *op : members)
      pushUsers(op);
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (members.contains(op)) {
        // Reached directly from a member: not a detour.
        continue;
      }
      for (Operation *user : op->getUsers()) {
        Operation *ancestor = block.findAncestorOpInBlock(*user);
        if (ancestor && members.contains(ancestor))
          return true;
      }
      pushUsers(op);
    }
    return false;
  }

  /// "forward", "backward", "optimizer", or "recompute" for memwall-remat's
  /// clones: fusing across phases would move a forward op into the backward
  /// (or a recomputed clone back into the forward, or into a gradient's
  /// kernel, where its result is made later and lives beside the gradient's)
  /// and stretch lifetimes the memory plan relies on.
  static StringRef phaseOf(Operation *op) {
    if (op->hasAttr(MemWallDialect::kRecomputedAttrName))
      return "recompute";
    return getPhaseOf(op);
  }

  /// The predicted saving of merging `ids` into one kernel; nullopt when
  /// they cannot be one (phases, a cycle, analyzeKernel).
  std::optional<double> savingOf(ArrayRef<unsigned> ids) {
    SmallVector<Operation *> ops;
    double apart = 0;
    for (unsigned id : ids) {
      if (phaseOf(groups[id].ops.front()) !=
          phaseOf(groups[ids.front()].ops.front()))
        return std::nullopt;
      ops.append(groups[id].ops.begin(), groups[id].ops.end());
      apart += groups[id].timeSeconds;
    }
    ops = withViewsBetween(ops);
    llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
    if (createsCycle(members))
      return std::nullopt;
    FailureOr<KernelAnalysis> merged = analyzeKernel(ops, target);
    if (failed(merged))
      return std::nullopt;
    return apart - merged->timeSeconds;
  }

  /// The ops of `ids` as one kernel, with the views between them.
  SmallVector<Operation *> kernelOf(ArrayRef<unsigned> ids) {
    SmallVector<Operation *> ops;
    for (unsigned id : ids)
      ops.append(groups[id].ops.begin(), groups[id].ops.end());
    return withViewsBetween(ops);
  }

  /// Whether merging `ids` would lift the block's memory above its peak.
  bool raisesPeak(ArrayRef<unsigned> ids) {
    return memory &&
           memory->peakWith(memory->plan(kernelOf(ids))) > memory->getLimit();
  }

  void propose(unsigned a, unsigned b) {
    std::optional<double> saving = savingOf({a, b});
    bool matmulsOnly = isMatmulsOnly(a) && isMatmulsOnly(b);
    if (saving && *saving >= kMinSavingSeconds) {
      Candidate candidate{*saving, a, b, groups[a].version, groups[b].version};
      candidate.deferred =
          matmulsOnly || llvm::all_of(llvm::concat<Operation *const>(
                                          groups[a].ops, groups[b].ops),
                                      isFoldableLayoutOp);
      queue.push(candidate);
      // Sibling matmuls may still pay more as a dual GEMM with a reader.
      if (!matmulsOnly)
        return;
    }
    // A kernel reading the products of two sibling matmuls (one lhs) may
    // join them only as a dual GEMM: found from a matmul and the reader too,
    // for a reader formed after the matmuls met (q's and k's ropes).
    for (auto [matmul, reader] : {std::pair{a, b}, std::pair{b, a}}) {
      if (!isMatmulGroup(matmul) || isMatmulGroup(reader))
        continue;
      for (unsigned c : neighbors(reader)) {
        if (c == matmul || !isMatmulGroup(c))
          continue;
        proposeTriple(a, b, c);
      }
    }
    // Two sibling matmuls (one lhs) may pay more with the op reading both
    // products (a dual GEMM saves its SwiGLU kernel) than alone (a batched
    // call saves a launch), or pay only so.
    if (!isMatmulGroup(a) || !isMatmulGroup(b))
      return;
    llvm::SmallSetVector<unsigned, 8> ofB = neighbors(b);
    for (unsigned c : neighbors(a)) {
      if (c == b || !ofB.contains(c))
        continue;
      proposeTriple(a, b, c);
    }
  }

  /// Proposes merging `a`, `b` and `c` at once, if that saves time.
  void proposeTriple(unsigned a, unsigned b, unsigned c) {
    std::optional<double> triple = savingOf({a, b, c});
    if (!triple || *triple < kMinSavingSeconds)
      return;
    Candidate candidate{
        *triple,          a, b, groups[a].version, groups[b].version, c,
        groups[c].version};
    candidate.deferred =
        isMatmulsOnly(a) && isMatmulsOnly(b) && isMatmulsOnly(c);
    queue.push(candidate);
  }

  /// Starts a group of `seed`, one kernel, unless it cannot run as one
  /// (then its ops run unfused; codegen says why, if it cannot).
  void seedGroup(ArrayRef<Operation *> seed) {
    FailureOr<KernelAnalysis> single = analyzeKernel(seed, target);
    if (failed(single))
      return;
    Group group;
    for (Operation *member : seed) {
      groupOf[member] = groups.size();
      group.ops.push_back(member);
    }
    group.timeSeconds = single->timeSeconds;
    secondsBefore += group.timeSeconds;
    groups.push_back(std::move(group));
  }

  /// A group of matmuls alone (a batched cuBLASLt call when merged).
  bool isMatmulsOnly(unsigned id) {
    return llvm::all_of(groups[id].ops, llvm::IsaPred<MatmulOp>);
  }

  bool isMatmulGroup(unsigned id) {
    return llvm::any_of(groups[id].ops,
                        [](Operation *op) { return isa<MatmulOp>(op); });
  }

  void merge(unsigned a, unsigned b, std::optional<unsigned> c) {
    merge(a, b);
    if (c)
      merge(a, *c);
  }

  void merge(unsigned a, unsigned b) {
    if (memory)
      memory->apply(memory->plan(kernelOf({a, b})));
    Group &into = groups[a], &from = groups[b];
    SmallVector<Operation *> ops(into.ops);
    ops.append(from.ops.begin(), from.ops.end());
    into.ops = withViewsBetween(ops);
    for (Operation *op : into.ops)
      groupOf[op] = a;
    from.alive = false;
    from.ops.clear();
    into.timeSeconds = analyzeKernel(into.ops, target)->timeSeconds;
    ++into.version;
    for (unsigned neighbor : neighbors(a))
      propose(std::min(a, neighbor), std::max(a, neighbor));
  }

  FusionCounts materialize() {
    FusionCounts counts;
    for (Group &group : groups) {
      if (!group.alive || group.ops.size() < 2)
        continue;
      // A layout step nothing took (no kernel of its own) stays as its ops.
      FailureOr<KernelAnalysis> kernel = analyzeKernel(group.ops, target);
      if (failed(kernel))
        continue;
      outlineKernel(*kernel);
      counts.opsFused += group.ops.size();
      ++counts.kernelsFormed;
    }
    // Users of an early result placed between the fused ops now precede
    // the fusion; restore dominance, keeping the order otherwise.
    if (counts.kernelsFormed)
      restoreDominance(block);
    return counts;
  }

  /// Moves each op that reads a result defined after it to just after the
  /// op defining it (in program order among the ops so moved), every other
  /// op keeping its place. Not sortTopologically: its passes move such an
  /// op after every op that was ready, to the end of the block, which in a
  /// backward pass keeps the activation it reads alive to the end of the
  /// step (the memory plan memwall-remat made assumed the order it saw).
  static void restoreDominance(Block &block) {
    SmallVector<Operation *> order;
    llvm::DenseSet<Operation *> emitted;
    llvm::DenseMap<Operation *, SmallVector<Operation *>> waiting;
    // The op of this block defining a value `op` (or an op nested in it)
    // reads that is not emitted yet, if any.
    auto pendingDefinition = [&](Operation *op) -> Operation * {
      Operation *pending = nullptr;
      op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands()) {
          Operation *def = operand.getDefiningOp();
          if (!def)
            continue;
          def = block.findAncestorOpInBlock(*def);
          if (def && def != op && !emitted.contains(def)) {
            pending = def;
            return WalkResult::interrupt();
          }
        }
        return WalkResult::advance();
      });
      return pending;
    };
    // Depth first without recursion: an op, then the ops it released (in
    // their order, each followed by those it releases in turn).
    auto place = [&](Operation *first) {
      SmallVector<Operation *> stack{first};
      while (!stack.empty()) {
        Operation *op = stack.pop_back_val();
        if (Operation *def = pendingDefinition(op)) {
          waiting[def].push_back(op);
          continue;
        }
        order.push_back(op);
        emitted.insert(op);
        auto released = waiting.find(op);
        if (released == waiting.end())
          continue;
        SmallVector<Operation *> ready = std::move(released->second);
        waiting.erase(released);
        stack.append(ready.rbegin(), ready.rend());
      }
    };
    for (Operation &op : block.without_terminator())
      place(&op);
    assert(waiting.empty() && "the block had a use before its definition "
                              "that fusion did not create (a cycle)");
    Operation *terminator = block.getTerminator();
    for (Operation *op : order)
      op->moveBefore(terminator);
  }

  Block &block;
  const GPUTarget &target;
  StepMemory *memory;
  unsigned mergesKeptForMemory = 0;
  llvm::DenseMap<Operation *, unsigned> positions;
  llvm::DenseMap<Operation *, unsigned> groupOf;
  std::vector<Group> groups;
  std::priority_queue<Candidate> queue;
  /// Predicted time of the ops as single kernels.
  double secondsBefore = 0;
};

} // namespace

//===----------------------------------------------------------------------===//
// Views per reader
//===----------------------------------------------------------------------===//
//
// A view (reshape, transpose, slice) costs nothing where its reader indexes
// it, so a view read by several ops is copied per reader: each copy may fold
// into its own reader (the forward's attention and its backward both read q
// through the packed QKV projection's slice, heads split and transpose),
// and copies no kernel took are merged back after fusion. Markers (the
// index of the original a copy copies) live only while memwall-fuse runs.

/// Puts `reader`'s phase on `op` (none where the reader has none).
static void setPhaseOf(Operation *reader, Operation *op) {
  if (Attribute phase = reader->getAttr(MemWallDialect::kPhaseAttrName))
    op->setAttr(MemWallDialect::kPhaseAttrName, phase);
  else
    op->removeAttr(MemWallDialect::kPhaseAttrName);
}

/// Whether `reader` may index a view instead of reading it materialized: an
/// attention, its backward or a rope, or a view only such ops read. (Not
/// the views that read attention's output back: the forward writes it
/// through its heads merge, which copies would give a second reader.)
static bool readsThroughViews(Block &block, Operation *reader) {
  if (isa<FlashAttentionOp, FlashAttentionGradOp, RopeOp>(reader))
    return true;
  if (!isViewOp(reader) || reader->hasAttr(kOutputViewAttr))
    return false;
  return llvm::all_of(reader->getUsers(), [&](Operation *user) {
    Operation *next = block.findAncestorOpInBlock(*user);
    return next && readsThroughViews(block, next);
  });
}

/// Gives each matmul of `block` reading a dequantize at use as its rhs
/// (a frozen NF4 weight read by the forward GEMM and the backward's input
/// gradient) its own copy, with the dequantize of its scales, placed just
/// before it: each GEMM dequantizes the tiles it loads, since nothing holds
/// the dequantized weight (and a copy made a dequantize kernel writes it
/// just before its GEMM, not in the forward for the backward). Returns
/// whether it copied any.
static bool dequantizePerMatmul(Block &block) {
  SmallVector<DequantizeOp> shared;
  for (auto dequantize : block.getOps<DequantizeOp>())
    if (!dequantize.getResult().hasOneUse() && isDequantizeAtUse(dequantize) &&
        llvm::all_of(dequantize->getUses(), [&](OpOperand &use) {
          auto matmul = dyn_cast<MatmulOp>(use.getOwner());
          return matmul && matmul->getBlock() == &block &&
                 use.getOperandNumber() == 1;
        }))
      shared.push_back(dequantize);
  for (DequantizeOp dequantize : shared) {
    DequantizeOp scales = getScalesPrologue(dequantize);
    SmallVector<OpOperand *> uses = llvm::map_to_vector(
        dequantize->getUses(), [](OpOperand &use) { return &use; });
    for (OpOperand *use : uses) {
      OpBuilder builder(use->getOwner());
      IRMapping mapping;
      SmallVector<Operation *, 2> copies;
      if (scales)
        copies.push_back(builder.clone(*scales, mapping));
      copies.push_back(builder.clone(*dequantize, mapping));
      // The copies run in their GEMM's phase (forward or backward).
      for (Operation *copy : copies)
        if (Attribute phase =
                use->getOwner()->getAttr(MemWallDialect::kPhaseAttrName))
          copy->setAttr(MemWallDialect::kPhaseAttrName, phase);
      use->set(copies.back()->getResult(0));
    }
    dequantize.erase();
    if (scales)
      scales.erase();
  }
  return !shared.empty();
}

/// Where a weight-only quantized GEMM dequantizes (memwall-fuse's
/// `dequantize` option).
enum class DequantizePolicy { Auto, Prologue, Kernel };

/// Marks `materialize` each dequantize at use of `block` whose GEMM is
/// predicted slower dequantizing it in its main loop than a dequantize
/// kernel writing the weight and the GEMM reading that together (or cannot
/// dequantize it at all): each CTA row of tiles dequantizes the whole
/// weight it reads, so at many rows writing it once wins, as bitsandbytes
/// runs QLoRA's layers and vLLM large batches of AWQ weights. `policy`
/// Prologue or Kernel forces one way wherever it can run. Returns how many
/// it marked.
static unsigned chooseDequantizeKernels(Block &block, const GPUTarget &target,
                                        DequantizePolicy policy) {
  unsigned chosen = 0;
  for (auto matmul : block.getOps<MatmulOp>()) {
    DequantizeOp dequantize = getRhsPrologue(matmul);
    if (!dequantize || !isDequantizeAtUse(dequantize))
      continue;
    SmallVector<Operation *, 3> inMainLoop = getDequantizeKernelOps(dequantize);
    inMainLoop.push_back(matmul);
    FailureOr<KernelAnalysis> prologue = analyzeKernel(inMainLoop, target);
    dequantize.setMaterialize(true);
    FailureOr<KernelAnalysis> kernel =
        analyzeKernel(getDequantizeKernelOps(dequantize), target);
    FailureOr<KernelAnalysis> gemm = analyzeKernel({matmul}, target);
    bool kernelWins =
        succeeded(kernel) && succeeded(gemm) &&
        (failed(prologue) || policy == DequantizePolicy::Kernel ||
         (policy == DequantizePolicy::Auto &&
          kernel->timeSeconds + gemm->timeSeconds < prologue->timeSeconds));
    if (kernelWins) {
      ++chosen;
      continue;
    }
    dequantize.setMaterialize(false);
  }
  return chosen;
}

/// Copies each view read by several ops of `block`, some of which index
/// views (readsThroughViews), before each of those (with its phase; the
/// first keeps the original where all do), copying the views it reads in
/// turn. Returns whether it copied any.
static bool copyViewsPerReader(Block &block) {
  SmallVector<Operation *> views;
  for (Operation &op : block.without_terminator())
    if (isViewOp(&op))
      views.push_back(&op);
  Builder builder(block.getParent()->getContext());
  bool copied = false;
  // Last first: a copy's input view gains a reader, copied in its turn.
  for (auto [index, view] : llvm::enumerate(llvm::reverse(views))) {
    Value result = view->getResult(0);
    llvm::SetVector<Operation *> readers;
    for (Operation *user : result.getUsers())
      if (Operation *reader = block.findAncestorOpInBlock(*user))
        readers.insert(reader);
    if (readers.size() < 2)
      continue;
    SmallVector<Operation *> ordered = readers.takeVector();
    llvm::sort(ordered, [](Operation *x, Operation *y) {
      return x->isBeforeInBlock(y);
    });
    SmallVector<Operation *> indexing;
    for (Operation *reader : ordered)
      if (readsThroughViews(block, reader))
        indexing.push_back(reader);
    if (indexing.empty())
      continue;
    if (indexing.size() == ordered.size())
      indexing.erase(indexing.begin());
    view->setAttr(kViewCopyAttr, builder.getI64IntegerAttr(index));
    for (Operation *reader : indexing) {
      OpBuilder atReader(reader);
      Operation *copy = atReader.clone(*view);
      setPhaseOf(reader, copy);
      copy->setAttr(kViewCopiedAttr, builder.getUnitAttr());
      result.replaceUsesWithIf(copy->getResult(0), [&](OpOperand &use) {
        return block.findAncestorOpInBlock(*use.getOwner()) == reader;
      });
      copied = true;
    }
  }
  return copied;
}

/// Makes attention's backward read the forward's output through the heads
/// merge that takes it to the output projection ([B, S, H·D] reshaped to
/// [B, S, H, D] and transposed back to [B, H, S, D]), so that the forward
/// kernel writes its output heads-merged only, and the backward kernel
/// reads it through those views.
static bool readOutputsThroughHeadsMerges(Block &block) {
  bool rewritten = false;
  for (auto attention : block.getOps<FlashAttentionOp>()) {
    // The output's readers: one heads merge and backwards reading it as
    // their `out` only.
    Value output = attention.getResult();
    TransposeOp merge;
    SmallVector<FlashAttentionGradOp> grads;
    bool others = false;
    for (Operation *user : output.getUsers()) {
      if (auto grad = dyn_cast<FlashAttentionGradOp>(user);
          grad && grad.getOut() == output && grad.getQuery() != output &&
          grad.getKey() != output && grad.getValue() != output &&
          grad.getGrad() != output) {
        grads.push_back(grad);
        continue;
      }
      auto transpose = dyn_cast<TransposeOp>(user);
      others |= !transpose || merge || getGemmHeadsMergeOps(transpose).empty();
      merge = transpose;
    }
    if (others || !merge || grads.empty())
      continue;
    auto mergeReshape = cast<ReshapeOp>(*merge->getUsers().begin());
    ArrayRef<int64_t> permutation = merge.getPermutation();
    SmallVector<int64_t> inverse(permutation.size());
    for (auto [i, dim] : llvm::enumerate(permutation))
      inverse[dim] = i;
    for (FlashAttentionGradOp grad : grads) {
      OpBuilder builder(grad);
      auto split = ReshapeOp::create(
          builder, mergeReshape.getLoc(), mergeReshape.getResult(),
          builder.getDenseI64ArrayAttr(merge.getType().getShape()));
      auto back =
          TransposeOp::create(builder, merge.getLoc(), split.getResult(),
                              builder.getDenseI64ArrayAttr(inverse));
      for (Operation *op : {split.getOperation(), back.getOperation()}) {
        setPhaseOf(grad, op);
        op->setAttr(kOutputViewAttr, builder.getUnitAttr());
      }
      grad.getOutMutable().assign(back.getResult());
      rewritten = true;
    }
  }
  return rewritten;
}

/// Undoes the copies and output views no kernel took: a copy becomes the
/// earliest copy of its original left in `block`, and attention's output
/// read back through its heads merge becomes the output where the forward
/// still computes it as it is. Of the copies kernels took, all but one are
/// marked memwall.added_view (none where one is left in `block`), and so
/// are the output views they took, so that the unfused figures count each
/// view once. Then drops the markers.
static void mergeUnusedViewCopies(Block &block) {
  DenseMap<int64_t, Operation *> kept;
  for (Operation &op : llvm::make_early_inc_range(block.without_terminator())) {
    if (auto back = dyn_cast<TransposeOp>(op);
        back && back->hasAttr(kOutputViewAttr)) {
      auto split = back.getInput().getDefiningOp<ReshapeOp>();
      auto mergeReshape =
          split ? split.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
      auto merge = mergeReshape
                       ? mergeReshape.getInput().getDefiningOp<TransposeOp>()
                       : TransposeOp();
      if (merge && merge.getInput().getDefiningOp<FlashAttentionOp>() &&
          merge.getInput().getType() == back.getType()) {
        back.getResult().replaceAllUsesWith(merge.getInput());
        back.erase();
        if (split.use_empty())
          split.erase();
        continue;
      }
    }
    auto index = op.getAttrOfType<IntegerAttr>(kViewCopyAttr);
    if (!index)
      continue;
    auto [it, first] = kept.try_emplace(index.getInt(), &op);
    if (first)
      continue;
    // Every copy computes the same value; the earliest precedes the rest.
    op.getResult(0).replaceAllUsesWith(it->second->getResult(0));
    op.erase();
  }
  UnitAttr unit = UnitAttr::get(block.getParent()->getContext());
  block.walk([&](Operation *op) {
    bool inKernel = op->getBlock() != &block;
    auto index = op->getAttrOfType<IntegerAttr>(kViewCopyAttr);
    if (inKernel && ((index && !kept.try_emplace(index.getInt(), op).second) ||
                     op->hasAttr(kOutputViewAttr)))
      op->setAttr(MemWallDialect::kAddedViewAttrName, unit);
    op->removeAttr(kViewCopyAttr);
    op->removeAttr(kViewCopiedAttr);
    op->removeAttr(kOutputViewAttr);
  });
}

/// Fuses the ops of `function` into memwall.fusion kernels and marks it
/// memwall.fused.
static FusionCounts fuseFunction(FunctionOpInterface function,
                                 const GPUTarget &target,
                                 const MemoryLiveness &liveness) {
  FusionCounts total;
  if (function.isExternal())
    return total;
  for (Block &block : function.getFunctionBody()) {
    // The memory simulation's steps are the entry block's ops.
    std::optional<StepMemory> memory;
    if (&block == &function.getFunctionBody().front() &&
        liveness.getFunction() == function.getOperation())
      memory.emplace(liveness);
    FusionCounts counts =
        BlockFuser(block, target, memory ? &*memory : nullptr).run();
    total.kernelsFormed += counts.kernelsFormed;
    total.opsFused += counts.opsFused;
    total.mergesKeptForMemory += counts.mergesKeptForMemory;
    total.predictedSecondsSaved += counts.predictedSecondsSaved;
  }
  function->setAttr(MemWallDialect::kFusedAttrName,
                    UnitAttr::get(function->getContext()));
  return total;
}

namespace {
struct FusePass : public memwall::impl::FuseBase<FusePass> {
  using FuseBase::FuseBase;

  void runOnOperation() override {
    FailureOr<GPUTarget> target = getTargetOf(getOperation());
    if (failed(target))
      return signalPassFailure();
    std::optional<DequantizePolicy> policy =
        llvm::StringSwitch<std::optional<DequantizePolicy>>(dequantize)
            .Case("auto", DequantizePolicy::Auto)
            .Case("prologue", DequantizePolicy::Prologue)
            .Case("kernel", DequantizePolicy::Kernel)
            .Default(std::nullopt);
    if (!policy) {
      getOperation().emitError("memwall-fuse: dequantize='")
          << dequantize << "' must be auto, prologue or kernel";
      return signalPassFailure();
    }
    // Transposes that move no element become reshapes: views, not kernels.
    RewritePatternSet patterns(&getContext());
    TransposeOp::getCanonicalizationPatterns(patterns, &getContext());
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    // Views per reader, unless the copies would raise the unfused peak
    // (a slice's source kept for a later reader).
    std::optional<MemoryLiveness> liveness;
    liveness.emplace(getOperation());
    double peak = StepMemory(*liveness).getLimit();
    bool copied = false;
    for (Block &block : getOperation().getFunctionBody()) {
      copied |= readOutputsThroughHeadsMerges(block);
      copied |= copyViewsPerReader(block);
      copied |= dequantizePerMatmul(block);
    }
    if (copied) {
      // Computed after the rewrites (the transposes they made views hold no
      // bytes), not taken from the cache.
      liveness.emplace(getOperation());
      if (StepMemory(*liveness).getLimit() > peak) {
        for (Block &block : getOperation().getFunctionBody())
          mergeUnusedViewCopies(block);
        liveness.emplace(getOperation());
      }
    }
    unsigned dequantizeKernels = 0;
    for (Block &block : getOperation().getFunctionBody())
      dequantizeKernels += chooseDequantizeKernels(block, *target, *policy);
    // The dequantized weights are buffers now.
    if (dequantizeKernels)
      liveness.emplace(getOperation());
    numDequantizeKernels += dequantizeKernels;
    FusionCounts counts = fuseFunction(getOperation(), *target, *liveness);
    for (Block &block : getOperation().getFunctionBody())
      mergeUnusedViewCopies(block);
    numKernelsFormed += counts.kernelsFormed;
    numMergesKeptForMemory += counts.mergesKeptForMemory;
    numOpsFused += counts.opsFused;
    predictedNanosecondsSaved +=
        std::llround(std::max(0.0, counts.predictedSecondsSaved) * 1e9);
  }
};
} // namespace
