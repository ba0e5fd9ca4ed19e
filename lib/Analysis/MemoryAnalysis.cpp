//===- MemoryAnalysis.cpp - liveness-simulated device memory --------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/MemoryAnalysis.h"

#include "memwall/Support/ByteSize.h"

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace memwall;

llvm::StringRef memwall::stringifyOffloadPolicy(OffloadPolicy policy) {
  switch (policy) {
  case OffloadPolicy::None:
    return "none";
  case OffloadPolicy::Optimizer:
    return "optimizer";
  case OffloadPolicy::Params:
    return "params";
  }
  return "none";
}

std::optional<OffloadPolicy>
memwall::symbolizeOffloadPolicy(llvm::StringRef name) {
  for (OffloadPolicy policy :
       {OffloadPolicy::None, OffloadPolicy::Optimizer, OffloadPolicy::Params})
    if (name == stringifyOffloadPolicy(policy))
      return policy;
  return std::nullopt;
}

llvm::Error memwall::validateShardingOptions(const ShardingOptions &options) {
  if (options.devices < 1)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "devices must be >= 1, got " +
                                       std::to_string(options.devices));
  if (options.zeroStage < 0 || options.zeroStage > 3)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "zero stage must be 0, 1, 2 or 3 (FSDP full-shard is 3), got " +
            std::to_string(options.zeroStage));
  return llvm::Error::success();
}

llvm::Expected<MemoryOptions>
memwall::parseMemoryOptions(llvm::StringRef budget, int64_t devices,
                            int zeroStage, llvm::StringRef offload) {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   message.str());
  };
  MemoryOptions options;
  if (!budget.empty()) {
    llvm::Expected<int64_t> bytes = parseByteSize(budget);
    if (!bytes)
      return fail("--budget: " + llvm::toString(bytes.takeError()));
    options.budgetBytes = *bytes;
  }
  std::optional<OffloadPolicy> policy = symbolizeOffloadPolicy(offload);
  if (!policy)
    return fail("--offload: unknown policy '" + offload +
                "' (expected none, optimizer or params)");
  options.sharding.devices = devices;
  options.sharding.zeroStage = zeroStage;
  options.sharding.offload = *policy;
  if (llvm::Error error = validateShardingOptions(options.sharding))
    return std::move(error);
  return options;
}

func::FuncOp memwall::getMainFunction(ModuleOp module) {
  for (auto function : module.getOps<func::FuncOp>())
    if (!function.isExternal())
      return function;
  return {};
}

namespace {

/// A cast to fp8 for GEMMs only (fp8-mixed) whose input something else
/// reads too: Transformer Engine keeps that bf16 value for the backward and
/// quantizes inside the GEMM, so the fp8 copy holds no memory of its own.
/// When only such casts read the input, the fp8 copy is what is saved
/// instead (its own buffer, half the bytes). A K-major copy (the cast's
/// transpose, which memwall-precision adds for an operand stored the other
/// way) is the same cast-transpose quantized in the GEMM.
bool isQuantizeInGemm(CastOp cast) {
  Type from = cast.getInput().getType().getElementType();
  Type to = cast.getElementType();
  if (!isa<Float8E4M3FNType, Float8E5M2Type>(to) || !isa<FloatType>(from) ||
      from.getIntOrFloatBitWidth() <= 8)
    return false;
  // The backward reads the fp8 copy through dequantize-at-use casts.
  std::function<bool(Value)> gemmOnly = [&](Value value) {
    return llvm::all_of(value.getUsers(), [&](Operation *user) {
      auto widen = dyn_cast<CastOp>(user);
      if (auto transpose = dyn_cast<TransposeOp>(user))
        return gemmOnly(transpose.getResult());
      return isa<MatmulOp>(user) || (widen && isDequantizeAtUse(widen));
    });
  };
  if (!gemmOnly(cast.getResult()))
    return false;
  // Whether the buffer (through views) is read only to be quantized for
  // GEMMs: then the fp8 copy replaces it.
  std::function<bool(Value)> onlyQuantized = [&](Value value) {
    return llvm::all_of(value.getUsers(), [&](Operation *user) {
      if (auto view = dyn_cast<ReshapeOp>(user))
        return onlyQuantized(view.getResult());
      auto other = dyn_cast<CastOp>(user);
      return other && other.getElementType() == to && gemmOnly(other);
    });
  };
  Value root = cast.getInput();
  while (auto view = root.getDefiningOp<ReshapeOp>())
    root = view.getInput();
  return !onlyQuantized(root);
}

/// Results that reuse an operand's buffer: views, in-place updates and
/// dequantize-at-use casts (AliasingOpInterface), casts that quantize
/// inside a GEMM, and elementwise kernels writing over an operand that dies
/// there (getReusedOperand).
Value aliasedOperand(OpResult result) {
  Operation *op = result.getOwner();
  if (auto cast = dyn_cast<CastOp>(op); cast && isQuantizeInGemm(cast))
    return cast.getInput();
  if (auto transpose = dyn_cast<TransposeOp>(op))
    if (auto cast = transpose.getInput().getDefiningOp<CastOp>();
        cast && isQuantizeInGemm(cast))
      return transpose.getInput();
  if (auto aliasing = dyn_cast<AliasingOpInterface>(op))
    if (Value aliased = aliasing.getAliasedOperand(result.getResultNumber()))
      return aliased;
  return getReusedOperand(result);
}

/// `bytes` scaled by `factor`, rounded: a count again, or overflowed.
CheckedInt scaleBytes(CheckedInt bytes, double factor) {
  std::optional<int64_t> count = bytes.get();
  if (!count)
    return bytes;
  return CheckedInt::fromDouble(std::round(*count * factor));
}

} // namespace

MemoryLiveness::MemoryLiveness(Operation *op) {
  function = dyn_cast<func::FuncOp>(op);
  if (auto module = dyn_cast<ModuleOp>(op))
    function = getMainFunction(module);
  if (!function || function.isExternal())
    return;
  if (auto module = function->getParentOfType<ModuleOp>())
    if (auto attr = module->getAttrOfType<StringAttr>(
            MemWallDialect::kPrecisionAttrName))
      precision = attr.getValue().str();

  Block &body = function.getBody().front();
  for (Operation &op : body.without_terminator())
    steps.push_back(&op);
  int64_t lastStep = std::max<int64_t>(steps.size() - 1, 0);
  for (Operation *step : steps) {
    stepLocs.push_back(formatLocationForReport(step->getLoc()));
    stepPhases.push_back(getPhaseOf(step).str());
    auto cost = dyn_cast<CostOpInterface>(step);
    workspace.push_back(cost ? cost.getWorkspaceBytes() : 0);
    // An untiled attention's scores grow with the context squared.
    workspaceScalesWithContext.push_back(
        isa<AttentionOp, AttentionGradOp>(step));
  }

  // Weight gradients: what the optimizer consumes or the function returns
  // from the backward, and the backward adds that accumulate into them.
  llvm::DenseSet<Value> weightGrads;
  SmallVector<Value> worklist;
  for (Operation *op : steps)
    for (AdamWOp adam : getOptimizerUpdates(op))
      worklist.push_back(getValueOutsideFusions(adam.getGrad()));
  for (Value v : body.getTerminator()->getOperands())
    if (Operation *def = v.getDefiningOp();
        def && getPhaseOf(def) == "backward")
      worklist.push_back(v);
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (!weightGrads.insert(v).second)
      continue;
    Operation *def = v.getDefiningOp();
    if (def && isa<AddOp, CastOp, ReshapeOp>(def) &&
        getPhaseOf(def) == "backward")
      llvm::append_range(worklist, def->getOperands());
  }

  llvm::MapVector<Value, LiveBuffer> live; // keyed by the root value
  DenseMap<Value, Value> rootOf;
  auto root = [&](Value v) {
    auto it = rootOf.find(v);
    return it == rootOf.end() ? v : it->second;
  };
  for (BlockArgument arg : function.getArguments()) {
    LiveBuffer buffer;
    buffer.root = arg;
    buffer.bytes = getTensorByteSize(arg.getType());
    bool persistent = true;
    switch (getArgKind(function, arg.getArgNumber())) {
    case ArgKind::Weight:
      buffer.bucket = MemoryBucket::Weights;
      largestWeight = std::max(largestWeight, buffer.bytes);
      break;
    case ArgKind::OptimizerState:
      buffer.bucket = MemoryBucket::Optimizer;
      break;
    case ArgKind::KVCache:
      buffer.bucket = MemoryBucket::KVCache;
      break;
    case ArgKind::Input:
      buffer.bucket = MemoryBucket::Activations;
      persistent = false;
      break;
    }
    buffer.firstStep = 0;
    buffer.lastStep = persistent ? lastStep : 0;
    live[arg] = buffer;
  }
  for (auto [i, op] : llvm::enumerate(steps)) {
    StringRef phase = getPhaseOf(op);
    if (phase != "forward" && backwardStart < 0)
      backwardStart = i;
    // Uses extend the lifetime of the buffers they read.
    for (Value operand : op->getOperands()) {
      auto it = live.find(root(operand));
      if (it != live.end())
        it->second.lastStep = std::max<int64_t>(it->second.lastStep, i);
    }
    for (OpResult result : op->getResults()) {
      int64_t bytes = getTensorByteSize(result.getType());
      if (Value alias = aliasedOperand(result)) {
        Value r = root(alias);
        rootOf[result] = r;
        LiveBuffer &buffer = live[r];
        // A cast or dequantize in a GEMM keeps its input's bytes (the wide
        // copy is in registers or shared memory); a growing cache or view
        // takes the larger size.
        if (!isa<CastOp, DequantizeOp>(op))
          buffer.bytes = std::max(buffer.bytes, bytes);
        buffer.lastStep = std::max<int64_t>(buffer.lastStep, i);
        continue;
      }
      LiveBuffer buffer;
      buffer.root = result;
      buffer.bytes = bytes;
      buffer.firstStep = buffer.lastStep = i;
      if (phase == "forward")
        buffer.bucket = MemoryBucket::Activations;
      else if (weightGrads.contains(result))
        buffer.bucket = MemoryBucket::Gradients;
      else
        buffer.bucket = MemoryBucket::Workspace;
      live[result] = buffer;
    }
  }
  // Results live to the end of the step.
  for (Value v : body.getTerminator()->getOperands()) {
    auto it = live.find(root(v));
    if (it != live.end())
      it->second.lastStep = lastStep;
  }
  for (auto &entry : live) {
    bufferIndex[entry.first] = buffers.size();
    buffers.push_back(entry.second);
  }
  for (auto [value, rootValue] : rootOf)
    if (std::optional<unsigned> i = getBufferIndex(rootValue))
      bufferIndex[value] = *i;
}

StepMemory::StepMemory(const MemoryLiveness &liveness) : liveness(liveness) {
  for (auto [step, op] : llvm::enumerate(liveness.getSteps()))
    stepOf[op] = step;
  live.assign(liveness.getSteps().size(), 0);
  empty.assign(live.size(), false);
  for (const LiveBuffer &buffer : liveness.getBuffers()) {
    intervals.push_back({buffer.firstStep, buffer.lastStep});
    add(buffer.bytes, buffer.firstStep, buffer.lastStep);
  }
  for (double bytes : live)
    limit = std::max(limit, bytes);
  ceiling.assign(live.size(), limit);
}

/// Whether every read of `value`, and of the views and in-place updates of
/// its buffer, is by `members`; a value nothing reads is still written.
static bool readOnlyBy(Value value, const MemoryLiveness &liveness,
                       const llvm::SmallPtrSetImpl<Operation *> &members) {
  if (value.use_empty())
    return false;
  std::optional<unsigned> buffer = liveness.getBufferIndex(value);
  return llvm::all_of(value.getUsers(), [&](Operation *user) {
    if (!members.contains(user))
      return false;
    return llvm::all_of(user->getResults(), [&](Value result) {
      return liveness.getBufferIndex(result) != buffer ||
             readOnlyBy(result, liveness, members);
    });
  });
}

StepMemory::Merge StepMemory::plan(ArrayRef<Operation *> ops) const {
  Merge merge;
  for (Operation *op : ops)
    merge.step = std::max(merge.step, stepOf.lookup(op));
  int64_t at = merge.step;
  for (Operation *op : ops)
    if (int64_t step = stepOf.lookup(op); step < at)
      merge.emptied.push_back(step);
  llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
  llvm::MapVector<unsigned, std::pair<int64_t, int64_t>> next;
  auto interval = [&](unsigned i) {
    auto it = next.find(i);
    return it != next.end() ? it->second : intervals[i];
  };
  auto readAt = [&](unsigned i) {
    auto [first, last] = interval(i);
    if (first <= last) // a buffer the kernel no longer allocates stays so
      next[i] = {first, std::max(last, at)};
  };
  for (Operation *op : ops) {
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && members.contains(def))
        continue;
      if (std::optional<unsigned> i = liveness.getBufferIndex(operand))
        readAt(*i);
    }
    for (Value result : op->getResults()) {
      std::optional<unsigned> i = liveness.getBufferIndex(result);
      if (!i)
        continue;
      // A view or in-place update uses the buffer of what it updates.
      if (liveness.getBuffers()[*i].root != result) {
        readAt(*i);
        continue;
      }
      if (readOnlyBy(result, liveness, members)) {
        next[*i] = {1, 0};
        continue;
      }
      auto [first, last] = interval(*i);
      next[*i] = {std::max(first, at), std::max(last, at)};
    }
  }
  for (auto [i, range] : next)
    merge.changes.push_back({i, range.first, range.second});
  return merge;
}

double StepMemory::peakWith(const Merge &merge) const {
  std::vector<double> delta(live.size() + 1, 0);
  auto mark = [&](double bytes, int64_t first, int64_t last) {
    first = std::max<int64_t>(first, 0);
    last = std::min<int64_t>(last, static_cast<int64_t>(live.size()) - 1);
    if (first > last)
      return;
    delta[first] += bytes;
    delta[last + 1] -= bytes;
  };
  for (const Merge::Change &change : merge.changes) {
    double bytes = liveness.getBuffers()[change.buffer].bytes;
    auto [first, last] = intervals[change.buffer];
    mark(-bytes, first, last);
    mark(bytes, change.first, change.last);
  }
  // The kernel holds its inputs and outputs at its own step, as any kernel
  // does (a fused kernel's step may stand above the limit: its ceiling); a
  // merge adds the buffers it carries across the kernels before it.
  double peak = 0, running = 0;
  for (size_t s = 0; s < live.size(); ++s) {
    running += delta[s];
    if (empty[s] || static_cast<int64_t>(s) == merge.step ||
        llvm::is_contained(merge.emptied, static_cast<int64_t>(s)))
      continue;
    double bytes = live[s] + running;
    if (running > 0 && bytes > ceiling[s])
      peak = std::max(peak, limit + (bytes - ceiling[s]));
    else
      peak = std::max(peak, std::min(bytes, limit));
  }
  return peak;
}

void StepMemory::apply(const Merge &merge) {
  for (const Merge::Change &change : merge.changes) {
    double bytes = liveness.getBuffers()[change.buffer].bytes;
    auto &[first, last] = intervals[change.buffer];
    add(-bytes, first, last);
    add(bytes, change.first, change.last);
    first = change.first;
    last = change.last;
  }
  for (int64_t step : merge.emptied)
    empty[step] = true;
  ceiling[merge.step] = std::max(ceiling[merge.step], live[merge.step]);
}

void StepMemory::add(double bytes, int64_t first, int64_t last) {
  for (int64_t s = std::max<int64_t>(first, 0);
       s <= std::min<int64_t>(last, static_cast<int64_t>(live.size()) - 1); ++s)
    live[s] += bytes;
}

MemorySummary MemoryLiveness::simulate(const ShardingOptions &sharding,
                                       const MemoryScaling &scaling) const {
  MemorySummary summary;
  summary.devices = sharding.devices;
  summary.zeroStage = sharding.zeroStage;
  summary.offload = stringifyOffloadPolicy(sharding.offload).str();
  summary.precision = precision;
  int64_t numSteps = steps.size();

  // Per-device accounting of the model states.
  std::array<double, kNumMemoryBuckets> factor = scaling.factor;
  double n = static_cast<double>(sharding.devices);
  auto scale = [&](MemoryBucket b, double f) {
    factor[static_cast<unsigned>(b)] *= f;
  };
  if (sharding.zeroStage >= 1)
    scale(MemoryBucket::Optimizer, 1 / n);
  if (sharding.zeroStage >= 2)
    scale(MemoryBucket::Gradients, 1 / n);
  if (sharding.zeroStage >= 3)
    scale(MemoryBucket::Weights, 1 / n);
  if (sharding.offload != OffloadPolicy::None)
    scale(MemoryBucket::Optimizer, 0);
  if (sharding.offload == OffloadPolicy::Params)
    scale(MemoryBucket::Weights, 0);
  // Sharded or offloaded weights are gathered one at a time into a working
  // set: the weight in use and the one being prefetched.
  CheckedInt gatherBytes = 0;
  if ((sharding.zeroStage >= 3 && sharding.devices > 1) ||
      sharding.offload == OffloadPolicy::Params)
    gatherBytes = scaleBytes(
        CheckedInt::fromSaturated(largestWeight),
        2 * scaling.factor[static_cast<unsigned>(MemoryBucket::Weights)]);

  // Sweep: difference arrays per bucket. Sums are checked: a bucket that
  // does not fit int64 stays uncountable (kUncountable, over any budget)
  // from that step on rather than wrapping to a small number.
  using CheckedBuckets = std::array<CheckedInt, kNumMemoryBuckets>;
  std::vector<CheckedBuckets> delta(numSteps + 1, CheckedBuckets{});
  for (auto [index, buffer] : llvm::enumerate(buffers)) {
    unsigned b = static_cast<unsigned>(buffer.bucket);
    double perBuffer =
        index < scaling.bufferFactor.size() ? scaling.bufferFactor[index] : 1.0;
    CheckedInt bytes = scaleBytes(CheckedInt::fromSaturated(buffer.bytes),
                                  factor[b] * perBuffer);
    if (numSteps == 0)
      continue;
    delta[buffer.firstStep][b] += bytes;
    delta[buffer.lastStep + 1][b] -= bytes;
  }
  CheckedBuckets live{};
  for (int64_t i = 0; i < numSteps; ++i) {
    for (unsigned b = 0; b < kNumMemoryBuckets; ++b)
      live[b] += delta[i][b];
    MemoryStep step;
    step.op = steps[i]->getName().stripDialect().str();
    step.loc = stepLocs[i];
    step.phase = stepPhases[i];
    CheckedBuckets bytes = live;
    unsigned scratch = static_cast<unsigned>(MemoryBucket::Workspace);
    double scratchScale =
        (workspaceScalesWithContext[i] ? scaling.attentionWorkspace : 1) *
        scaling.factor[scratch] *
        (static_cast<size_t>(i) < scaling.stepWorkspaceFactor.size()
             ? scaling.stepWorkspaceFactor[i]
             : 1.0);
    bytes[scratch] +=
        gatherBytes +
        scaleBytes(CheckedInt::fromSaturated(workspace[i]), scratchScale);
    bytes[static_cast<unsigned>(MemoryBucket::Optimizer)] +=
        CheckedInt::fromSaturated(scaling.extraOptimizerBytes);
    for (unsigned b = 0; b < kNumMemoryBuckets; ++b)
      step.bytes[b] = bytes[b].saturated();
    if (step.total() > summary.peakBytes || i == 0) {
      summary.peakBytes = step.total();
      summary.peakStep = i;
      summary.peakAt = step.loc;
      summary.atPeak = step.bytes;
    }
    summary.timeline.push_back(std::move(step));
  }
  summary.training = isTraining();
  if (isTraining()) {
    unsigned activations = static_cast<unsigned>(MemoryBucket::Activations);
    CheckedInt saved = 0;
    for (auto [index, buffer] : llvm::enumerate(buffers))
      if (buffer.bucket == MemoryBucket::Activations &&
          buffer.firstStep < backwardStart && buffer.lastStep >= backwardStart)
        saved += scaleBytes(CheckedInt::fromSaturated(buffer.bytes),
                            factor[activations] *
                                (index < scaling.bufferFactor.size()
                                     ? scaling.bufferFactor[index]
                                     : 1.0));
    summary.savedActivationsBytes = saved.saturated();
  }
  return summary;
}

MemorySummary memwall::simulateMemory(func::FuncOp function,
                                      const ShardingOptions &sharding,
                                      const MemoryScaling &scaling) {
  return MemoryLiveness(function).simulate(sharding, scaling);
}
