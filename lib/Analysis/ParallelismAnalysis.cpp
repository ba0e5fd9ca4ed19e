//===- ParallelismAnalysis.cpp - tensor/pipeline/expert parallel plans ----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reads from a step's IR how Megatron-LM's tensor parallelism splits each
// value (a GEMM on a replicated input is column-parallel and its output
// sharded; a GEMM on a sharded input is row-parallel and its output a
// partial sum, all-reduced where it is used), which pipeline stage holds
// each buffer (by its layer's name) and which buffers are experts'. A plan
// is then priced by re-running the memory simulation with per-buffer
// factors and timing its collectives on the target's links
// (docs/parallelism.md).
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/ParallelismAnalysis.h"

#include "memwall/Analysis/CommunicationAnalysis.h"
#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir;
using namespace memwall;

static llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<ParallelismOptions>
memwall::parseParallelismOptions(int64_t tensorParallel, bool sequenceParallel,
                                 int64_t pipelineParallel, StringRef schedule,
                                 int64_t virtualStages, int64_t microBatches,
                                 int64_t expertParallel) {
  // Far beyond any cluster; keeps every product of them in int64.
  constexpr int64_t kMaxDegree = 1 << 16;
  for (auto [flag, value] : {std::pair{"--tensor-parallel", tensorParallel},
                             std::pair{"--pipeline-parallel", pipelineParallel},
                             std::pair{"--expert-parallel", expertParallel},
                             std::pair{"--micro-batches", microBatches},
                             std::pair{"--virtual-stages", virtualStages}})
    if (value < 1 || value > kMaxDegree)
      return makeError(llvm::formatv("{0} must be between 1 and {1}, got {2}",
                                     flag, kMaxDegree, value));
  ParallelismOptions options;
  options.tensorParallel = tensorParallel;
  options.sequenceParallel = sequenceParallel;
  options.pipelineParallel = pipelineParallel;
  options.virtualStages = virtualStages;
  options.microBatches = microBatches;
  options.expertParallel = expertParallel;
  if (schedule == "1f1b")
    options.schedule = PipelineSchedule::OneFOneB;
  else if (schedule == "interleaved")
    options.schedule = PipelineSchedule::Interleaved;
  else
    return makeError("--pipeline-schedule must be 1f1b or interleaved, got '" +
                     schedule + "'");
  if (sequenceParallel && tensorParallel == 1)
    return makeError("--sequence-parallel splits what tensor parallelism "
                     "replicates: give --tensor-parallel=T (T > 1)");
  if (options.schedule == PipelineSchedule::Interleaved) {
    if (pipelineParallel == 1)
      return makeError("--pipeline-schedule=interleaved needs "
                       "--pipeline-parallel=P (P > 1)");
    if (virtualStages < 2)
      return makeError("--pipeline-schedule=interleaved needs "
                       "--virtual-stages of at least 2");
    if (microBatches % pipelineParallel != 0)
      return makeError(llvm::formatv(
          "--pipeline-schedule=interleaved needs --micro-batches ({0}) to be "
          "a multiple of --pipeline-parallel ({1})",
          microBatches, pipelineParallel));
  }
  return options;
}

//===----------------------------------------------------------------------===//
// ParallelLayout: the split of each value
//===----------------------------------------------------------------------===//

/// The name a generated op or argument carries, "" without one.
static StringRef nameOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (StringRef name = nameOf(inner); !name.empty())
        return name;
  return "";
}

/// The layer of a value by its name; embeddings and inputs come before the
/// layers, everything else unnamed (final norm, head, loss) after.
static int64_t layerOfName(StringRef name) {
  if (std::optional<int64_t> layer = parseLayerIndex(name))
    return *layer;
  for (StringRef prefix : {"embed", "tokens", "positions", "token_type"})
    if (name.starts_with(prefix))
      return ParallelLayout::kBeforeLayers;
  return ParallelLayout::kAfterLayers;
}

ParallelLayout::ParallelLayout(Operation *op, AnalysisManager &am)
    : liveness(&am.getAnalysis<MemoryLiveness>()),
      function(liveness->getFunction()) {
  if (function)
    build(function);
}

ParallelLayout::ParallelLayout(func::FuncOp function,
                               const MemoryLiveness &liveness)
    : liveness(&liveness), function(function) {
  build(function);
}

/// Whether `value` (through views and casts) is a loss's logits or a
/// function result: the output of the language-model head.
static bool isHeadOutput(Value value) {
  return llvm::any_of(value.getUsers(), [](Operation *user) {
    if (isa<CrossEntropyOp, func::ReturnOp>(user))
      return true;
    return isa<ReshapeOp, CastOp>(user) && isHeadOutput(user->getResult(0));
  });
}

namespace {
/// The dataflow over the step's ops in order (fusion bodies included).
class SplitWalker {
public:
  using Split = ParallelLayout::Split;
  SplitWalker(func::FuncOp function) : function(function) {}

  Split get(Value value) const {
    auto it = splits.find(value);
    return it == splits.end() ? Split::Replicated : it->second;
  }

  /// The weight argument `value` is read from (through casts, views and
  /// dequantization), or null.
  BlockArgument weightRoot(Value value) const {
    BlockArgument arg = argumentRoot(value);
    if (!arg || getArgKind(function, arg.getArgNumber()) != ArgKind::Weight)
      return nullptr;
    return arg;
  }

  /// The function argument `value` is read from (through casts, views,
  /// dequantization and fusion inputs), or null.
  BlockArgument argumentRoot(Value value) const {
    while (true) {
      if (Operation *def = value.getDefiningOp()) {
        if (!isa<CastOp, TransposeOp, ReshapeOp, DequantizeOp>(def))
          return nullptr;
        value = def->getOperand(0);
        continue;
      }
      // Inside a fusion, a body argument is the fusion's input.
      auto arg = cast<BlockArgument>(value);
      auto fusion = dyn_cast<FusionOp>(arg.getOwner()->getParentOp());
      if (!fusion)
        break;
      value = fusion.getInputs()[arg.getArgNumber()];
    }
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg || arg.getOwner()->getParentOp() != function)
      return nullptr;
    return arg;
  }

  /// A partial sum used here is all-reduced first.
  void materialize(Value value) {
    if (get(value) != Split::Partial)
      return;
    double bytes = static_cast<double>(getTensorByteSize(value.getType()));
    Operation *def = value.getDefiningOp();
    (def && getPhaseOf(def) != "forward" ? backwardBytes : forwardBytes) +=
        bytes;
    splits[value] = Split::Replicated;
  }

  void walk(Block &block) {
    for (Operation &op : block)
      visit(&op);
  }

  void visit(Operation *op) {
    if (auto fusion = dyn_cast<FusionOp>(op)) {
      Block &body = fusion.getBodyBlock();
      for (auto [arg, input] :
           llvm::zip_equal(body.getArguments(), fusion.getInputs()))
        splits[arg] = get(input);
      walk(body);
      Operation *yield = body.getTerminator();
      for (auto [result, value] :
           llvm::zip_equal(fusion->getResults(), yield->getOperands()))
        splits[result] = get(value);
      return;
    }
    if (auto matmul = dyn_cast<MatmulOp>(op)) {
      BlockArgument weight = weightRoot(matmul.getRhs());
      if (!weight)
        return generic(op);
      bool router = !op->getResult(0).use_empty() &&
                    llvm::all_of(op->getResult(0).getUsers(), [](Operation *u) {
                      return isa<MoeGatingOp>(u);
                    });
      if (router) {
        materialize(matmul.getLhs());
        splits[matmul.getResult()] = Split::Replicated;
        return;
      }
      // The head is vocabulary-parallel: Megatron pads the vocabulary to
      // a multiple of T, so it need not divide.
      bool head = isHeadOutput(matmul.getResult()) ||
                  llvm::any_of(weight.getUsers(), [](Operation *user) {
                    return isa<EmbeddingOp>(user);
                  });
      splitGemm(op, matmul.getLhs(), weight, matmul.getBias(),
                matmul.getTransposeRhs(), /*expert=*/false,
                /*mustDivide=*/!head);
      return;
    }
    if (auto expert = dyn_cast<ExpertMatmulOp>(op)) {
      BlockArgument weight = weightRoot(expert.getWeight());
      if (!weight)
        return generic(op);
      splitGemm(op, expert.getInput(), weight, Value(),
                expert.getTransposeWeight(), /*expert=*/true,
                /*mustDivide=*/true);
      return;
    }
    if (isa<ExpertMatmulWeightGradOp>(op)) {
      genericOperands(op);
      splits[op->getResult(0)] = Split::Sharded;
      expertValues.insert(op->getResult(0));
      return;
    }
    if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      // A vocabulary-parallel table: each device gathers its rows, zeros
      // elsewhere, and the sum over devices is the embedding.
      if (BlockArgument table = weightRoot(embedding.getTable()))
        splits[table] = Split::Sharded;
      if (boundaryBytes == 0)
        boundaryBytes = getTensorByteSize(embedding.getType());
      splits[embedding.getResult()] = Split::Partial;
      return;
    }
    if (isa<EmbeddingGradOp>(op)) {
      genericOperands(op);
      splits[op->getResult(0)] = Split::Sharded;
      return;
    }
    if (auto loss = dyn_cast<CrossEntropyOp>(op)) {
      genericOperands(op);
      if (get(loss.getLogits()) == Split::Sharded)
        vocabularyParallelLoss(loss.getLabels());
      splits[loss.getResult()] = Split::Replicated;
      return;
    }
    if (auto loss = dyn_cast<LinearCrossEntropyOp>(op)) {
      genericOperands(op);
      if (BlockArgument weight = weightRoot(loss.getWeight())) {
        splits[weight] = Split::Sharded;
        vocabularyParallelLoss(loss.getLabels());
      }
      return;
    }
    if (auto grad = dyn_cast<LinearCrossEntropyGradOp>(op)) {
      genericOperands(op);
      BlockArgument weight = weightRoot(grad.getWeight());
      bool sharded = weight && get(weight) == Split::Sharded;
      // The hidden state's gradient sums every device's vocabulary share.
      for (Value result : op->getResults())
        splits[result] = !sharded ? Split::Replicated
                         : result.getType() == grad.getWeight().getType()
                             ? Split::Sharded
                             : Split::Partial;
      return;
    }
    if (isa<MoeGatingOp, MoeGatingGradOp>(op)) {
      genericOperands(op);
      for (Value result : op->getResults())
        splits[result] = Split::Replicated;
      return;
    }
    if (auto adamw = dyn_cast<AdamWOp>(op)) {
      // The moments and the master copy are split like their weight.
      Value param = adamw.getParam();
      for (Value operand : op->getOperands()) {
        if (isa<BlockArgument>(operand) && operand != param) {
          splits[operand] = get(param);
          if (expertValues.contains(param))
            expertValues.insert(operand);
        }
      }
      for (Value result : op->getResults())
        splits[result] = get(param);
      return;
    }
    if (auto add = dyn_cast<AddOp>(op); add &&
                                        get(add.getLhs()) == Split::Partial &&
                                        get(add.getRhs()) == Split::Partial) {
      // Partial sums add up before one all-reduce (q, k and v's input
      // gradients).
      splits[add.getResult()] = Split::Partial;
      return;
    }
    if (auto append = dyn_cast<KVCacheAppendOp>(op)) {
      // A device caches the keys and values of its KV heads.
      BlockArgument cache = argumentRoot(append.getCache());
      if (get(append.getUpdate()) == Split::Sharded && cache) {
        splits[cache] = Split::Sharded;
        recordSplitDim(
            cache, readsDirectly(append.getCache(), cache) ? 1 : kUnsplittable);
      }
    }
    if (isa<AttentionOp, FlashAttentionOp>(op)) {
      auto q = cast<RankedTensorType>(op->getOperand(0).getType());
      auto k = cast<RankedTensorType>(op->getOperand(1).getType());
      if (get(op->getOperand(0)) == Split::Sharded && q.getRank() == 4) {
        tensorSplits.push_back(
            {q.getDimSize(1), op->getLoc(), "the query heads"});
        tensorSplits.push_back(
            {k.getDimSize(1), op->getLoc(), "the key/value heads"});
      }
    }
    generic(op);
  }

  /// A GEMM reading a weight: column-parallel on a replicated input (the
  /// output is sharded, the weight split along its output width),
  /// row-parallel on a sharded one (the output is a partial sum, the weight
  /// split along its input width).
  void splitGemm(Operation *op, Value input, BlockArgument weight, Value bias,
                 bool transposed, bool expert, bool mustDivide) {
    materialize(input);
    bool rowParallel = get(input) == Split::Sharded;
    splits[weight] = Split::Sharded;
    auto type = cast<RankedTensorType>(weight.getType());
    int64_t rank = type.getRank();
    // [.., K, N], or [.., N, K] stored transposed.
    int64_t kDim = rank - (transposed ? 1 : 2),
            nDim = rank - (transposed ? 2 : 1);
    int64_t extent = type.getDimSize(rowParallel ? kDim : nDim);
    if (!seenWeights.contains(weight)) {
      seenWeights.insert(weight);
      StringRef name = nameOf(weight.getLoc());
      if (mustDivide)
        tensorSplits.push_back(
            {extent, weight.getLoc(),
             llvm::formatv("the {0} width of {1}",
                           rowParallel ? "input" : "output",
                           name.empty() ? StringRef("a weight") : name)
                 .str()});
      if (expert)
        expertCounts.push_back(
            {type.getDimSize(0), weight.getLoc(),
             llvm::formatv("the experts of {0}",
                           name.empty() ? StringRef("a weight") : name)
                 .str()});
    }
    if (expert)
      expertValues.insert(weight);
    else if (mustDivide)
      recordSplitDim(weight, readsDirectly(op->getOperand(1), weight)
                                 ? (rowParallel ? kDim : nDim)
                                 : kUnsplittable);
    if (bias) {
      splits[bias] = rowParallel ? Split::Replicated : Split::Sharded;
      if (BlockArgument root = weightRoot(bias); root && !rowParallel)
        recordSplitDim(root, readsDirectly(bias, root) ? 0 : kUnsplittable);
    }
    splits[op->getResult(0)] = rowParallel ? Split::Partial : Split::Sharded;
  }

  /// Whether `value` is `root`, a cast or a dequantize of it: the same
  /// dimensions.
  static bool readsDirectly(Value value, BlockArgument root) {
    while (isa_and_nonnull<CastOp, DequantizeOp>(value.getDefiningOp()))
      value = value.getDefiningOp()->getOperand(0);
    return value == root;
  }

  /// A weight read by two GEMMs that split it differently, or through a
  /// view, keeps no split dimension.
  static constexpr int64_t kUnsplittable = -1;
  void recordSplitDim(BlockArgument weight, int64_t dim) {
    auto [it, inserted] = splitDims.try_emplace(weight, dim);
    if (!inserted && it->second != dim)
      it->second = kUnsplittable;
  }

  /// Megatron's vocabulary-parallel cross-entropy all-reduces three floats a
  /// position (the max, the sum of exponentials, the label's logit).
  void vocabularyParallelLoss(Value labels) {
    forwardBytes += 3.0 * 4 * getNumElements(labels.getType());
  }

  void genericOperands(Operation *op) {
    for (Value operand : op->getOperands())
      materialize(operand);
  }

  /// Sharded when any operand is (elementwise on a shard, attention on a
  /// device's heads), else replicated.
  void generic(Operation *op) {
    genericOperands(op);
    bool sharded = llvm::any_of(op->getOperands(), [&](Value operand) {
      return get(operand) == Split::Sharded;
    });
    for (Value result : op->getResults())
      splits[result] = sharded ? Split::Sharded : Split::Replicated;
  }

  func::FuncOp function;
  llvm::DenseMap<Value, Split> splits;
  llvm::DenseSet<Value> expertValues;
  llvm::DenseSet<Value> seenWeights;
  llvm::DenseMap<Value, int64_t> splitDims;
  std::vector<ParallelLayout::Divisible> tensorSplits, expertCounts;
  double forwardBytes = 0, backwardBytes = 0;
  int64_t boundaryBytes = 0;
};
} // namespace

void ParallelLayout::build(func::FuncOp function) {
  SplitWalker walker(function);
  walker.walk(function.getBody().front());
  forwardAllReduceBytes = walker.forwardBytes;
  backwardAllReduceBytes = walker.backwardBytes;
  tensorSplits = std::move(walker.tensorSplits);
  expertCounts = std::move(walker.expertCounts);
  boundaryBytes = walker.boundaryBytes;
  for (auto [weight, dim] : walker.splitDims)
    if (dim != SplitWalker::kUnsplittable)
      weightSplitDims[weight] = dim;
  if (boundaryBytes == 0)
    for (BlockArgument arg : function.getArguments())
      if (getArgKind(function, arg.getArgNumber()) == ArgKind::Input &&
          isa<FloatType>(
              cast<RankedTensorType>(arg.getType()).getElementType())) {
        boundaryBytes = getTensorByteSize(arg.getType());
        break;
      }
  // Each MoE layer's token slots go out to their experts' devices and come
  // back (forward); their gradients make the same trips (backward).
  function.walk([&](MoeGatingOp gating) {
    if (getPhaseOf(gating) != "forward")
      return;
    for (Operation *user : gating.getIndices().getUsers())
      if (auto expert = dyn_cast<ExpertMatmulOp>(user);
          expert && expert.hasSharedInput()) {
        ExpertMatmulOp::Dims dims = expert.getDims();
        expertSlotBytes +=
            (CheckedInt(dims.tokens) * dims.slots * dims.k *
             getElementByteSize(expert.getInput().getType().getElementType()))
                .saturated();
        return;
      }
  });

  ArrayRef<LiveBuffer> buffers = liveness->getBuffers();
  int64_t backwardStart = liveness->getBackwardStart();
  bufferInfo.resize(buffers.size());
  for (auto [info, buffer] : llvm::zip_equal(bufferInfo, buffers)) {
    Value root = buffer.root;
    Split split = walker.get(root);
    // A partial sum is a whole tensor on each device.
    info.split = split == Split::Partial ? Split::Replicated : split;
    info.expert = walker.expertValues.contains(root);
    Location loc = root.getLoc();
    if (Operation *def = root.getDefiningOp())
      loc = def->getLoc();
    info.layer = layerOfName(nameOf(loc));
    // A tied embedding is also the head, on the last stage.
    if (auto arg = dyn_cast<BlockArgument>(root);
        arg && info.layer == kBeforeLayers &&
        getArgKind(function, arg.getArgNumber()) == ArgKind::Weight)
      info.alsoLast = llvm::any_of(arg.getUsers(), [](Operation *user) {
        return isa<MatmulOp, LinearCrossEntropyOp>(user);
      });
    info.saved =
        backwardStart >= 0 && buffer.bucket == MemoryBucket::Activations &&
        buffer.firstStep < backwardStart && buffer.lastStep >= backwardStart;
    if (info.layer != kBeforeLayers && info.layer != kAfterLayers)
      numLayers = std::max(numLayers, info.layer + 1);
  }
  for (Operation *step : liveness->getSteps()) {
    stepLayer.push_back(layerOfName(nameOf(step->getLoc())));
    stepSharded.push_back(step->getNumResults() > 0 &&
                          walker.get(step->getResult(0)) == Split::Sharded);
  }
}

std::optional<int64_t>
ParallelLayout::getTensorParallelDim(BlockArgument weight) const {
  auto it = weightSplitDims.find(weight);
  if (it == weightSplitDims.end())
    return std::nullopt;
  return it->second;
}

LogicalResult ParallelLayout::check(const ParallelismOptions &options,
                                    bool emit) const {
  auto fail = [&](Location loc, const Twine &message) {
    if (emit)
      mlir::emitError(loc) << message;
    return failure();
  };
  int64_t t = options.tensorParallel;
  if (t > 1)
    for (const Divisible &split : tensorSplits)
      if (split.extent % t != 0)
        return fail(split.loc, llvm::formatv("--tensor-parallel={0} does not "
                                             "divide {1} ({2})",
                                             t, split.what, split.extent));
  int64_t p = options.pipelineParallel;
  if (p > 1) {
    int64_t chunks = p * options.chunks();
    if (numLayers == 0)
      return fail(function.getLoc(),
                  llvm::formatv("--pipeline-parallel={0} needs layers to put "
                                "in stages (ops named layers.N)",
                                p));
    if (numLayers % chunks != 0)
      return fail(
          function.getLoc(),
          options.chunks() > 1
              ? llvm::formatv("--pipeline-parallel={0} x --virtual-stages={1} "
                              "= {2} chunks do not divide the {3} layers",
                              p, options.chunks(), chunks, numLayers)
                    .str()
              : llvm::formatv("--pipeline-parallel={0} does not divide the "
                              "{1} layers",
                              p, numLayers)
                    .str());
  }
  int64_t e = options.expertParallel;
  if (e > 1) {
    if (expertCounts.empty())
      return fail(function.getLoc(),
                  llvm::formatv("--expert-parallel={0} needs a mixture of "
                                "experts (no memwall.expert_matmul reads a "
                                "weight)",
                                e));
    for (const Divisible &count : expertCounts)
      if (count.extent % e != 0)
        return fail(count.loc,
                    llvm::formatv("--expert-parallel={0} does not divide {1} "
                                  "({2})",
                                  e, count.what, count.extent));
  }
  return success();
}

/// The stage of a layer: P contiguous stages, or under the interleaved
/// schedule P·v chunks dealt round-robin.
static int64_t stageOfLayer(int64_t layer, int64_t numLayers,
                            const ParallelismOptions &options) {
  int64_t p = options.pipelineParallel;
  if (layer == ParallelLayout::kBeforeLayers || numLayers == 0)
    return 0;
  if (layer == ParallelLayout::kAfterLayers)
    return p - 1;
  int64_t chunks = p * options.chunks();
  int64_t chunk = std::min(layer, numLayers - 1) * chunks / numLayers;
  return chunk % p;
}

/// Micro-batches whose activations stage `stage` holds at once: 1F1B's
/// warm-up runs P - stage forwards before the first backward; the
/// interleaved schedule's first stage holds 1 + (P - 1) / (P v) times
/// more (Narayanan et al. 2021; Korthikanti et al. 2022, section 4.2).
static double inFlight(const ParallelismOptions &options, int64_t stage) {
  int64_t p = options.pipelineParallel;
  double warmUp = static_cast<double>(
      std::min(p - stage, std::max<int64_t>(1, options.microBatches)));
  if (options.schedule == PipelineSchedule::Interleaved && stage == 0)
    warmUp *= 1.0 + static_cast<double>(p - 1) /
                        static_cast<double>(p * options.chunks());
  return warmUp;
}

std::vector<double>
ParallelLayout::getBufferFactors(const ParallelismOptions &options,
                                 int64_t stage) const {
  ArrayRef<LiveBuffer> buffers = liveness->getBuffers();
  double t = static_cast<double>(options.tensorParallel);
  double e = static_cast<double>(options.expertParallel);
  int64_t p = options.pipelineParallel;
  std::vector<double> factors(bufferInfo.size(), 1.0);
  for (auto [factor, info, buffer] :
       llvm::zip_equal(factors, bufferInfo, buffers)) {
    bool activation = buffer.bucket == MemoryBucket::Activations ||
                      buffer.bucket == MemoryBucket::Workspace;
    if (info.split == Split::Sharded ||
        (options.sequenceParallel && activation))
      factor /= t;
    if (info.expert)
      factor /= e;
    if (p == 1)
      continue;
    bool here = stageOfLayer(info.layer, numLayers, options) == stage ||
                (info.alsoLast && stage == p - 1);
    if (!here)
      factor = 0;
    else if (info.saved)
      factor *= inFlight(options, stage);
  }
  return factors;
}

std::vector<double>
ParallelLayout::getStepFactors(const ParallelismOptions &options,
                               int64_t stage) const {
  std::vector<double> factors(stepLayer.size(), 1.0);
  for (auto [factor, layer, sharded] :
       llvm::zip_equal(factors, stepLayer, stepSharded)) {
    if (sharded || options.sequenceParallel)
      factor /= static_cast<double>(options.tensorParallel);
    if (options.pipelineParallel > 1 &&
        stageOfLayer(layer, numLayers, options) != stage)
      factor = 0;
  }
  return factors;
}

MemorySummary ParallelLayout::simulate(const ParallelismOptions &options,
                                       const ShardingOptions &sharding,
                                       int64_t stage) const {
  MemoryScaling scaling;
  scaling.bufferFactor = getBufferFactors(options, stage);
  scaling.stepWorkspaceFactor = getStepFactors(options, stage);
  return liveness->simulate(sharding, scaling);
}

ParallelismSummary
ParallelLayout::evaluate(const ParallelismOptions &options,
                         const ShardingOptions &sharding,
                         const GPUTarget &target, MemorySummary *memoryOut,
                         CommunicationSummary *dataParallelOut) const {
  ParallelismSummary s;
  int64_t t = options.tensorParallel, p = options.pipelineParallel;
  int64_t e = options.expertParallel;
  int64_t m = std::max<int64_t>(1, options.microBatches);
  int64_t v = options.chunks();
  s.tensorParallel = t;
  s.sequenceParallel = options.sequenceParallel;
  s.pipelineParallel = p;
  s.schedule = options.schedule == PipelineSchedule::Interleaved ? "interleaved"
                                                                 : "1f1b";
  s.virtualStages = v;
  s.microBatches = m;
  s.expertParallel = e;
  s.dataParallel = std::max<int64_t>(1, sharding.devices);
  s.gpus = s.dataParallel * t * p;

  // The stage whose device peaks higher: the first holds the most
  // micro-batches in flight, the last the head and the loss.
  int64_t worst = 0;
  MemorySummary memory = simulate(options, sharding, 0);
  if (p > 1) {
    MemorySummary last = simulate(options, sharding, p - 1);
    if (last.peakBytes > memory.peakBytes) {
      memory = std::move(last);
      worst = p - 1;
    }
  }
  s.worstStage = worst == 0 ? "first" : "last";
  s.peakBytes = memory.peakBytes;
  auto bucket = [&](MemoryBucket b) {
    return memory.atPeak[static_cast<unsigned>(b)];
  };
  s.weightBytes = bucket(MemoryBucket::Weights);
  s.gradientBytes = bucket(MemoryBucket::Gradients);
  s.optimizerBytes = bucket(MemoryBucket::Optimizer);
  s.activationBytes = memory.savedActivationsBytes;

  // One middle layer's saved activations, one micro-batch, one device.
  std::vector<double> split =
      getBufferFactors(ParallelismOptions{t, options.sequenceParallel, 1,
                                          PipelineSchedule::OneFOneB, 2, 1, e},
                       0);
  ArrayRef<LiveBuffer> buffers = liveness->getBuffers();
  double layerBytes = 0;
  for (auto [factor, info, buffer] :
       llvm::zip_equal(split, bufferInfo, buffers))
    if (info.saved && info.layer == numLayers / 2)
      layerBytes += factor * static_cast<double>(buffer.bytes);
  s.layerActivationBytes = CheckedInt::fromDouble(layerBytes).saturated();

  // Each device's share of the model states at the worst stage.
  std::vector<double> factors = getBufferFactors(options, worst);
  CommunicationInputs in;
  double params = 0, paramBytes = 0, gradientBytes = 0;
  for (auto [factor, buffer] : llvm::zip_equal(factors, buffers)) {
    auto arg = dyn_cast<BlockArgument>(buffer.root);
    if (!arg || arg.getOwner()->getParentOp() != function ||
        getArgKind(function, arg.getArgNumber()) != ArgKind::Weight)
      continue;
    paramBytes += factor * static_cast<double>(buffer.bytes);
    if (!isTrainableWeight(function, arg.getArgNumber()))
      continue;
    gradientBytes += factor * static_cast<double>(buffer.bytes);
    params += factor * static_cast<double>(getNumElements(arg.getType()));
  }
  in.paramBytes = CheckedInt::fromDouble(paramBytes).saturated();
  in.gradientBytes = CheckedInt::fromDouble(gradientBytes).saturated();
  in.params = CheckedInt::fromDouble(params).saturated();
  in.hasOptimizer = hasOptimizerStep(function);
  in.microSteps = m;
  in.linkSpan = s.gpus;

  // One micro-batch's kernels, split over the T x P devices of a replica.
  double forward = 0, backward = 0, optimizer = 0;
  for (Operation &op : function.getBody().front()) {
    auto cost = dyn_cast<CostOpInterface>(&op);
    if (!cost)
      continue;
    double seconds = estimateOpRoofline(cost, target).timeSeconds;
    StringRef phase = getPhaseOf(&op);
    (phase == "optimizer"  ? optimizer
     : phase == "backward" ? backward
                           : forward) += seconds;
  }
  double devices = static_cast<double>(t * p);
  in.forwardSeconds = forward / devices;
  in.backwardSeconds = backward / devices;
  in.optimizerSeconds = optimizer / devices;

  // Tensor parallelism: the all-reduces (or, with sequence parallelism,
  // the reduce-scatter + all-gather pairs, the same bytes) of a stage's
  // layers, on the replica's link; not hidden.
  auto link = [&](int64_t span) {
    return span > 1 ? target.collectiveBandwidth(span) : 0.0;
  };
  auto seconds = [](double bytes, double bandwidth) {
    return bandwidth > 0 ? bytes / bandwidth : 0.0;
  };
  double tpBytes = 0;
  if (t > 1)
    tpBytes = 2.0 * (t - 1) / t *
              (forwardAllReduceBytes + backwardAllReduceBytes) / p;
  s.tensorParallelLink = collectiveLinkName(target, t).str();
  double tpSeconds = seconds(tpBytes, link(t));
  // Pipeline: each micro-batch's hidden state forward and its gradient
  // back, at each of the device's v chunk boundaries.
  double ppBytes = 0;
  if (p > 1)
    ppBytes = 2.0 * v * static_cast<double>(boundaryBytes) /
              (options.sequenceParallel ? t : 1);
  double ppSeconds = seconds(ppBytes, link(t * p));
  // Experts: dispatch and combine all-to-alls, forward and backward.
  double epBytes = 0;
  if (e > 1)
    epBytes = 4.0 * (e - 1) / e * static_cast<double>(expertSlotBytes) / p;
  double epSeconds = seconds(epBytes, link(e * t * p));

  CommunicationSummary dp = estimateCommunication(in, sharding, target);
  double perMicroBatch = in.forwardSeconds + in.backwardSeconds + tpSeconds +
                         ppSeconds + epSeconds;
  s.tensorParallelBytes = CheckedInt::fromDouble(m * tpBytes).saturated();
  s.tensorParallelSeconds = m * tpSeconds;
  s.pipelineBytes = CheckedInt::fromDouble(m * ppBytes).saturated();
  s.pipelineSeconds = m * ppSeconds;
  s.expertBytes = CheckedInt::fromDouble(m * epBytes).saturated();
  s.expertSeconds = m * epSeconds;
  s.dataParallelBytes = (CheckedInt::fromSaturated(dp.allReduceBytes) +
                         CheckedInt::fromSaturated(dp.reduceScatterBytes) +
                         CheckedInt::fromSaturated(dp.allGatherBytes))
                            .saturated();
  s.dataParallelSeconds = dp.exposedSeconds;
  // The pipeline fills and drains: (P - 1) / v micro-batch slots idle.
  s.bubbleFraction = static_cast<double>(p - 1) / static_cast<double>(v * m);
  s.bubbleSeconds = static_cast<double>(p - 1) / v * perMicroBatch;
  s.computeSeconds = dp.computeSeconds;
  s.stepSeconds = dp.stepSeconds + s.tensorParallelSeconds + s.pipelineSeconds +
                  s.expertSeconds + s.bubbleSeconds;
  if (memoryOut)
    *memoryOut = std::move(memory);
  if (dataParallelOut)
    *dataParallelOut = std::move(dp);
  return s;
}

std::string memwall::describeParallelPlan(const ParallelismSummary &s) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::ListSeparator comma;
  if (s.tensorParallel > 1)
    os << comma << "tensor-parallel " << s.tensorParallel
       << (s.sequenceParallel ? " + sequence-parallel" : "");
  if (s.pipelineParallel > 1)
    os << comma << "pipeline-parallel " << s.pipelineParallel << " ("
       << s.schedule << ", " << s.microBatches << " micro-batch"
       << (s.microBatches == 1 ? "" : "es") << ", bubble "
       << llvm::formatv("{0:f0}%", 100 * s.bubbleFraction) << ")";
  if (s.expertParallel > 1)
    os << comma << "expert-parallel " << s.expertParallel;
  os << ": " << s.gpus << " GPUs";
  if (s.dataParallel > 1)
    os << " (" << s.tensorParallel * s.pipelineParallel << " a replica x "
       << s.dataParallel << ")";
  double communication = s.tensorParallelSeconds + s.pipelineSeconds +
                         s.expertSeconds + s.dataParallelSeconds;
  os << ", communication not hidden "
     << llvm::formatv("{0:f1} ms", 1e3 * communication);
  return text;
}

std::vector<ParallelPlan>
memwall::searchParallelPlans(const ParallelLayout &layout,
                             const ShardingOptions &sharding,
                             const GPUTarget &target, int64_t budgetBytes,
                             const ParallelismOptions &current) {
  int64_t node = std::max<int64_t>(1, target.interconnect.gpusPerNode);
  std::vector<int64_t> tensorDegrees, pipelineDegrees, expertDegrees = {1};
  for (int64_t t = 1; t <= node; t *= 2)
    tensorDegrees.push_back(t);
  for (int64_t p = 1;
       p <= std::max<int64_t>(1, layout.getNumLayers()) && p <= 64; p *= 2)
    pipelineDegrees.push_back(p);
  if (layout.hasExperts())
    for (int64_t e = 2; e <= 64; e *= 2)
      expertDegrees.push_back(e);
  std::vector<ParallelPlan> plans;
  for (int64_t t : tensorDegrees)
    for (int64_t p : pipelineDegrees)
      for (int64_t e : expertDegrees) {
        if (t == 1 && p == 1 && e == 1)
          continue;
        ParallelismOptions options;
        options.tensorParallel = t;
        options.sequenceParallel = t > 1;
        options.pipelineParallel = p;
        // The same global batch: the micro-batches given (a pipeline
        // longer than them idles most of the step, as it would).
        options.microBatches = current.microBatches;
        options.expertParallel = e;
        if (t == current.tensorParallel && p == current.pipelineParallel &&
            e == current.expertParallel &&
            options.sequenceParallel == current.sequenceParallel)
          continue;
        if (failed(layout.check(options, /*emit=*/false)))
          continue;
        ParallelPlan plan;
        plan.options = options;
        plan.summary = layout.evaluate(options, sharding, target);
        plan.fits = plan.summary.peakBytes <= budgetBytes;
        plans.push_back(std::move(plan));
      }
  // GPU-seconds per step: a plan on more GPUs is faster, but only worth
  // them if it is as much faster (the bubble and the collectives are what
  // it loses).
  auto gpuSeconds = [](const ParallelPlan &plan) {
    const ParallelismSummary &s = plan.summary;
    return s.stepSeconds * static_cast<double>(s.tensorParallel) *
           static_cast<double>(s.pipelineParallel);
  };
  llvm::stable_sort(plans, [&](const ParallelPlan &a, const ParallelPlan &b) {
    if (a.fits != b.fits)
      return a.fits;
    if (!a.fits)
      return a.summary.peakBytes < b.summary.peakBytes;
    return gpuSeconds(a) < gpuSeconds(b);
  });
  return plans;
}

void memwall::appendParallelPlanFixes(BudgetSummary &budget,
                                      const ParallelLayout &layout,
                                      const ShardingOptions &sharding,
                                      const ParallelismOptions &current,
                                      const GPUTarget &target,
                                      double baseStepSeconds) {
  std::vector<ParallelPlan> plans = searchParallelPlans(
      layout, sharding, target, budget.budgetBytes, current);
  constexpr int kShown = 3;
  int shown = 0;
  for (const ParallelPlan &plan : plans) {
    if (shown == kShown || (!plan.fits && shown > 0))
      break;
    const ParallelismSummary &s = plan.summary;
    MemoryFix fix;
    fix.name = getParallelPlanName(s);
    fix.description = describeParallelPlan(s);
    fix.peakBytes = s.peakBytes;
    fix.timeSeconds = s.stepSeconds;
    fix.timeFactor = baseStepSeconds > 0 ? s.stepSeconds / baseStepSeconds : 1;
    fix.fits = plan.fits;
    budget.fixes.push_back(std::move(fix));
    ++shown;
  }
  if (llvm::any_of(budget.fixes,
                   [](const MemoryFix &fix) { return fix.firstThatFits; }))
    return;
  for (MemoryFix &fix : budget.fixes)
    if (fix.fits) {
      fix.firstThatFits = true;
      return;
    }
}
