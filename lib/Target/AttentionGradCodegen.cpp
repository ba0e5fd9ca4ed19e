//===- AttentionGradCodegen.cpp - attention's backward kernel -------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "AttentionGradCodegen.h"
#include "AttentionCodegen.h"
#include "KernelBuilding.h"

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Transforms/TileAttention.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace memwall;

namespace {
int64_t ceilDiv(int64_t x, int64_t y) { return (x + y - 1) / y; }

/// Shared memory holds four tiles of `tile` rows in f32 and two score
/// tiles: within 40 KiB of the 48 KiB a kernel may hold statically.
int64_t chooseTile(int64_t headDim, int64_t valueDim) {
  for (int64_t tile : {32, 16}) {
    int64_t bytes =
        4 * (2 * tile * (headDim + valueDim) + 2 * tile * tile + 2 * tile);
    if (bytes <= 40 * 1024)
      return tile;
  }
  return 0;
}

enum Operand { Q = 0, K = 1, V = 2, Out = 3, DOut = 4 };

class AttentionGradBuilder : public IndexArithmetic {
public:
  AttentionGradBuilder(gpu::GPUModuleOp gpuModule,
                       const AttentionGradViews &views,
                       const AttentionGradKernelPlan &plan)
      : IndexArithmetic(b), grad(views.grad),
        b(grad.getLoc(), gpuModule.getContext()), views(views), plan(plan) {
    b.setInsertionPointToEnd(gpuModule.getBody());
  }

  void build(StringRef name) {
    int64_t t = plan.tile, dh = plan.headDim, dv = plan.valueDim;
    SmallVector<Type> workgroup;
    for (int64_t elements :
         {t * dh, t * dv, t * dh, t * dv, t * t, t * t, t, t})
      workgroup.push_back(
          MemRefType::get({elements}, b.getF32Type(), AffineMap(),
                          gpu::AddressSpaceAttr::get(
                              b.getContext(), gpu::AddressSpace::Workgroup)));
    AttentionGradParams params;
    gpu::GPUFuncOp func =
        createAttentionGradKernel(b, name, views, plan, workgroup, params);
    memrefs = std::move(params.memrefs);
    lse = params.lse;
    mask = params.mask;
    ArrayRef<BlockArgument> tiles = func.getWorkgroupAttributions();
    qTile = tiles[0];
    doTile = tiles[1];
    kTile = tiles[2];
    vTile = tiles[3];
    pTile = tiles[4];
    dsTile = tiles[5];
    lseTile = tiles[6];
    rowDot = tiles[7];

    threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    buildAttentionGradBlocks(
        b, plan, batch, kvHead, [&](Value keyTile) { buildKeyBlock(keyTile); },
        [&](Value block) { buildQueryBlock(block); });
  }

private:
  Value f32(double value) { return f32Constant(b, value); }
  Value sub(Value x, int64_t c) { return arith::SubIOp::create(b, x, idx(c)); }
  Value negativeInfinity() {
    return f32(-std::numeric_limits<double>::infinity());
  }
  Value toF32(Value x) {
    return x.getType().isF32()
               ? x
               : Value(arith::ExtFOp::create(b, b.getF32Type(), x));
  }
  Value loadShared(Value tile, Value at) {
    return memref::LoadOp::create(b, tile, ValueRange{at});
  }

  /// Runs `body` only where `condition` holds (always when it is null).
  void guarded(Value condition, function_ref<void()> body) {
    buildGuarded(b, condition, body);
  }

  /// A loop from `lower` to `upper` (the same in every thread of the
  /// block) carrying `init`.
  SmallVector<Value>
  loop(Value lower, Value upper, ValueRange init,
       function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return buildLoop(b, lower, upper, init, body);
  }

  /// Σ_c x[xBase + c] · y[yBase + c] over `length` elements of two tiles.
  Value dot(Value x, Value xBase, Value y, Value yBase, int64_t length,
            int64_t xStep = 1, int64_t yStep = 1) {
    return loop(idx(0), idx(length), {f32(0.0)},
                [&](Value c, ValueRange acc) -> SmallVector<Value> {
                  Value product = arith::MulFOp::create(
                      b, loadShared(x, add(xBase, mul(c, xStep))),
                      loadShared(y, add(yBase, mul(c, yStep))));
                  return {arith::AddFOp::create(b, acc[0], product)};
                })
        .front();
  }

  /// The element index of (batch, head, row, column) of operand `which`
  /// in its source buffer.
  Value operandIndex(int which, Value head, Value row, Value column) {
    return layoutIndex(views.operands[which], head, row, column);
  }
  Value layoutIndex(const StridedLayout &layout, Value head, Value row,
                    Value column) {
    Value at = add(idx(layout.offset), mul(batch, layout.strides[0]));
    at = add(at, mul(head, layout.strides[1]));
    at = add(at, mul(row, layout.strides[2]));
    return add(at, mul(column, layout.strides[3]));
  }

  /// Loads rows [rowStart, rowStart + tile) of `which` (head `head`, `dim`
  /// columns) into `tile` as f32, rows past `rows` as zeros.
  void loadTile(Value tile, int which, Value head, Value rowStart, int64_t rows,
                int64_t dim) {
    int64_t elements = plan.tile * dim;
    Value source = memrefs.lookup(views.sources[which]);
    loop(idx(0), idx(ceilDiv(elements, plan.threads)), {},
         [&](Value u, ValueRange) {
           Value e = add(mul(u, plan.threads), threadId);
           Value inTile = less(e, elements);
           Value row = add(rowStart, div(e, dim));
           Value valid = arith::AndIOp::create(b, inTile, less(row, rows));
           Value safeRow = arith::SelectOp::create(b, valid, row, idx(0));
           Value value = toF32(memref::LoadOp::create(
               b, source,
               ValueRange{operandIndex(which, head, safeRow, rem(e, dim))}));
           value = arith::SelectOp::create(b, valid, value, f32(0.0));
           guarded(inTile, [&] {
             memref::StoreOp::create(b, value, tile, ValueRange{e});
           });
           return SmallVector<Value>{};
         });
  }

  /// The query rows' tiles of head `head` from row i0: Q, dO, each row's
  /// log-sum-exp (-inf past the sequence) and D = rowsum(dO ∘ O). Ends with
  /// a barrier.
  void loadQueryRows(Value head, Value i0) {
    loadTile(qTile, Q, head, i0, plan.querySeq, plan.headDim);
    loadTile(doTile, DOut, head, i0, plan.querySeq, plan.valueDim);
    gpu::BarrierOp::create(b);
    guarded(less(threadId, plan.tile), [&] {
      Value row = add(i0, threadId);
      Value valid = less(row, plan.querySeq);
      Value safeRow = arith::SelectOp::create(b, valid, row, idx(0));
      Value lseIndex = add(
          mul(add(mul(batch, plan.queryHeads), head), plan.querySeq), safeRow);
      Value l = memref::LoadOp::create(b, lse, ValueRange{lseIndex});
      memref::StoreOp::create(
          b, arith::SelectOp::create(b, valid, l, negativeInfinity()), lseTile,
          ValueRange{threadId});
      Value out = memrefs.lookup(views.sources[Out]);
      Value d =
          loop(idx(0), idx(plan.valueDim), {f32(0.0)},
               [&](Value c, ValueRange acc) -> SmallVector<Value> {
                 Value o = toF32(memref::LoadOp::create(
                     b, out, ValueRange{operandIndex(Out, head, safeRow, c)}));
                 Value g =
                     loadShared(doTile, add(mul(threadId, plan.valueDim), c));
                 return {arith::AddFOp::create(b, acc[0],
                                               arith::MulFOp::create(b, o, g))};
               })
              .front();
      memref::StoreOp::create(b, d, rowDot, ValueRange{threadId});
    });
    gpu::BarrierOp::create(b);
  }

  /// Every (query row, key) pair of the tiles from rows i0 and keys j0 of
  /// query head `head`: P (when `storeP`) and dS = P∘(dO·Vᵀ − D) into shared
  /// memory, P = exp(scale·q·k + mask − lse), 0 where the pair is masked or
  /// out of range. Ends with a barrier.
  void buildScores(Value head, Value i0, Value j0, bool storeP) {
    int64_t t = plan.tile, pairs = t * t;
    double scale = grad.getScale().convertToDouble();
    loop(idx(0), idx(ceilDiv(pairs, plan.threads)), {},
         [&](Value u, ValueRange) {
           Value e = add(mul(u, plan.threads), threadId);
           Value inTile = less(e, pairs);
           Value safeE = arith::SelectOp::create(b, inTile, e, idx(0));
           Value i = div(safeE, t), j = rem(safeE, t);
           Value qi = add(i0, i), kj = add(j0, j);
           Value visible = arith::AndIOp::create(b, less(qi, plan.querySeq),
                                                 less(kj, plan.keySeq));
           if (plan.causal)
             visible = arith::AndIOp::create(b, visible,
                                             buildSeenByMask(b, plan, kj, qi));
           Value rowLse = loadShared(lseTile, i);
           visible = arith::AndIOp::create(
               b, visible,
               // A row that saw no key (lse -inf) has P = 0; a NaN stays.
               arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, rowLse,
                                     negativeInfinity()));
           Value s = dot(qTile, mul(i, plan.headDim), kTile,
                         mul(j, plan.headDim), plan.headDim);
           s = arith::MulFOp::create(b, s, f32(scale));
           if (mask) {
             // The mask applies in log2 units; padded pairs read a valid
             // element (not visible).
             BroadcastMask broadcast(
                 cast<RankedTensorType>(grad.getMask().getType()));
             s = arith::MulFOp::create(
                 b,
                 broadcast.apply(
                     b, mask, arith::MulFOp::create(b, s, f32(M_LOG2E)), batch,
                     head,
                     arith::MinUIOp::create(b, qi, idx(plan.querySeq - 1)),
                     arith::MinUIOp::create(b, kj, idx(plan.keySeq - 1))),
                 f32(M_LN2));
           }
           Value p =
               math::ExpOp::create(b, arith::SubFOp::create(b, s, rowLse));
           p = arith::SelectOp::create(b, visible, p, f32(0.0));
           Value dp = dot(doTile, mul(i, plan.valueDim), vTile,
                          mul(j, plan.valueDim), plan.valueDim);
           Value ds = arith::MulFOp::create(
               b, p, arith::SubFOp::create(b, dp, loadShared(rowDot, i)));
           guarded(inTile, [&] {
             if (storeP)
               memref::StoreOp::create(b, p, pTile, ValueRange{e});
             memref::StoreOp::create(b, ds, dsTile, ValueRange{e});
           });
           return SmallVector<Value>{};
         });
    gpu::BarrierOp::create(b);
  }

  /// Thread `tid`'s entries of a [tile, dim] accumulator: entry u is
  /// element tid + u·threads.
  int64_t entries(int64_t dim) const {
    return ceilDiv(plan.tile * dim, plan.threads);
  }

  /// Stores `acc` · `factor` (a [tile, dim] accumulator) as rows from
  /// `rowStart` of gradient `which` (0 dq, 1 dk, 2 dv) of head `head`.
  void storeGradient(int which, ArrayRef<Value> acc, int64_t dim, Value head,
                     Value rowStart, int64_t rows, double factor) {
    Value output = memrefs.lookup(views.outputs[which]);
    Type element = cast<MemRefType>(output.getType()).getElementType();
    for (auto [u, value] : llvm::enumerate(acc)) {
      Value e = add(threadId, static_cast<int64_t>(u) * plan.threads);
      Value row = add(rowStart, div(e, dim));
      Value valid =
          arith::AndIOp::create(b, less(e, plan.tile * dim), less(row, rows));
      guarded(valid, [&] {
        Value v = arith::MulFOp::create(b, value, f32(factor));
        if (!element.isF32())
          v = arith::TruncFOp::create(b, element, v);
        memref::StoreOp::create(
            b, v, output,
            ValueRange{layoutIndex(views.outputLayouts[which], head, row,
                                   rem(e, dim))});
      });
    }
  }

  /// A key block: dK and dV of keys [j0, j0 + tile) of the KV head, summed
  /// over every query tile of its query heads in order.
  void buildKeyBlock(Value keyTile) {
    Value j0 = mul(keyTile, plan.tile);
    int64_t group = plan.queryHeads / plan.kvHeads;
    int64_t kEntries = entries(plan.headDim), vEntries = entries(plan.valueDim);
    loadTile(kTile, K, kvHead, j0, plan.keySeq, plan.headDim);
    loadTile(vTile, V, kvHead, j0, plan.keySeq, plan.valueDim);
    SmallVector<Value> init(kEntries + vEntries, f32(0.0));
    // The query tiles that see this key tile are the same for every head.
    auto [firstTile, endTile] = buildQueryTilesSeeing(b, plan, j0);
    SmallVector<Value> sums =
        loop(idx(0), idx(group), init, [&](Value g, ValueRange perHead) {
          Value head = add(mul(kvHead, group), g);
          return loop(firstTile, endTile, perHead,
                      [&](Value queryTile, ValueRange acc) {
                        Value i0 = mul(queryTile, plan.tile);
                        loadQueryRows(head, i0);
                        buildScores(head, i0, j0, /*storeP=*/true);
                        SmallVector<Value> next(acc.begin(), acc.end());
                        // dK_j += Σ_i dS_ij Q_i; dV_j += Σ_i P_ij dO_i.
                        for (int64_t u = 0; u < kEntries + vEntries; ++u) {
                          bool isK = u < kEntries;
                          int64_t dim = isK ? plan.headDim : plan.valueDim;
                          Value e = add(threadId, (isK ? u : u - kEntries) *
                                                      plan.threads);
                          Value safeE = arith::MinUIOp::create(
                              b, e, idx(plan.tile * dim - 1));
                          Value j = div(safeE, dim), c = rem(safeE, dim);
                          Value sum = dot(isK ? dsTile : pTile, j,
                                          isK ? qTile : doTile, c, plan.tile,
                                          /*xStep=*/plan.tile, /*yStep=*/dim);
                          next[u] = arith::AddFOp::create(b, next[u], sum);
                        }
                        // The tiles are reloaded by the next query tile.
                        gpu::BarrierOp::create(b);
                        return next;
                      });
        });
    double scale = grad.getScale().convertToDouble();
    storeGradient(1, ArrayRef<Value>(sums).take_front(kEntries), plan.headDim,
                  kvHead, j0, plan.keySeq, scale);
    storeGradient(2, ArrayRef<Value>(sums).drop_front(kEntries), plan.valueDim,
                  kvHead, j0, plan.keySeq, 1.0);
  }

  /// A query block: dQ of rows [i0, i0 + tile) of one query head, summed
  /// over the key tiles it sees in order.
  void buildQueryBlock(Value block) {
    int64_t group = plan.queryHeads / plan.kvHeads;
    Value head = add(mul(kvHead, group), div(block, plan.queryTiles));
    Value i0 = mul(rem(block, plan.queryTiles), plan.tile);
    int64_t qEntries = entries(plan.headDim);
    loadQueryRows(head, i0);
    SmallVector<Value> init(qEntries, f32(0.0));
    auto [firstTile, endTile] = buildKeyTilesSeen(b, plan, i0);
    SmallVector<Value> sums =
        loop(firstTile, endTile, init, [&](Value keyTile, ValueRange acc) {
          Value j0 = mul(keyTile, plan.tile);
          loadTile(kTile, K, kvHead, j0, plan.keySeq, plan.headDim);
          loadTile(vTile, V, kvHead, j0, plan.keySeq, plan.valueDim);
          gpu::BarrierOp::create(b);
          buildScores(head, i0, j0, /*storeP=*/false);
          SmallVector<Value> next(acc.begin(), acc.end());
          // dQ_i += Σ_j dS_ij K_j.
          for (int64_t u = 0; u < qEntries; ++u) {
            Value e = add(threadId, u * plan.threads);
            Value safeE =
                arith::MinUIOp::create(b, e, idx(plan.tile * plan.headDim - 1));
            Value i = div(safeE, plan.headDim), c = rem(safeE, plan.headDim);
            Value sum = dot(dsTile, mul(i, plan.tile), kTile, c, plan.tile,
                            /*xStep=*/1, /*yStep=*/plan.headDim);
            next[u] = arith::AddFOp::create(b, next[u], sum);
          }
          // The key tiles are reloaded by the next iteration.
          gpu::BarrierOp::create(b);
          return next;
        });
    storeGradient(0, sums, plan.headDim, head, i0, plan.querySeq,
                  grad.getScale().convertToDouble());
  }

  /// A copy of views.grad (op accessors are not const).
  FlashAttentionGradOp grad;
  ImplicitLocOpBuilder b;
  const AttentionGradViews &views;
  const AttentionGradKernelPlan &plan;
  DenseMap<Value, Value> memrefs;
  Value lse, mask, qTile, doTile, kTile, vTile, pTile, dsTile, lseTile, rowDot;
  Value threadId, batch, kvHead;
};
} // namespace

/// Whether the tensor-core form runs `op`: q, k and v of one 16-bit type,
/// head dims the forward's kernel takes.
static bool runsOnTensorCores(FlashAttentionGradOp op) {
  Type element = op.getQuery().getType().getElementType();
  return op.getKey().getType().getElementType() == element &&
         op.getValue().getType().getElementType() == element &&
         whyAttentionKernelCannotRun(element,
                                     op.getQuery().getType().getShape()[3],
                                     op.getValue().getType().getShape()[3])
             .empty();
}

std::string memwall::whyNoAttentionGradKernel(FlashAttentionGradOp op) {
  auto q = op.getQuery().getType(), k = op.getKey().getType(),
       v = op.getValue().getType();
  int64_t headDim = q.getShape()[3], valueDim = v.getShape()[3];
  if (runsOnTensorCores(op))
    return q.getNumElements() == 0 || k.getNumElements() == 0
               ? "empty tensors run no generated kernel"
               : "";
  if (headDim % 8 != 0 || valueDim % 8 != 0)
    return "head dims that are not multiples of 8 (got " +
           std::to_string(headDim) + " and " + std::to_string(valueDim) + ")";
  if (chooseTile(headDim, valueDim) == 0)
    return "head dims of " + std::to_string(headDim) + " and " +
           std::to_string(valueDim) +
           " (its tiles must fit in 40 KiB of shared memory)";
  if (q.getNumElements() == 0 || k.getNumElements() == 0)
    return "empty tensors run no generated kernel";
  return "";
}

AttentionGradKernelPlan
memwall::planAttentionGradKernel(FlashAttentionGradOp op) {
  AttentionGradKernelPlan plan;
  ArrayRef<int64_t> q = op.getQuery().getType().getShape();
  ArrayRef<int64_t> k = op.getKey().getType().getShape();
  plan.batch = q[0];
  plan.queryHeads = q[1];
  plan.querySeq = q[2];
  plan.headDim = q[3];
  plan.kvHeads = k[1];
  plan.keySeq = k[2];
  plan.valueDim = op.getValue().getType().getShape()[3];
  plan.tensorCores = runsOnTensorCores(op);
  plan.causal = op.getCausal();
  plan.window = static_cast<int64_t>(op.getWindow().value_or(0));
  if (plan.tensorCores) {
    // 16 rows a warp; wider heads take half the rows (the accumulators of
    // dK and dV stay in registers).
    plan.tile = std::max(plan.headDim, plan.valueDim) <= 64 ? 64 : 32;
    plan.threads = 2 * plan.tile;
    // Q, K, V, O and dO tiles of 16-bit rows padded by 8 elements, and two
    // f32 row statistics.
    plan.sharedBytes =
        plan.tile * 2 * (2 * (plan.headDim + 8) + 3 * (plan.valueDim + 8)) +
        2 * plan.tile * 4;
  } else {
    plan.tile = chooseTile(plan.headDim, plan.valueDim);
  }
  plan.queryTiles = ceilDiv(plan.querySeq, plan.tile);
  plan.keyTiles = ceilDiv(plan.keySeq, plan.tile);
  plan.grid = {plan.keyTiles + plan.queryHeads / plan.kvHeads * plan.queryTiles,
               plan.batch * plan.kvHeads, 1};
  return plan;
}

double memwall::predictAttentionGradKernelSeconds(FlashAttentionGradOp op,
                                                  const GPUTarget &target) {
  KernelWork work =
      cast<CostOpInterface>(op.getOperation()).getKernelWork(target);
  if (runsOnTensorCores(op)) {
    double d = op.getQuery().getType().getShape()[3],
           dv = op.getValue().getType().getShape()[3];
    work.flops *= (6 * d + 4 * dv) / (3 * d + 2 * dv);
    return estimateKernelTime(work, target).timeSeconds;
  }
  work.unit = ComputeUnit::CudaCores;
  work.precision = MathPrecision::FP32;
  return estimateKernelTime(work, target).timeSeconds;
}

/// `values` without repeats, first occurrence first.
template <unsigned N, size_t M>
static SmallVector<Value, N> distinct(const std::array<Value, M> &values) {
  SmallVector<Value, N> unique;
  for (Value value : values)
    if (!llvm::is_contained(unique, value))
      unique.push_back(value);
  return unique;
}

SmallVector<Value, 5>
memwall::getAttentionGradSources(const AttentionGradViews &views) {
  return distinct<5>(views.sources);
}

SmallVector<Value, 3>
memwall::getAttentionGradOutputs(const AttentionGradViews &views) {
  return distinct<3>(views.outputs);
}

gpu::GPUFuncOp memwall::createAttentionGradKernel(
    ImplicitLocOpBuilder &b, StringRef name, const AttentionGradViews &views,
    const AttentionGradKernelPlan &plan, TypeRange workgroup,
    AttentionGradParams &params) {
  FlashAttentionGradOp grad = views.grad;
  SmallVector<Value, 5> sources = getAttentionGradSources(views);
  SmallVector<Value, 3> outputs = getAttentionGradOutputs(views);
  SmallVector<Type> types;
  for (Value source : sources)
    types.push_back(flatMemRefType(source));
  types.push_back(flatMemRefType(grad.getLse()));
  if (Value mask = grad.getMask())
    types.push_back(flatMemRefType(mask));
  for (Value output : outputs)
    types.push_back(flatMemRefType(output));
  gpu::GPUFuncOp func = createKernel(b, name, types, plan.threads, workgroup);
  unsigned arg = 0;
  for (Value source : sources)
    params.memrefs[source] = func.getArgument(arg++);
  params.lse = func.getArgument(arg++);
  if (grad.getMask())
    params.mask = func.getArgument(arg++);
  for (Value output : outputs)
    params.memrefs[output] = func.getArgument(arg++);
  return func;
}

/// max(0, x - y) in index math (x, y >= 0), without going below zero.
static Value positivePart(ImplicitLocOpBuilder &b, Value x, int64_t y) {
  Value bound = indexConstant(b, y);
  Value past = arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, x, bound);
  return arith::SelectOp::create(b, past, arith::SubIOp::create(b, x, bound),
                                 indexConstant(b, 0));
}

/// max(0, x - y) / tile.
static Value tilesBefore(ImplicitLocOpBuilder &b, Value x, int64_t y,
                         int64_t tile) {
  return arith::DivUIOp::create(b, positivePart(b, x, y),
                                indexConstant(b, tile));
}

/// ceil(min(max(0, x - y), cap) / tile).
static Value tilesUpTo(ImplicitLocOpBuilder &b, Value x, int64_t y, int64_t cap,
                       int64_t tile) {
  Value count =
      arith::MinUIOp::create(b, positivePart(b, x, y), indexConstant(b, cap));
  return arith::DivUIOp::create(
      b, arith::AddIOp::create(b, count, indexConstant(b, tile - 1)),
      indexConstant(b, tile));
}

std::pair<Value, Value>
memwall::buildQueryTilesSeeing(ImplicitLocOpBuilder &b,
                               const AttentionGradKernelPlan &plan, Value j0) {
  auto idx = [&](int64_t c) { return indexConstant(b, c); };
  if (!plan.causal)
    return {idx(0), idx(plan.queryTiles)};
  // Queries i >= j0 - (Sk - Sq): max(0, j0 + Sq - Sk) / tile.
  Value begin = tilesBefore(b, arith::AddIOp::create(b, j0, idx(plan.querySeq)),
                            plan.keySeq, plan.tile);
  Value end = idx(plan.queryTiles);
  if (plan.window) {
    // Queries i < j0 + tile - 1 + W - (Sk - Sq), the block's last key still
    // in their window.
    Value last = arith::AddIOp::create(
        b, j0, idx(plan.tile - 1 + plan.window + plan.querySeq));
    end = tilesUpTo(b, last, plan.keySeq, plan.querySeq, plan.tile);
    begin = arith::MinUIOp::create(b, begin, end);
  }
  return {begin, end};
}

std::pair<Value, Value>
memwall::buildKeyTilesSeen(ImplicitLocOpBuilder &b,
                           const AttentionGradKernelPlan &plan, Value i0) {
  auto idx = [&](int64_t c) { return indexConstant(b, c); };
  if (!plan.causal)
    return {idx(0), idx(plan.keyTiles)};
  // Keys up to i0 + tile - 1 + Sk - Sq.
  Value end =
      tilesUpTo(b, arith::AddIOp::create(b, i0, idx(plan.tile + plan.keySeq)),
                plan.querySeq, plan.keySeq, plan.tile);
  Value begin = idx(0);
  if (plan.window) {
    // Keys from i0 + Sk - Sq - W + 1, the first query's window.
    begin = tilesBefore(b, arith::AddIOp::create(b, i0, idx(plan.keySeq + 1)),
                        plan.querySeq + plan.window, plan.tile);
    begin = arith::MinUIOp::create(b, begin, end);
  }
  return {begin, end};
}

Value memwall::buildSeenByMask(ImplicitLocOpBuilder &b,
                               const AttentionGradKernelPlan &plan, Value key,
                               Value query) {
  auto idx = [&](int64_t c) { return indexConstant(b, c); };
  if (!plan.causal)
    return arith::ConstantIntOp::create(b, 1, 1);
  // Key j is visible to query i when j <= i + (Sk - Sq) ...
  Value queryEnd = arith::AddIOp::create(b, query, idx(plan.keySeq));
  Value seen = arith::CmpIOp::create(
      b, arith::CmpIPredicate::ule,
      arith::AddIOp::create(b, key, idx(plan.querySeq)), queryEnd);
  if (!plan.window)
    return seen;
  // ... and, with a window, i + (Sk - Sq) - W < j.
  Value inWindow = arith::CmpIOp::create(
      b, arith::CmpIPredicate::ult, queryEnd,
      arith::AddIOp::create(b, key, idx(plan.querySeq + plan.window)));
  return arith::AndIOp::create(b, seen, inWindow);
}

void memwall::buildAttentionGradBlocks(ImplicitLocOpBuilder &b,
                                       const AttentionGradKernelPlan &plan,
                                       Value &batch, Value &kvHead,
                                       function_ref<void(Value)> keyBlock,
                                       function_ref<void(Value)> queryBlock) {
  auto idx = [&](int64_t c) { return indexConstant(b, c); };
  Value blockX = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value blockY = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  batch = arith::DivUIOp::create(b, blockY, idx(plan.kvHeads));
  kvHead = arith::RemUIOp::create(b, blockY, idx(plan.kvHeads));
  auto isKeyBlock = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, blockX,
                                          idx(plan.keyTiles));
  auto branch = scf::IfOp::create(b, isKeyBlock, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    keyBlock(blockX);
    b.setInsertionPointToStart(branch.elseBlock());
    queryBlock(arith::SubIOp::create(b, blockX, idx(plan.keyTiles)));
  }
  gpu::ReturnOp::create(b);
}

void memwall::emitAttentionGradKernel(gpu::GPUModuleOp gpuModule,
                                      StringRef name,
                                      const AttentionGradViews &views,
                                      const AttentionGradKernelPlan &plan) {
  if (plan.tensorCores)
    return emitAttentionGradMmaKernel(gpuModule, name, views, plan);
  AttentionGradBuilder(gpuModule, views, plan).build(name);
}
