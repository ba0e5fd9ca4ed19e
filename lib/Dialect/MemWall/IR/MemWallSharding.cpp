//===- MemWallSharding.cpp - memwall ops on MLIR's shard dialect ----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each op's sharding rule is a table: the op's loops (parallel, or a sum
// reduction) and, for every dimension of every operand and result, the loop
// that indexes it, or none where the dimension is never split (a norm's
// normalized width, attention's sequence and head width, a reshape's inner
// dimensions, a broadcast dimension of size 1). Upstream's default
// implementation needs affine indexing maps that are projected permutations,
// which grouped-query attention (a query head reads KV head h / g) and
// reshapes are not; the table covers both. One engine below turns a table
// into sharding options, annotations and the per-device op; a matmul whose
// contraction is split sums its partial products with shard.all_reduce and
// adds its bias once, after the sum.
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWallSharding.h"

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::shard;
using namespace memwall;

namespace {

/// A dimension no loop indexes: never split.
constexpr int64_t kWhole = -1;

struct DimensionRule {
  SmallVector<utils::IteratorType> loops;
  /// For each operand and each result: the loop of each dimension.
  SmallVector<SmallVector<int64_t>> operands, results;
};

SmallVector<int64_t> identityDims(int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(0, rank));
}

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

/// The loops of an operand broadcast (NumPy rules, aligned at the trailing
/// dimension) to `resultShape`, whose dimension i is loop i: a
/// dimension of size 1 against a wider one is broadcast, not split.
SmallVector<int64_t> broadcastDims(ArrayRef<int64_t> operandShape,
                                   ArrayRef<int64_t> resultShape) {
  SmallVector<int64_t> dims;
  int64_t offset = static_cast<int64_t>(resultShape.size()) -
                   static_cast<int64_t>(operandShape.size());
  for (auto [i, extent] : llvm::enumerate(operandShape)) {
    int64_t resultDim = offset + static_cast<int64_t>(i);
    bool broadcast =
        resultDim < 0 || (extent == 1 && resultShape[resultDim] != 1);
    dims.push_back(broadcast ? kWhole : resultDim);
  }
  return dims;
}

DimensionRule parallelRule(int64_t loops) {
  DimensionRule rule;
  rule.loops.assign(loops, utils::IteratorType::parallel);
  return rule;
}

/// Elementwise ops (with broadcasting): one loop per result dimension.
DimensionRule elementwiseRule(Operation *op) {
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  DimensionRule rule = parallelRule(shape.size());
  for (Value operand : op->getOperands())
    rule.operands.push_back(broadcastDims(shapeOf(operand), shape));
  rule.results.push_back(identityDims(shape.size()));
  return rule;
}

/// Loops: the batch dimensions, M, N and the contraction K (a sum).
DimensionRule matmulRule(MatmulOp op) {
  ArrayRef<int64_t> shape = shapeOf(op.getResult());
  int64_t rank = shape.size(), batch = rank - 2;
  int64_t m = batch, n = batch + 1, k = batch + 2;
  DimensionRule rule = parallelRule(rank);
  rule.loops.push_back(utils::IteratorType::reduction);
  auto operandDims = [&](Value operand, bool transposed, int64_t row,
                         int64_t column) {
    ArrayRef<int64_t> operandShape = shapeOf(operand);
    SmallVector<int64_t> dims =
        broadcastDims(operandShape.drop_back(2), shape.take_front(batch));
    dims.push_back(transposed ? column : row);
    dims.push_back(transposed ? row : column);
    return dims;
  };
  rule.operands.push_back(operandDims(op.getLhs(), op.getTransposeLhs(), m, k));
  rule.operands.push_back(operandDims(op.getRhs(), op.getTransposeRhs(), k, n));
  if (op.getBias())
    rule.operands.push_back({n});
  rule.results.push_back(identityDims(rank));
  return rule;
}

/// Ops reducing along `axis` of their first operand: split anywhere else.
DimensionRule rowRule(Operation *op, int64_t axis) {
  ArrayRef<int64_t> shape = shapeOf(op->getOperand(0));
  DimensionRule rule = parallelRule(shape.size());
  SmallVector<int64_t> dims = identityDims(shape.size());
  dims[axis] = kWhole;
  rule.operands.push_back(dims);
  // Norm weights and biases span the normalized axis.
  for (Value operand : op->getOperands().drop_front())
    rule.operands.push_back(
        SmallVector<int64_t>(shapeOf(operand).size(), kWhole));
  rule.results.push_back(dims);
  return rule;
}

DimensionRule ruleOf(MatmulOp op) { return matmulRule(op); }
DimensionRule ruleOf(LayerNormOp op) {
  return rowRule(op, op.getInput().getType().getRank() - 1);
}
DimensionRule ruleOf(RmsNormOp op) {
  return rowRule(op, op.getInput().getType().getRank() - 1);
}
DimensionRule ruleOf(SoftmaxOp op) {
  int64_t rank = op.getInput().getType().getRank();
  // I64Attr reads back unsigned: -1 is 2^64 - 1 until cast.
  int64_t axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += rank;
  return rowRule(op, axis);
}

/// Result dimension i is input dimension permutation[i].
DimensionRule ruleOf(TransposeOp op) {
  ArrayRef<int64_t> permutation = op.getPermutation();
  DimensionRule rule = parallelRule(permutation.size());
  SmallVector<int64_t> input(permutation.size());
  for (auto [i, source] : llvm::enumerate(permutation))
    input[source] = i;
  rule.operands.push_back(input);
  rule.results.push_back(identityDims(permutation.size()));
  return rule;
}

/// A reshape splits or joins groups of adjacent dimensions with equal
/// products (e.g. [B, S, H*D] -> [B, S, H, D]). A group's row-major blocks
/// are split alike on both sides only along its leading dimension (the
/// first wider than 1), so that is the one loop each group has.
DimensionRule ruleOf(ReshapeOp op) {
  ArrayRef<int64_t> in = shapeOf(op.getInput()), out = shapeOf(op.getResult());
  DimensionRule rule = parallelRule(out.size());
  SmallVector<int64_t> inDims(in.size(), kWhole), outDims(out.size(), kWhole);
  auto leading = [](ArrayRef<int64_t> shape, size_t begin, size_t end) {
    for (size_t d = begin; d < end; ++d)
      if (shape[d] != 1)
        return d;
    return begin;
  };
  size_t i = 0, j = 0;
  while (i < in.size() && j < out.size()) {
    size_t iBegin = i, jBegin = j;
    int64_t inProduct = in[i++], outProduct = out[j++];
    while (inProduct != outProduct) {
      if (inProduct < outProduct && i < in.size())
        inProduct *= in[i++];
      else if (j < out.size())
        outProduct *= out[j++];
      else
        break;
    }
    // Trailing dimensions of size 1 join the group they follow.
    while (i < in.size() && in[i] == 1 && (j >= out.size() || out[j] != 1))
      ++i;
    while (j < out.size() && out[j] == 1 && (i >= in.size() || in[i] != 1))
      ++j;
    size_t outLeading = leading(out, jBegin, j);
    inDims[leading(in, iBegin, i)] = outLeading;
    outDims[outLeading] = outLeading;
  }
  rule.operands.push_back(inDims);
  rule.results.push_back(outDims);
  return rule;
}

/// Attention splits along the batch (loop 0) and the heads (loop 1): query
/// head h reads KV head h / (Hq / Hkv), so a split of both into contiguous
/// blocks keeps each device's query heads with their KV heads.
DimensionRule ruleOf(AttentionOp op) {
  DimensionRule rule = parallelRule(2);
  SmallVector<int64_t> heads = {0, 1, kWhole, kWhole};
  rule.operands = {heads, heads, heads};
  if (Value mask = op.getMask()) {
    ArrayRef<int64_t> query = shapeOf(op.getQuery());
    SmallVector<int64_t> scores = {query[0], query[1], query[2],
                                   shapeOf(op.getKey())[2]};
    SmallVector<int64_t> dims = broadcastDims(shapeOf(mask), scores);
    for (int64_t &dim : dims)
      if (dim >= 2)
        dim = kWhole;
    rule.operands.push_back(dims);
  }
  rule.results.push_back(heads);
  return rule;
}

/// Rope rotates pairs within a head's width: split along batch, heads and
/// positions (loops 0-2).
DimensionRule ruleOf(RopeOp op) {
  DimensionRule rule = parallelRule(3);
  SmallVector<int64_t> dims = {0, 1, 2, kWhole};
  rule.operands.push_back(dims);
  rule.operands.push_back(shapeOf(op.getPositions()).size() == 1
                              ? SmallVector<int64_t>{2}
                              : SmallVector<int64_t>{0, 2});
  rule.results.push_back(dims);
  return rule;
}

/// An embedding gathers whole rows: the table is split only along its
/// width (the vocabulary-parallel split needs a masked gather and a sum).
DimensionRule ruleOf(EmbeddingOp op) {
  int64_t rank = op.getResult().getType().getRank();
  DimensionRule rule = parallelRule(rank);
  rule.operands.push_back({kWhole, rank - 1});
  rule.operands.push_back(identityDims(rank - 1));
  rule.results.push_back(identityDims(rank));
  return rule;
}

/// A slice splits along the dimensions it takes whole.
DimensionRule ruleOf(SliceOp op) {
  ArrayRef<int64_t> in = shapeOf(op.getInput());
  DimensionRule rule = parallelRule(in.size());
  SmallVector<int64_t> dims = identityDims(in.size());
  std::optional<ArrayRef<int64_t>> strides = op.getStrides();
  for (auto [d, extent] : llvm::enumerate(in))
    if (op.getOffsets()[d] != 0 || op.getSizes()[d] != extent ||
        (strides && (*strides)[d] != 1))
      dims[d] = kWhole;
  rule.operands.push_back(dims);
  rule.results.push_back(dims);
  return rule;
}

/// A KV cache grows along the sequence: split along batch and KV heads.
DimensionRule ruleOf(KVCacheAppendOp op) {
  DimensionRule rule = parallelRule(2);
  SmallVector<int64_t> heads = {0, 1, kWhole, kWhole};
  rule.operands = {heads, heads};
  rule.results.push_back(heads);
  return rule;
}

/// Elementwise ops, and dequantize: its scales (and zero points) split with
/// the weight along each dimension wider than 1, a block of them per block
/// of weights (split by T where T divides the scales' extent).
template <typename OpT> DimensionRule ruleOf(OpT op) {
  return elementwiseRule(op);
}

/// The grid axes of each loop under `operandShardings` and
/// `resultShardings` (null: replicated). Where they conflict, split a
/// dimension no loop indexes or reuse a grid axis: failure when `strict`
/// (the annotations partitioning reads), else the offending split is left
/// out, so propagation proposes a resharding (e.g. the all-gather of GPT-2's
/// fused q/k/v columns before their slices).
FailureOr<ShardingOption> getLoopAxes(const DimensionRule &rule,
                                      ArrayRef<Sharding> operandShardings,
                                      ArrayRef<Sharding> resultShardings,
                                      bool strict, bool &any) {
  ShardingOption option;
  option.shardingArray.resize(rule.loops.size());
  any = false;
  auto fill = [&](const Sharding &sharding,
                  ArrayRef<int64_t> dims) -> LogicalResult {
    if (!sharding)
      return success();
    any = true;
    if (option.grid && option.grid != sharding.getGridAttr())
      return failure();
    option.grid = sharding.getGridAttr();
    for (auto [dim, axes] : llvm::enumerate(sharding.getSplitAxes())) {
      if (axes.empty())
        continue;
      bool conflict = dim >= dims.size() || dims[dim] == kWhole;
      if (!conflict) {
        ArrayRef<GridAxis> loopAxes = option.shardingArray[dims[dim]];
        conflict = !loopAxes.empty() && loopAxes != axes.asArrayRef();
        for (auto [loop, other] : llvm::enumerate(option.shardingArray))
          if (static_cast<int64_t>(loop) != dims[dim])
            for (GridAxis axis : axes.asArrayRef())
              conflict |= llvm::is_contained(other, axis);
      }
      if (conflict && strict)
        return failure();
      if (conflict)
        continue;
      SmallVector<GridAxis> &loopAxes = option.shardingArray[dims[dim]];
      loopAxes.assign(axes.asArrayRef().begin(), axes.asArrayRef().end());
    }
    return success();
  };
  for (auto [sharding, dims] : llvm::zip(resultShardings, rule.results))
    if (failed(fill(sharding, dims)))
      return failure();
  for (auto [sharding, dims] : llvm::zip(operandShardings, rule.operands))
    if (failed(fill(sharding, dims)))
      return failure();
  return option;
}

/// Whether every split dimension of `values` divides evenly on `grid`.
bool dividesEvenly(const DimensionRule &rule, const ShardingOption &option,
                   ValueRange operands, ValueRange results, GridOp grid) {
  auto divides = [&](Value value, ArrayRef<int64_t> dims) {
    for (auto [extent, loop] : llvm::zip(shapeOf(value), dims)) {
      if (loop == kWhole ||
          loop >= static_cast<int64_t>(option.shardingArray.size()))
        continue;
      int64_t devices =
          collectiveProcessGroupSize(option.shardingArray[loop], grid);
      if (devices > 0 && extent % devices != 0)
        return false;
    }
    return true;
  };
  for (auto [value, dims] : llvm::zip(operands, rule.operands))
    if (!divides(value, dims))
      return false;
  for (auto [value, dims] : llvm::zip(results, rule.results))
    if (!divides(value, dims))
      return false;
  return true;
}

Sharding shardingOf(MLIRContext *context, const ShardingOption &option,
                    ArrayRef<int64_t> dims) {
  SmallVector<SmallVector<GridAxis>> axes;
  for (int64_t loop : dims)
    axes.push_back(loop != kWhole && loop < static_cast<int64_t>(
                                                option.shardingArray.size())
                       ? option.shardingArray[loop]
                       : SmallVector<GridAxis>());
  removeTrailingEmptySubArray(axes);
  SmallVector<GridAxesAttr> attrs;
  for (ArrayRef<GridAxis> loopAxes : axes)
    attrs.push_back(GridAxesAttr::get(context, loopAxes));
  return Sharding::get(option.grid, attrs);
}

/// The per-device op of an unsplit contraction, or of any other op: the op
/// at its operands' shards, with its results' shard types.
void partitionInPlace(Operation *op, ArrayRef<Sharding> resultShardings,
                      IRMapping &partitionMap,
                      SymbolTableCollection &symbolTable, OpBuilder &builder) {
  Operation *local = builder.clone(*op, partitionMap);
  for (auto [result, sharding] :
       llvm::zip_equal(local->getResults(), resultShardings))
    if (sharding)
      result.setType(shardType(
          result.getType(),
          getGridOrNull(op, sharding.getGridAttr(), symbolTable), sharding));
  // A reshape's target shape is its result's.
  if (auto reshape = dyn_cast<ReshapeOp>(local))
    reshape.setShape(reshape.getResult().getType().getShape());
}

template <typename OpT>
struct RuleModel
    : public ShardingInterface::ExternalModel<RuleModel<OpT>, OpT> {
  static DimensionRule rule(Operation *op) { return ruleOf(cast<OpT>(op)); }

  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return rule(op).loops;
  }

  SmallVector<ReductionKind>
  getReductionLoopIteratorKinds(Operation *op) const {
    return SmallVector<ReductionKind>(
        llvm::count(rule(op).loops, utils::IteratorType::reduction),
        ReductionKind::Sum);
  }

  // The rules are dimension tables, not affine maps (see the file comment);
  // the engine below never asks for maps.
  SmallVector<AffineMap> getIndexingMaps(Operation *) const { return {}; }

  FailureOr<ShardingOption>
  getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                    ArrayRef<Sharding> resultShardings) const {
    DimensionRule opRule = rule(op);
    bool any = false;
    FailureOr<ShardingOption> option =
        getLoopAxes(opRule, operandShardings, resultShardings,
                    /*strict=*/false, any);
    if (failed(option))
      return failure();
    if (!any)
      return ShardingOption::makeEmpty();
    SymbolTableCollection symbolTable;
    GridOp grid = getGridOrNull(op, option->grid, symbolTable);
    if (!grid || !dividesEvenly(opRule, *option, op->getOperands(),
                                op->getResults(), grid))
      return failure();
    removeTrailingEmptySubArray(option->shardingArray);
    return option;
  }

  FailureOr<std::vector<Sharding>>
  getShardingAnnotations(Operation *op, const ShardingOption &option) const {
    DimensionRule opRule = rule(op);
    std::vector<Sharding> shardings;
    for (auto dims : opRule.operands)
      shardings.push_back(shardingOf(op->getContext(), option, dims));
    for (auto dims : opRule.results)
      shardings.push_back(shardingOf(op->getContext(), option, dims));
    return shardings;
  }

  LogicalResult addShardingAnnotations(Operation *op, OpBuilder &builder,
                                       const ShardingOption &option) const {
    FailureOr<std::vector<Sharding>> shardings =
        getShardingAnnotations(op, option);
    if (failed(shardings))
      return failure();
    unsigned numOperands = op->getNumOperands();
    for (OpResult result : op->getResults())
      maybeInsertTargetShardingAnnotation(
          (*shardings)[numOperands + result.getResultNumber()], result,
          builder);
    for (OpOperand &operand : op->getOpOperands()) {
      OpBuilder::InsertionGuard guard(builder);
      maybeInsertSourceShardingAnnotation(
          (*shardings)[operand.getOperandNumber()], operand, builder);
    }
    return success();
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings,
                          ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    DimensionRule opRule = rule(op);
    bool any = false;
    FailureOr<ShardingOption> option =
        getLoopAxes(opRule, operandShardings, resultShardings,
                    /*strict=*/true, any);
    if (failed(option))
      return op->emitOpError()
             << "cannot be partitioned with these shardings of its operands "
                "and results";
    if (any) {
      GridOp grid = getGridOrNull(op, option->grid, symbolTable);
      if (!grid || !dividesEvenly(opRule, *option, op->getOperands(),
                                  op->getResults(), grid))
        return op->emitOpError()
               << "has a split dimension that does not divide evenly over "
                  "the grid";
    }
    SmallVector<GridAxis> reductionAxes;
    for (auto [type, axes] : llvm::zip(opRule.loops, option->shardingArray))
      if (type == utils::IteratorType::reduction)
        llvm::append_range(reductionAxes, axes);
    if (reductionAxes.empty()) {
      partitionInPlace(op, resultShardings, partitionMap, symbolTable, builder);
      return success();
    }
    auto matmul = dyn_cast<MatmulOp>(op);
    if (!matmul)
      return op->emitOpError() << "cannot split its reduction";
    return partitionSplitContraction(matmul, partitionedOperands,
                                     resultShardings[0], reductionAxes,
                                     partitionMap, symbolTable, builder);
  }

  /// Each device multiplies its slice of K; shard.all_reduce sums the
  /// partial products, and the bias is added once, after the sum.
  static LogicalResult partitionSplitContraction(
      MatmulOp op, ArrayRef<Value> partitionedOperands,
      const Sharding &resultSharding, ArrayRef<GridAxis> reductionAxes,
      IRMapping &partitionMap, SymbolTableCollection &symbolTable,
      OpBuilder &builder) {
    GridOp grid = getGridOrNull(op, resultSharding.getGridAttr(), symbolTable);
    if (!grid)
      return op.emitOpError() << "has no grid for its result";
    IRMapping localMap;
    for (auto [operand, local] :
         llvm::zip_equal(op->getOperands(), partitionedOperands))
      localMap.map(operand, local);
    auto local = cast<MatmulOp>(builder.clone(*op, localMap));
    local.getBiasMutable().clear();
    Value result = local.getResult();
    result.setType(shardType(result.getType(), grid, resultSharding));
    Value sum = shard::AllReduceOp::create(builder, op.getLoc(), result,
                                           grid.getSymName(), reductionAxes,
                                           ReductionKind::Sum);
    if (op.getBias()) {
      auto add =
          AddOp::create(builder, op.getLoc(), sum, partitionedOperands.back());
      add->setDiscardableAttrs(op->getDiscardableAttrDictionary());
      sum = add.getResult();
    }
    partitionMap.map(op.getResult(), sum);
    return success();
  }
};

template <typename... OpTs> void attachRules(MLIRContext *context) {
  (OpTs::template attachInterface<RuleModel<OpTs>>(*context), ...);
}

} // namespace

void memwall::registerShardingInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, MemWallDialect *) {
    context->getOrLoadDialect<shard::ShardDialect>();
    attachRules<AddOp, SubOp, MulOp, DivOp, ScaleOp, GeluOp, SiluOp, SigmoidOp,
                ReluOp, TanhOp, SwigluOp, CastOp, DequantizeOp, MatmulOp,
                LayerNormOp, RmsNormOp, SoftmaxOp, TransposeOp, ReshapeOp,
                AttentionOp, RopeOp, EmbeddingOp, SliceOp, KVCacheAppendOp>(
        context);
  });
}
